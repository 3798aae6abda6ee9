package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkReplaceRuns asks whether the collapsed last images of rows that
// existed and changed cost the target less as a multi-row REPLACE than as
// the upsert rowsql sends (INSERT ... ON DUPLICATE KEY UPDATE c=VALUES(c)
// for every column, and the found-rows counter). For a table whose only
// unique key is its primary key, with no foreign key either way and no
// trigger (plan.Table.Collapsible), the server's REPLACE of a row whose key
// exists updates it in place (write_record), as the upsert does, without
// evaluating an assignment per column. Three tables: the docs workload's
// documents (a 10 KB JSON body), its 60-column profiles, and order entry's
// narrow stock rows; runs of 40 rows, the forms taking turns transaction
// by transaction (each going first every other time) through 5 rounds;
// the target's CPU from schedstat, per row, median round.
//
//	go test -run '^$' -bench ReplaceRuns -benchtime 1x ./internal/apply
//
// MariaDB 10.11, 2026-12-01, two runs, target-CPU-µs per row (median round;
// the connection's thread alone in brackets):
//
//	                 upsert (before)     replace
//	doc, run 40      72.5 (72.5)         67.2 (66.1)
//	                 72.6 (71.8)         67.9 (67.9)
//	profile, run 40  74.8 (66.0)         74.2 (65.2)
//	                 62.6 (62.6)         69.9 (63.1)
//	stock, run 40     7.0                 6.7
//	                  7.2                 7.0
//
// Before the forms alternated which went first, the second of each pair
// paid for the first one's purge: the document REPLACE looked 30% dearer
// and then, swapped, 40% cheaper. In the docs drain (pinned, one worker,
// 3 runs) the target's CPU per transaction fell from 67.3 to 61.8 µs.
func BenchmarkReplaceRuns(b *testing.B) {
	setup := append(docTable(4000),
		"CREATE TABLE d.profile (id INT PRIMARY KEY, "+strings.Join(profileDefs(), ", ")+")",
		"INSERT INTO d.profile SELECT seq, "+strings.Join(profileSeed(), ", ")+" FROM d.seq_1_to_5000")
	s, conn := benchTarget(b, append(setup, stockTable()...)...)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	var profileCols []string
	for _, d := range profileDefs() {
		profileCols = append(profileCols, strings.Fields(d)[0])
	}
	type shape struct {
		name    string
		limit   int
		cols    []string // key columns first
		keyCols int
		row     func(k int) string // "(v1,v2,...)", every column changed but the key
	}
	version := 1
	shapes := []shape{
		{name: "doc", limit: 4000, cols: []string{"id", "customer_id", "kind", "version", "updated", "body"}, keyCols: 1,
			row: func(k int) string {
				return fmt.Sprintf("(%d,%d,_binary'invoice',%d,'2026-12-01 07:00:00.%06d',%s)", k, k%1000, version, rng.IntN(1e6),
					sqlquote.AppendEscaped(nil, "binary", wideDoc(k+version, 10000, false)))
			}},
		{name: "profile", limit: 5000, cols: append([]string{"id"}, profileCols...), keyCols: 1,
			row: func(k int) string {
				v := []string{fmt.Sprint(k)}
				for c := 1; c <= 20; c++ {
					v = append(v, string(sqlquote.AppendEscaped(nil, "binary", []byte(strings.Repeat(string(rune('A'+(k+c+version)%26)), 100+(k*c)%100)))),
						fmt.Sprint(k*c+version))
				}
				for c := 1; c <= 10; c++ {
					v = append(v, fmt.Sprintf("%d.%04d", k, version%10000), fmt.Sprintf("'2026-12-01 07:%02d:%02d.%06d'", c, k%60, version))
				}
				return "(" + strings.Join(v, ",") + ")"
			}},
		{name: "stock", limit: 100000, cols: []string{"w_id", "i_id", "quantity", "ytd", "order_cnt", "remote_cnt", "dist_info"}, keyCols: 2,
			row: func(k int) string {
				return fmt.Sprintf("(%d,%d,%d,%d,%d,%d,_binary'%s')", 1+k%10, k, rng.IntN(100), version+rng.IntN(1000), version, rng.IntN(10),
					strings.Repeat("t", 24))
			}},
	}
	head := func(sh shape, verb string) string {
		return fmt.Sprintf("%s INTO `d`.`%s` (`%s`) VALUES ", verb, sh.name, strings.Join(sh.cols, "`,`"))
	}
	upsert := func(sh shape, rows []string) string {
		q := head(sh, "INSERT") + strings.Join(rows, ",") + " ON DUPLICATE KEY UPDATE "
		for i, c := range sh.cols[sh.keyCols:] {
			if i == 0 {
				q += fmt.Sprintf("`%s`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`%s`),NULL)", c, c)
				continue
			}
			q += fmt.Sprintf(",`%[1]s`=VALUES(`%[1]s`)", c)
		}
		return q + fmt.Sprintf(";SET @binlane_bad=@binlane_bad+(@binlane_n<>%d),@binlane_n=0;", len(rows))
	}
	replace := func(sh shape, rows []string) string {
		return head(sh, "REPLACE") + strings.Join(rows, ",") +
			fmt.Sprintf(";SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d);", 2*len(rows))
	}
	forms := []struct {
		name   string
		render func(shape, []string) string
	}{{"upsert", upsert}, {"replace", replace}}
	const rounds, run = 5, 40
	for _, sh := range shapes {
		stmts := 4
		if sh.name == "doc" {
			stmts = 2
		}
		perRow := make([][]float64, len(forms))
		connRow := make([][]float64, len(forms)) // the connection's thread alone: no purge
		for range rounds {
			total := make([]int64, len(forms))
			conn1 := make([]int64, len(forms))
			for it := range 10 {
				// Each form goes first every other time: the one that
				// follows pays for what the first left behind (the purge
				// of a document's old versions, dirty pages).
				for j := range forms {
					fi := (j + it) % len(forms)
					f := forms[fi]
					version++
					// Distinct rows across the transaction, as the collapser
					// writes them (a row written twice with one image would
					// count 1 in the second REPLACE).
					q := "START TRANSACTION;SET @binlane_bad=0,@binlane_n=0;"
					all := distinctKeys(rng, run*stmts, sh.limit)
					for i := range stmts {
						var rows []string
						for _, k := range all[i*run : (i+1)*run] {
							rows = append(rows, sh.row(k))
						}
						q += f.render(sh, rows)
					}
					q += "COMMIT"
					before := threadsNS(b, s.PID())
					if _, err := conn.ExecContext(ctx, q); err != nil {
						b.Fatalf("%s %s: %v", sh.name, f.name, err)
					}
					var busiest int64
					for tid, ns := range threadsNS(b, s.PID()) {
						total[fi] += ns - before[tid]
						busiest = max(busiest, ns-before[tid])
					}
					conn1[fi] += busiest
					var bad int
					if err := conn.QueryRowContext(ctx, "SELECT @binlane_bad").Scan(&bad); err != nil || bad != 0 {
						b.Fatalf("%s %s: %d statements counted other rows than they should have (%v)", sh.name, f.name, bad, err)
					}
				}
			}
			for fi := range forms {
				perRow[fi] = append(perRow[fi], float64(total[fi])/1e3/float64(10*stmts*run))
				connRow[fi] = append(connRow[fi], float64(conn1[fi])/1e3/float64(10*stmts*run))
			}
		}
		for fi, f := range forms {
			m := medianOf(perRow[fi])
			name := fmt.Sprintf("%s-run%d-%s", sh.name, run, f.name)
			fmt.Printf("%-28s target-µs/row by round %.1f  median %.1f; the connection's thread %.1f  median %.1f\n",
				name, perRow[fi], m, connRow[fi], medianOf(connRow[fi]))
			b.ReportMetric(m, name+"-µs/row")
		}
	}
}
