package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// BenchmarkUpsertRuns measures the target's CPU per updated row of a table
// with two foreign keys, written the two ways rowsql writes updates that
// keep the key and change no foreign-key or unique column: guarded UPDATEs,
// one row each, and runs of rows as one INSERT ... ON DUPLICATE KEY UPDATE
// with foreign-key checks off for its insert attempts and the found-rows
// guard (see rowsql/upsert.go). Both in compound statements of 64, as
// rowsql sends them to MariaDB. Each op updates 120 rows in one
// transaction; compare target-µs/row (the server's CPU, from /proc).
//
//	go test -run '^$' -bench UpsertRuns -benchtime 300x ./internal/apply
func BenchmarkUpsertRuns(b *testing.B) {
	s, conn := benchTarget(b, "CREATE DATABASE d",
		"CREATE TABLE d.p1 (id INT PRIMARY KEY)", "CREATE TABLE d.p2 (id INT PRIMARY KEY)",
		"INSERT INTO d.p1 SELECT seq FROM d.seq_1_to_1000", "INSERT INTO d.p2 SELECT seq FROM d.seq_1_to_1000",
		`CREATE TABLE d.t (id INT PRIMARY KEY, a INT NOT NULL, b INT NOT NULL, qty INT NOT NULL, note VARCHAR(40) NOT NULL,
			FOREIGN KEY (a) REFERENCES d.p1 (id), FOREIGN KEY (b) REFERENCES d.p2 (id))`,
		"INSERT INTO d.t SELECT seq, 1 + seq % 1000, 1 + seq % 997, 0, 'n' FROM d.seq_1_to_100000")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	const rows = 120
	row := func() (id, a, bb, qty int) {
		id = 1 + rng.IntN(100000)
		return id, 1 + id%1000, 1 + id%997, rng.IntN(1000)
	}
	// statements returns one transaction's statements, each a row change
	// and its guard, runs of run rows (0: UPDATEs).
	statements := func(run int) []string {
		var out []string
		for done := 0; done < rows; {
			if run == 0 {
				id, _, _, qty := row()
				out = append(out, fmt.Sprintf("UPDATE `d`.`t` SET `qty`=%d,`note`='u%d' WHERE `id`=%d;"+
					"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", qty, qty, id))
				done++
				continue
			}
			n := min(run, rows-done)
			var q strings.Builder
			q.WriteString("SET STATEMENT foreign_key_checks=0 FOR INSERT INTO `d`.`t` (`id`,`a`,`b`,`qty`,`note`) VALUES ")
			for i := 0; i < n; i++ {
				id, a, bb, qty := row()
				if i > 0 {
					q.WriteByte(',')
				}
				fmt.Fprintf(&q, "(%d,%d,%d,%d,'u%d')", id, a, bb, qty, qty)
			}
			q.WriteString(" ON DUPLICATE KEY UPDATE `a`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`a`),NULL),`b`=VALUES(`b`)," +
				"`qty`=VALUES(`qty`),`note`=VALUES(`note`);")
			fmt.Fprintf(&q, "SET @binlane_bad=@binlane_bad+(@binlane_n<>%d),@binlane_n=0;", n)
			out = append(out, q.String())
			done += n
		}
		return out
	}
	transaction := func(run int) string {
		var q strings.Builder
		q.WriteString("START TRANSACTION;SET @binlane_bad=0,@binlane_n=0;")
		for i, st := range statements(run) {
			if i%32 == 0 { // 32 statement-and-guard pairs: 64 statements
				if i > 0 {
					q.WriteString("END;")
				}
				q.WriteString("BEGIN NOT ATOMIC\n")
			}
			q.WriteString(st)
		}
		q.WriteString("END;COMMIT")
		return q.String()
	}
	for _, run := range []int{0, 1, 2, 3, 10} {
		name := "guarded-UPDATEs"
		if run > 0 {
			name = fmt.Sprintf("upserts-in-runs-of-%d", run)
		}
		b.Run(name, func(b *testing.B) {
			before := procCPU(b, s.PID())
			for b.Loop() {
				if _, err := conn.ExecContext(ctx, transaction(run)); err != nil {
					b.Fatal(err)
				}
			}
			ticks := procCPU(b, s.PID()) - before // 10 ms each
			b.ReportMetric(float64(ticks*10000)/float64(b.N*rows), "target-µs/row")
		})
	}
}
