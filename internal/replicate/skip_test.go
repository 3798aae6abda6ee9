package replicate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/position"
)

// TestSkipRefused walks the way past a refused transaction: the stream
// stops at an ALTER whose DEFAULT (UUID()) the target would compute
// differently; the column is added on the target by hand with the
// source's values; replicate with --skip-gtid of that transaction records
// it as applied and goes on, ending equal. A --skip-gtid that is not the
// next transaction skips nothing.
func TestSkipRefused(t *testing.T) {
	ctx := context.Background()
	src, dst, from := sourceAndTarget(t)
	const db = "skipr"
	src.ExecT(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)", "INSERT INTO "+db+".t VALUES (1,1),(2,2)")
	before := gtidPos(t, src)
	src.ExecT(t, "ALTER TABLE "+db+".t ADD COLUMN u CHAR(36) DEFAULT (UUID())")
	refused := gtidPos(t, src) // one domain: the position is the ALTER's GTID
	src.ExecT(t, "INSERT INTO "+db+".t (id, v) VALUES (3,3)", "UPDATE "+db+".t SET v = 20 WHERE id = 2")
	end := gtidPos(t, src)

	if err := corpusRun(t, src, dst, db, from, end, 4, []string{db}); err == nil || !strings.Contains(err.Error(), "DEFAULT calls UUID()") {
		t.Fatalf("first run: %v; want the ALTER refused", err)
	}
	wrong := nextGTID(t, refused) // the transaction after the refused one
	err := corpusRun(t, src, dst, db, "", end, 4, []string{db}, func(c *Config) { c.SkipGTID = wrong })
	if err == nil || !strings.Contains(err.Error(), "is not the next transaction") {
		t.Fatalf("--skip-gtid %s: %v; want a refusal, nothing skipped", wrong, err)
	}
	if st, _, _ := position.Load(ctx, dst.OpenT(t, ""), db); st.GTID != before {
		t.Fatalf("position %q after a wrong --skip-gtid, want %q", st.GTID, before)
	}
	// The fix by hand: the column, with the values the source gave it.
	dst.ExecT(t, "SET SESSION sql_log_bin=0", "ALTER TABLE "+db+".t ADD COLUMN u CHAR(36) DEFAULT (UUID())")
	rows, err := src.OpenT(t, db).QueryContext(ctx, "SELECT id, u FROM t WHERE id <= 2")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		var u string
		if err := rows.Scan(&id, &u); err != nil {
			t.Fatal(err)
		}
		dst.ExecT(t, fmt.Sprintf("UPDATE %s.t SET u = '%s' WHERE id = %d", db, u, id))
	}
	rows.Close()
	if err := corpusRun(t, src, dst, db, "", end, 4, []string{db}, func(c *Config) { c.SkipGTID = refused }); err != nil {
		t.Fatalf("--skip-gtid %s: %v", refused, err)
	}
	if got, want := dumpDatabases(t, dst, []string{db})[db], dumpDatabases(t, src, []string{db})[db]; got != want {
		t.Fatalf("target differs:\n%s", diffLines(want, got))
	}
}

// nextGTID returns the GTID after a one-domain MariaDB position's.
func nextGTID(t *testing.T, pos string) string {
	t.Helper()
	var d, srv, n int
	if _, err := fmt.Sscanf(pos, "%d-%d-%d", &d, &srv, &n); err != nil {
		t.Fatalf("position %q: %v", pos, err)
	}
	return fmt.Sprintf("%d-%d-%d", d, srv, n+1)
}
