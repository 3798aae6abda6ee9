package apply

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/wiresql"
)

// BenchmarkStatementShapes measures the ways of writing the same row
// changes to a sysbench-shaped table: text multi-statement round trips
// (what binlane sends) against server-side prepared statements (binary
// protocol, parsed once), one row per statement and many rows per
// statement, and guarded row statements alone or in compound statements.
// Each op applies 96 row updates (one merged batch of oltp_write_only) in
// one transaction; compare ns/op.
//
//	go test -run '^$' -bench StatementShapes -benchtime 200x ./internal/apply
func BenchmarkStatementShapes(b *testing.B) {
	s, conn := benchTarget(b, "CREATE DATABASE d", `CREATE TABLE d.t (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0,
		c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1(k))`,
		"INSERT INTO d.t SELECT seq, seq, REPEAT('x',120), REPEAT('p',60) FROM d.seq_1_to_100000")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	c := strings.Repeat("c", 120)
	const rows = 96
	ids := func() []int {
		out := make([]int, rows)
		for i := range out {
			out[i] = 1 + rng.IntN(100000)
		}
		return out
	}
	b.Run("text/one-row-UPDATEs-one-round-trip", func(b *testing.B) {
		for b.Loop() {
			var q strings.Builder
			q.WriteString("START TRANSACTION;")
			for _, id := range ids() {
				fmt.Fprintf(&q, "UPDATE d.t SET k=%d, c=_utf8mb4 X'%x' WHERE id=%d;", rng.IntN(100000), c, id)
			}
			q.WriteString("COMMIT")
			if _, err := conn.ExecContext(ctx, q.String()); err != nil {
				b.Fatal(err)
			}
		}
	})
	// What rowsql sends for rows it cannot merge: each UPDATE followed by
	// its guard, as single statements or in compound statements of 64
	// (Writer.Blocks, MariaDB targets).
	guarded := func(block int) string {
		var q strings.Builder
		q.WriteString("START TRANSACTION;SET @binlane_bad=0;")
		for i, id := range ids() {
			if block > 0 && i%block == 0 {
				q.WriteString("BEGIN NOT ATOMIC\n")
			}
			fmt.Fprintf(&q, "UPDATE d.t SET k=%d, c=_utf8mb4 X'%x' WHERE id=%d;", rng.IntN(100000), c, id)
			q.WriteString("SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);")
			if block > 0 && (i%block == block-1 || i == rows-1) {
				q.WriteString("END;")
			}
		}
		q.WriteString("COMMIT")
		return q.String()
	}
	for _, block := range []int{0, 64} {
		b.Run(fmt.Sprintf("text/guarded-UPDATEs-blocks-of-%d", block), func(b *testing.B) {
			for b.Loop() {
				if _, err := conn.ExecContext(ctx, guarded(block)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("text/multi-row-upsert", func(b *testing.B) {
		for b.Loop() {
			var q strings.Builder
			q.WriteString("START TRANSACTION;INSERT INTO d.t (id,k,c,pad) VALUES ")
			for i, id := range ids() {
				if i > 0 {
					q.WriteByte(',')
				}
				fmt.Fprintf(&q, "(%d,%d,_utf8mb4 X'%x','p')", id, rng.IntN(100000), c)
			}
			q.WriteString(" ON DUPLICATE KEY UPDATE k=VALUES(k),c=VALUES(c),pad=VALUES(pad);COMMIT")
			if _, err := conn.ExecContext(ctx, q.String()); err != nil {
				b.Fatal(err)
			}
		}
	})
	pconn := driverConn(b, s) // binlane's own client prepares nothing
	b.Run("prepared/one-row-UPDATE-per-round-trip", func(b *testing.B) {
		stmt, err := pconn.PrepareContext(ctx, "UPDATE d.t SET k=?, c=? WHERE id=?")
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		for b.Loop() {
			tx, err := pconn.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, id := range ids() {
				if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, rng.IntN(100000), c, id); err != nil {
					b.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("prepared/multi-row-upsert", func(b *testing.B) {
		var q strings.Builder
		q.WriteString("INSERT INTO d.t (id,k,c,pad) VALUES ")
		for i := 0; i < rows; i++ {
			if i > 0 {
				q.WriteByte(',')
			}
			q.WriteString("(?,?,?,'p')")
		}
		q.WriteString(" ON DUPLICATE KEY UPDATE k=VALUES(k),c=VALUES(c),pad=VALUES(pad)")
		stmt, err := pconn.PrepareContext(ctx, q.String())
		if err != nil {
			b.Fatal(err)
		}
		defer stmt.Close()
		args := make([]any, 0, 3*rows)
		for b.Loop() {
			args = args[:0]
			for _, id := range ids() {
				args = append(args, id, rng.IntN(100000), c)
			}
			tx, err := pconn.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := tx.StmtContext(ctx, stmt).ExecContext(ctx, args...); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchTarget starts a target sandbox, runs setup on it as root and returns
// it with a connection of binlane's pool (its session settings).
func benchTarget(b *testing.B, setup ...string) (*sandbox.Server, *sql.Conn) {
	s := sandbox.StartT(b, sandbox.Options{Role: sandbox.Target, Extra: []string{"innodb-buffer-pool-size=512M"}})
	s.ExecT(b, setup...)
	return s, benchConn(b, s)
}

// benchConn opens a connection of binlane's pool (its session settings)
// to s, closed when the benchmark ends.
func benchConn(b *testing.B, s *sandbox.Server) *sql.Conn {
	target, _ := dsn.Parse(s.URL())
	pool, err := OpenPool(target, 2, dsn.ApplySession(true, 50))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	conn, err := pool.Conn(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// runWithFiles sends q on conn through binlane's own client (a pool
// connection), serving its LOCAL INFILE requests from files by the name
// each statement gives, as the applier does.
func runWithFiles(ctx context.Context, conn *sql.Conn, q string, files map[string][]byte) error {
	return conn.Raw(func(dc any) error {
		_, err := dc.(*wiresql.Conn).Run(ctx, []byte(q), func(name string) ([]byte, bool) {
			f, ok := files[name]
			return f, ok
		})
		return err
	})
}

// driverConn is a go-sql-driver connection to s in the apply session, for
// what binlane's own client (wiresql) does not speak: prepared
// statements, LOAD DATA from a Go reader.
func driverConn(b *testing.B, s *sandbox.Server) *sql.Conn {
	ctx := context.Background()
	conn, err := s.OpenT(b, "").Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	if err := dsn.ApplySession(true, 50).Set(ctx, conn); err != nil {
		b.Fatal(err)
	}
	return conn
}
