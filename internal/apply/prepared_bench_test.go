package apply

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkPreparedStatements asks whether the binary protocol would cut
// the target's CPU per row: the same row changes as text statements (what
// binlane sends) and as executions of a server-side prepared statement
// (no parsing), each one statement per round trip so that only the
// protocol differs, plus the text statements as binlane actually sends
// them (many per round trip, in compound statements with guards). Rows
// are TPC-C stock rows (17 columns) updated by key, and order lines
// inserted 10 to a statement, 100 rows per transaction; compare
// target-µs/row (the server's CPU, from /proc).
//
//	go test -run '^$' -bench PreparedStatements -benchtime 200x -count 3 ./internal/apply
//
// On MariaDB 10.11 (2026-11-26, a slow phase of the machine): UPDATEs
// 53-64 µs per row as text, 58-64 prepared, 51-52 as binlane sends them;
// 10-row INSERTs 13.5-14.5 as text, 10.5-12 prepared, 12-13 as binlane
// sends them. Parsing is not where an UPDATE's time goes, and prepared
// statements would save at most a tenth of an INSERT's while costing a
// round trip each (go-sql-driver cannot pipeline them): not a lever.
func BenchmarkPreparedStatements(b *testing.B) {
	s, conn := benchTarget(b, "CREATE DATABASE d",
		`CREATE TABLE d.stock (w INT, i INT, qty INT, d1 CHAR(24), d2 CHAR(24), d3 CHAR(24), d4 CHAR(24), d5 CHAR(24),
			d6 CHAR(24), d7 CHAR(24), d8 CHAR(24), d9 CHAR(24), d10 CHAR(24), ytd INT, cnt INT, rcnt INT, data VARCHAR(50),
			PRIMARY KEY (w, i))`,
		`INSERT INTO d.stock SELECT 1, seq, 50, REPEAT('a',24), REPEAT('b',24), REPEAT('c',24), REPEAT('d',24),
			REPEAT('e',24), REPEAT('f',24), REPEAT('g',24), REPEAT('h',24), REPEAT('i',24), REPEAT('j',24), 0, 0, 0,
			REPEAT('z', 40) FROM d.seq_1_to_100000`,
		"CREATE TABLE d.ol (o INT, n INT, i INT, qty INT, amount DECIMAL(6,2), info CHAR(24), PRIMARY KEY (o, n))")
	ctx := context.Background()
	const rows = 100 // per transaction
	next := 0        // the stock row to update, the order to insert
	exec := func(q string) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	update := func() (qty, ytd, cnt, id int) {
		next++
		return next % 90, next, next % 7, 1 + next%100000
	}
	const updateText = "UPDATE `d`.`stock` SET `qty`=%d,`ytd`=%d,`cnt`=%d WHERE `w`=1 AND `i`=%d"
	lines := func(o int, text bool) (string, []any) {
		var q strings.Builder
		var args []any
		q.WriteString("INSERT INTO `d`.`ol` (`o`,`n`,`i`,`qty`,`amount`,`info`) VALUES ")
		for n := 0; n < 10; n++ {
			if n > 0 {
				q.WriteByte(',')
			}
			if text {
				fmt.Fprintf(&q, "(%d,%d,%d,5,12.50,_utf8mb4'abcdefghijklmnopqrstuvwx')", o, n, o*n)
			} else {
				q.WriteString("(?,?,?,5,12.50,?)")
				args = append(args, o, n, o*n, "abcdefghijklmnopqrstuvwx")
			}
		}
		return q.String(), args
	}
	run := func(name string, txn func()) { txnCPU(b, s.PID(), conn, name, rows, txn) }
	pconn := driverConn(b, s) // binlane's own client prepares nothing
	runPrepared := func(name string, txn func()) { txnCPU(b, s.PID(), pconn, name, rows, txn) }
	run("UPDATE/text-one-per-round-trip", func() {
		for range rows {
			qty, ytd, cnt, id := update()
			exec(fmt.Sprintf(updateText, qty, ytd, cnt, id))
		}
	})
	upd, err := pconn.PrepareContext(ctx, "UPDATE `d`.`stock` SET `qty`=?,`ytd`=?,`cnt`=? WHERE `w`=1 AND `i`=?")
	if err != nil {
		b.Fatal(err)
	}
	defer upd.Close()
	runPrepared("UPDATE/prepared-one-per-round-trip", func() {
		for range rows {
			qty, ytd, cnt, id := update()
			if _, err := upd.ExecContext(ctx, qty, ytd, cnt, id); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("UPDATE/text-as-binlane-sends-it", func() {
		var q strings.Builder
		q.WriteString("SET @binlane_bad=0;")
		for i := range rows {
			if i%32 == 0 {
				if i > 0 {
					q.WriteString("END;")
				}
				q.WriteString("BEGIN NOT ATOMIC\n")
			}
			qty, ytd, cnt, id := update()
			fmt.Fprintf(&q, updateText+";SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", qty, ytd, cnt, id)
		}
		q.WriteString("END")
		exec(q.String())
	})
	run("INSERT-10-rows/text-one-per-round-trip", func() {
		for range rows / 10 {
			next++
			q, _ := lines(next, true)
			exec(q)
		}
	})
	q, _ := lines(0, false)
	ins, err := pconn.PrepareContext(ctx, q)
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	runPrepared("INSERT-10-rows/prepared-one-per-round-trip", func() {
		for range rows / 10 {
			next++
			_, args := lines(next, false)
			if _, err := ins.ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("INSERT-10-rows/text-as-binlane-sends-it", func() {
		var all strings.Builder
		for i := range rows / 10 {
			next++
			q, _ := lines(next, true)
			if i > 0 {
				all.WriteByte(';')
			}
			all.WriteString(q)
		}
		exec(all.String())
	})
}
