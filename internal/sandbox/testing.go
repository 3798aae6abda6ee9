package sandbox

import (
	"context"
	"database/sql"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// StartT starts a server for a test and stops and removes it when the test
// and its subtests end. The test is skipped only when BINLANE_SKIP_DB is set;
// a missing mariadbd is a failure, not a skip, so CI cannot pass by
// accident.
func StartT(t testing.TB, opts Options) *Server {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a MariaDB server; skipped in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s, err := Start(ctx, opts)
	if err != nil {
		t.Fatalf("start sandbox: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Logf("close sandbox %s: %v", s.Name, err)
		}
	})
	return s
}

// OpenT opens a pool to the server, closed at the end of the test.
func (s *Server) OpenT(t testing.TB, db string) *sql.DB {
	t.Helper()
	pool, err := s.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

// ExecT runs statements and fails the test on error.
func (s *Server) ExecT(t testing.TB, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := s.Exec(ctx, stmts...); err != nil {
		t.Fatal(err)
	}
}

// Installed reports whether the MariaDB server binaries are present.
func Installed() bool {
	_, err := exec.LookPath("mariadbd")
	return err == nil
}

// QueryLinesT runs q on db and returns each row as one line, its values
// joined by " | " (NULL as ""): what two servers show, to compare.
func QueryLinesT(t testing.TB, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
