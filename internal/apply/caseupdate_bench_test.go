package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkCaseUpdate asks whether a run of key-keeping updates costs the
// target less as one UPDATE whose assignments pick each row's value by its
// key (SET c=CASE id WHEN 1 THEN .. END WHERE id IN (..)) than as the
// upsert run rowsql sends (INSERT .. ON DUPLICATE KEY UPDATE c=VALUES(c),
// which tries an insert of every row, finds the duplicate and reads the
// row again before updating it). Two tables: order entry's stock
// (composite key, 7 columns, 4 changed) and the docs workload's documents
// (a 10 KB JSON body, version and time changed). Runs of 10 and 40 rows,
// 40 and 8 statements a transaction; the forms take turns transaction by
// transaction through 5 rounds; the target's CPU from schedstat, per row,
// median round.
//
//	go test -run '^$' -bench CaseUpdate -benchtime 1x ./internal/apply
//
// MariaDB 10.11, 2026-11-30 (a slow phase of the machine), target-CPU-µs
// per row, median of 5 rounds:
//
//	                 upsert (what rowsql sends)   case-update
//	stock, run 10    12.2                         17.9
//	stock, run 40     9.6                         17.0
//	doc, run 10     102.8                         95.0
//	doc, run 40      90.2                         86.6
//
// The upsert's failed insert and second lookup cost less than the CASE:
// a composite key repeats its conditions in every assignment and the WHERE,
// and the server compares each row with the WHENs in turn. On documents
// the 10 KB value dominates either way (4-8% less for the CASE, within
// the rounds' spread). So runs of updates stay upserts.
func BenchmarkCaseUpdate(b *testing.B) {
	s, conn := benchTarget(b, append(docTable(4000), stockTable()...)...)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	keys := func(n, limit int) []int { return distinctKeys(rng, n, limit) }
	type row struct {
		key  int
		vals []string
	}
	type shape struct {
		name    string
		limit   int
		all     []string // every column, key first
		changed []int    // indexes into all of the columns an update changes
		keyOf   func(k int) []string
		keyCols []string
		values  func(k int) []string // every column's literal
	}
	stock := shape{name: "stock", limit: 100000,
		all:     []string{"w_id", "i_id", "quantity", "ytd", "order_cnt", "remote_cnt", "dist_info"},
		changed: []int{2, 3, 4, 5}, keyCols: []string{"w_id", "i_id"},
		keyOf: func(k int) []string { return []string{fmt.Sprint(1 + k%10), fmt.Sprint(k)} },
		values: func(k int) []string {
			return []string{fmt.Sprint(1 + k%10), fmt.Sprint(k), fmt.Sprint(rng.IntN(100)), fmt.Sprint(rng.IntN(1000)),
				fmt.Sprint(rng.IntN(100)), fmt.Sprint(rng.IntN(10)), "'" + strings.Repeat("s", 24) + "'"}
		}}
	doc := shape{name: "doc", limit: 4000,
		all:     []string{"id", "customer_id", "kind", "version", "updated", "body"},
		changed: []int{3, 4, 5}, keyCols: []string{"id"},
		keyOf: func(k int) []string { return []string{fmt.Sprint(k)} },
		values: func(k int) []string {
			return []string{fmt.Sprint(k), fmt.Sprint(k % 1000), "'invoice'", fmt.Sprint(rng.IntN(1000)),
				"'2026-11-30 10:00:00.000000'", string(sqlquote.AppendEscaped(nil, "utf8mb4", wideDoc(k, 10000, false)))}
		}}
	upsert := func(sh shape, rows []row) string {
		var q strings.Builder
		fmt.Fprintf(&q, "INSERT INTO `d`.`%s` (`%s`) VALUES ", sh.name, strings.Join(sh.all, "`,`"))
		for i, r := range rows {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(" + strings.Join(r.vals, ",") + ")")
		}
		q.WriteString(" ON DUPLICATE KEY UPDATE ")
		for i, c := range sh.all[len(sh.keyCols):] {
			if i == 0 {
				fmt.Fprintf(&q, "`%s`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`%s`),NULL)", c, c)
				continue
			}
			fmt.Fprintf(&q, ",`%[1]s`=VALUES(`%[1]s`)", c)
		}
		fmt.Fprintf(&q, ";SET @binlane_bad=@binlane_bad+(@binlane_n<>%d),@binlane_n=0;", len(rows))
		return q.String()
	}
	cond := func(sh shape, r row) string {
		k := sh.keyOf(r.key)
		var parts []string
		for i, c := range sh.keyCols {
			parts = append(parts, "`"+c+"`="+k[i])
		}
		return strings.Join(parts, " AND ")
	}
	caseUpdate := func(sh shape, rows []row) string {
		var q strings.Builder
		fmt.Fprintf(&q, "UPDATE `d`.`%s` SET ", sh.name)
		for i, ci := range sh.changed {
			if i > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "`%s`=CASE", sh.all[ci])
			if len(sh.keyCols) == 1 {
				fmt.Fprintf(&q, " `%s`", sh.keyCols[0])
			}
			for _, r := range rows {
				if len(sh.keyCols) == 1 {
					fmt.Fprintf(&q, " WHEN %s THEN %s", sh.keyOf(r.key)[0], r.vals[ci])
				} else {
					fmt.Fprintf(&q, " WHEN %s THEN %s", cond(sh, r), r.vals[ci])
				}
			}
			q.WriteString(" END")
		}
		q.WriteString(" WHERE ")
		if len(sh.keyCols) == 1 {
			var ks []string
			for _, r := range rows {
				ks = append(ks, sh.keyOf(r.key)[0])
			}
			fmt.Fprintf(&q, "`%s` IN (%s)", sh.keyCols[0], strings.Join(ks, ","))
		} else {
			for i, r := range rows {
				if i > 0 {
					q.WriteString(" OR ")
				}
				q.WriteString("(" + cond(sh, r) + ")")
			}
		}
		fmt.Fprintf(&q, ";SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d);", len(rows))
		return q.String()
	}
	forms := []struct {
		name   string
		render func(shape, []row) string
	}{{"upsert", upsert}, {"case-update", caseUpdate}}
	const rounds = 5
	for _, sh := range []shape{stock, doc} {
		for _, run := range []int{10, 40} {
			stmts := 400 / run
			if sh.name == "doc" {
				stmts = 80 / run
			}
			perRow := make([][]float64, len(forms))
			for range rounds {
				total := make([]int64, len(forms))
				for range 10 {
					for fi, f := range forms {
						q := "START TRANSACTION;SET @binlane_bad=0,@binlane_n=0;"
						for range stmts {
							var rows []row
							for _, k := range keys(run, sh.limit) {
								rows = append(rows, row{key: k, vals: sh.values(k)})
							}
							q += f.render(sh, rows)
						}
						q += "COMMIT"
						before := threadsNS(b, s.PID())
						if _, err := conn.ExecContext(ctx, q); err != nil {
							b.Fatalf("%s %s: %v", sh.name, f.name, err)
						}
						for tid, ns := range threadsNS(b, s.PID()) {
							total[fi] += ns - before[tid]
						}
					}
				}
				for fi := range forms {
					perRow[fi] = append(perRow[fi], float64(total[fi])/1e3/float64(10*stmts*run))
				}
			}
			for fi, f := range forms {
				m := medianOf(perRow[fi])
				name := fmt.Sprintf("%s-run%d-%s", sh.name, run, f.name)
				fmt.Printf("%-28s target-µs/row by round %.1f  median %.1f\n", name, perRow[fi], m)
				b.ReportMetric(m, name+"-µs/row")
			}
		}
	}
}

// stockTable is the setup of order entry's stock table, d.stock: 100,000
// rows of a composite key.
func stockTable() []string {
	return []string{`CREATE TABLE d.stock (w_id INT NOT NULL, i_id INT NOT NULL, quantity SMALLINT NOT NULL, ytd INT NOT NULL,
			order_cnt INT NOT NULL, remote_cnt INT NOT NULL, dist_info CHAR(24) NOT NULL, PRIMARY KEY (w_id, i_id))`,
		"INSERT INTO d.stock SELECT 1 + seq % 10, seq, 50, 0, 0, 0, REPEAT('s', 24) FROM d.seq_1_to_100000"}
}

// distinctKeys draws n distinct row numbers from 1 to limit.
func distinctKeys(rng *rand.Rand, n, limit int) []int {
	seen := map[int]bool{}
	var out []int
	for len(out) < n {
		if k := 1 + rng.IntN(limit); !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
