package apply

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkWidePrepared asks whether another statement form cuts the
// target's CPU on wide rows, where a text statement's values are most of
// its bytes and the server lexes every one of them (on the documents
// benchmark Lex_input_stream::get_text was 18% of the target's samples,
// the literals' repertoire and names 6% more, String_copier's check of
// the stored bytes 13%). The rows are the documents benchmark's (a JSON
// body of 2-20 KB), 16 changed per statement: the upsert as binlane sends
// it (text, _binary literals), the same upsert prepared and executed with
// the rows as parameters, and one UPDATE per row of the three columns
// that changed; target-µs/row is the server's CPU from /proc.
//
//	go test -run '^$' -bench WidePrepared -benchtime 200x -count 4 ./internal/apply
//
// On MariaDB 10.11 (2026-11-30, 150-200 transactions, 3-4 runs): the
// upsert 142-184 µs per row, prepared 154-179, the UPDATEs 222-272. The
// binary protocol saves no CPU that shows (the row's storage costs more
// than reading its text), and an UPDATE of the changed columns costs
// more than the upsert even where it sends the same bytes: neither is a
// lever for wide rows.
func BenchmarkWidePrepared(b *testing.B) {
	const docs, perStmt = 2000, 16
	s, conn := benchTarget(b, "CREATE DATABASE d",
		`CREATE TABLE d.doc (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, kind VARCHAR(20) NOT NULL,
			version INT NOT NULL, updated DATETIME(6) NOT NULL, body JSON NOT NULL, KEY customer (customer_id))`,
		fmt.Sprintf(`INSERT INTO d.doc SELECT seq, 1 + seq %% 1000, 'invoice', 1, NOW(6),
			JSON_OBJECT('id', seq, 'pad', REPEAT('x', 2000 + seq * 7919 %% 18000)) FROM d.seq_1_to_%d`, docs))
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	version := 1
	body := func(id int) string {
		return fmt.Sprintf(`{"id": %d, "status": "paid", "memo": "%s"}`, id, strings.Repeat("y", 2048+rng.IntN(18*1024)))
	}
	const head = "INSERT INTO `d`.`doc` (`id`,`customer_id`,`kind`,`version`,`updated`,`body`) VALUES "
	const tail = " ON DUPLICATE KEY UPDATE `customer_id`=VALUES(`customer_id`),`kind`=VALUES(`kind`)," +
		"`version`=VALUES(`version`),`updated`=VALUES(`updated`),`body`=VALUES(`body`)"
	exec := func(q string, args ...any) {
		if _, err := conn.ExecContext(ctx, q, args...); err != nil {
			b.Fatal(err)
		}
	}
	run := func(name string, stmt func()) { txnCPU(b, s.PID(), conn, name, perStmt, stmt) }
	run("text", func() {
		version++
		q := []byte(head)
		for i := range perStmt {
			if i > 0 {
				q = append(q, ',')
			}
			id := 1 + rng.IntN(docs)
			q = fmt.Appendf(q, "(%d,%d,_utf8mb4'invoice',%d,'2026-11-30 06:00:00.000000',", id, id%1000, version)
			q = sqlquote.AppendEscaped(q, "binary", []byte(body(id)))
			q = append(q, ')')
		}
		exec(string(append(q, tail...)))
	})
	run("text-updates", func() {
		version++
		var q []byte
		for i := range perStmt {
			if i > 0 {
				q = append(q, ';')
			}
			id := 1 + rng.IntN(docs)
			q = fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d,`updated`='2026-11-30 06:00:00.000000',`body`=", version)
			q = sqlquote.AppendEscaped(q, "binary", []byte(body(id)))
			q = fmt.Appendf(q, " WHERE `id`=%d", id)
		}
		exec(string(q))
	})
	ph := strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?),", perStmt), ",")
	pconn := driverConn(b, s) // binlane's own client prepares nothing
	st, err := pconn.PrepareContext(ctx, head+ph+tail)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	txnCPU(b, s.PID(), pconn, "prepared", perStmt, func() {
		version++
		args := make([]any, 0, 6*perStmt)
		for range perStmt {
			id := 1 + rng.IntN(docs)
			args = append(args, id, id%1000, "invoice", version, "2026-11-30 06:00:00.000000", body(id))
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			b.Fatal(err)
		}
	})
}
