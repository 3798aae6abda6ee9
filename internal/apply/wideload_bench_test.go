package apply

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkWideLoad asks whether wide JSON documents (4-20 KB) would cost
// the target less in another form than the escaped _binary literals of a
// multi-row INSERT or upsert that rowsql sends: LOAD DATA (REPLACE) of the
// same rows, as load.go sends bulk changes, or server-side prepared
// statements (binary protocol: no lexing of the value), one row per
// execution or every row of the batch in one. Batches of 10 and 40
// documents, every form once per batch, 30 batches a round, 5 rounds; the
// target's CPU from schedstat (threadsNS), per document, median round.
//
//	go test -run '^$' -bench WideLoad -benchtime 1x ./internal/apply
//
// MariaDB 10.11, 2026-11-29, target-CPU-µs per document, three runs (the
// first with the LOAD forms only, the second with the prepared ones only,
// both in a slow phase; the third with all, the machine faster):
//
//	                        batch of 10         batch of 40
//	insert (what is sent)   175 / 183 / 160     185 / 179 / 127
//	load                    307 /  -  / 257     270 /  -  / 238
//	upsert (what is sent)   231 / 111 /  87     116 / 102 /  87
//	load-replace            382 /  -  / 191     208 /  -  / 181
//	prepared insert, 1 row   -  / 319 / 219      -  / 342 / 263
//	prepared insert, all     -  / 200 / 159      -  / 212 / 175
//	prepared upsert, 1 row   -  / 404 / 264      -  / 238 / 201
//	prepared upsert, all     -  / 246 / 194      -  / 130 / 105
//
// Neither wins: LOAD DATA's field reader costs more per byte than the
// lexer's string scan (1.5-2.2x), and a prepared statement's parameters
// are copied and converted on every execution (1.0-2.4x; 1.0x only for
// the whole batch's INSERT in one execution, which an upsert loses). So
// wide values stay escaped literals and load.go's threshold stays on rows,
// not bytes.
func BenchmarkWideLoad(b *testing.B) {
	s, conn := benchTarget(b, docTable(4000)...)
	ctx := context.Background()
	if _, err := conn.ExecContext(ctx, "SET SESSION character_set_client=binary"); err != nil {
		b.Fatal(err)
	}
	nextID := 1_000_000
	type row struct {
		id   int
		body []byte
	}
	insertSQL := func(rows []row, upsert bool) []byte {
		q := []byte("INSERT INTO `d`.`doc` (`id`,`customer_id`,`kind`,`version`,`updated`,`body`) VALUES ")
		for i, r := range rows {
			if i > 0 {
				q = append(q, ',')
			}
			q = fmt.Appendf(q, "(%d,%d,_binary'invoice',2,'2026-11-28 10:00:00.000000',", r.id, r.id%1000)
			q = sqlquote.AppendEscaped(q, "binary", r.body)
			q = append(q, ')')
		}
		if upsert {
			q = append(q, " ON DUPLICATE KEY UPDATE `customer_id`=VALUES(`customer_id`),`kind`=VALUES(`kind`),`version`=VALUES(`version`),`updated`=VALUES(`updated`),`body`=VALUES(`body`)"...)
		}
		return q
	}
	loadFile := func(rows []row) []byte {
		var f []byte
		for _, r := range rows {
			f = fmt.Appendf(f, "%d\t%d\tinvoice\t2\t2026-11-28 10:00:00.000000\t", r.id, r.id%1000)
			for _, c := range r.body {
				switch c {
				case '\t':
					f = append(f, '\\', 't')
				case '\n':
					f = append(f, '\\', 'n')
				case '\\':
					f = append(f, '\\', '\\')
				default:
					f = append(f, c)
				}
			}
			f = append(f, '\n')
		}
		return f
	}
	const format = ` CHARACTER SET binary FIELDS TERMINATED BY '\t' ENCLOSED BY '' ESCAPED BY '\\' LINES STARTING BY '' TERMINATED BY '\n' (id,customer_id,kind,version,updated,body)`
	type form struct {
		name string
		run  func(rows []row)
	}
	execOn := func(c *sql.Conn, q string) {
		if _, err := c.ExecContext(ctx, q); err != nil {
			b.Fatalf("%.200s: %v", q, err)
		}
	}
	exec := func(q string) { execOn(conn, q) }
	// binlane's own client prepares nothing: prepared statements go
	// through go-sql-driver.
	dconn := driverConn(b, s)
	load := func(replace string) func(rows []row) {
		return func(rows []row) {
			q := "START TRANSACTION;LOAD DATA LOCAL INFILE 'Reader::wideload'" + replace + " INTO TABLE d.doc" + format + ";COMMIT"
			if err := runWithFiles(ctx, conn, q, map[string][]byte{"Reader::wideload": loadFile(rows)}); err != nil {
				b.Fatalf("%.200s: %v", q, err)
			}
		}
	}
	forms := []form{
		{"insert", func(rows []row) { exec("START TRANSACTION;" + string(insertSQL(rows, false)) + ";COMMIT") }},
		{"load", load("")},
		{"upsert", func(rows []row) { exec("START TRANSACTION;" + string(insertSQL(rows, true)) + ";COMMIT") }},
		{"load-replace", load(" REPLACE")},
	}
	prepared := func(upsert bool, perStmt int) func(rows []row) {
		stmts := map[int]*sql.Stmt{}
		return func(rows []row) {
			tx, err := dconn.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for from := 0; from < len(rows); from += perStmt {
				part := rows[from:min(from+perStmt, len(rows))]
				st := stmts[len(part)]
				if st == nil {
					q := "INSERT INTO `d`.`doc` (`id`,`customer_id`,`kind`,`version`,`updated`,`body`) VALUES " +
						strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?),", len(part)), ",")
					if upsert {
						q += " ON DUPLICATE KEY UPDATE `customer_id`=VALUES(`customer_id`),`kind`=VALUES(`kind`),`version`=VALUES(`version`),`updated`=VALUES(`updated`),`body`=VALUES(`body`)"
					}
					if st, err = dconn.PrepareContext(ctx, q); err != nil {
						b.Fatal(err)
					}
					stmts[len(part)] = st
				}
				var args []any
				for _, r := range part {
					args = append(args, r.id, r.id%1000, []byte("invoice"), 2, "2026-11-28 10:00:00.000000", r.body)
				}
				if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	forms = append(forms, form{"prep-insert-1", prepared(false, 1)}, form{"prep-insert-all", prepared(false, 1000)},
		form{"prep-upsert-1", prepared(true, 1)}, form{"prep-upsert-all", prepared(true, 1000)})
	for _, n := range []int{10, 40} {
		per := map[string][]float64{}
		for round := range 5 {
			sums := map[string]int64{}
			docs := 0
			for batch := range 30 {
				for fi, f := range forms {
					rows := make([]row, n)
					for i := range rows {
						if strings.Contains(f.name, "upsert") || f.name == "load-replace" {
							rows[i].id = 1 + (round*30*n*2+batch*n*2+fi*n+i)%4000
						} else {
							nextID++
							rows[i].id = nextID
						}
						rows[i].body = wideDoc(rows[i].id, 4000+(rows[i].id*7919)%16000, false)
					}
					before := threadsNS(b, s.PID())
					f.run(rows)
					after := threadsNS(b, s.PID())
					for tid, ns := range after {
						sums[f.name] += ns - before[tid]
					}
				}
				docs += n
			}
			for _, f := range forms {
				per[f.name] = append(per[f.name], float64(sums[f.name])/1e3/float64(docs))
			}
			fmt.Printf("n=%d round %d:", n, round+1)
			for _, f := range forms {
				fmt.Printf(" %s %.1f", f.name, per[f.name][round])
			}
			fmt.Println(" µs/doc")
		}
		for name, v := range per {
			b.ReportMetric(medianOf(v), fmt.Sprintf("%s-%d-µs/doc", name, n))
		}
	}
}
