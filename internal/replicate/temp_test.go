package replicate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestTemporaryTablesAcrossRestart: a MIXED-format source session creates
// a temporary table r that shadows the replicated table r; binlane stops
// right after (as a restart or a reconnect would), and the session then
// truncates and alters its r. The second run must know r is temporary from
// the saved position: run against the target's real r, the TRUNCATE would
// empty it and the ALTER change its definition.
func TestTemporaryTablesAcrossRestart(t *testing.T) {
	ctx := context.Background()
	src, dst, from := sourceAndTarget(t)
	const db = "tmpr"
	src.ExecT(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".r (id INT PRIMARY KEY, v INT)", "INSERT INTO "+db+".r VALUES (1,1),(2,2)")
	run := mixedSession(t, src, db)
	run("CREATE TEMPORARY TABLE r (x INT)")
	mid := gtidPos(t, src)
	run("TRUNCATE TABLE r", "ALTER TABLE r ADD COLUMN y INT", "DROP TEMPORARY TABLE r")
	src.ExecT(t, "INSERT INTO "+db+".r VALUES (3,3)")
	end := gtidPos(t, src)

	if err := corpusRun(t, src, dst, "tmp", from, mid, 1, []string{db}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	meta := dst.OpenT(t, "")
	st, ok, err := position.Load(ctx, meta, "tmp")
	temps, terr := position.LoadTempTables(ctx, meta, "tmp")
	if err != nil || terr != nil || !ok || st.GTID != mid || !strings.Contains(temps, `"tmpr","r"`) {
		t.Fatalf("saved position %q with temporary tables %q (%v %v %v); want %q with tmpr.r", st.GTID, temps, ok, err, terr, mid)
	}
	// The second run resumes from the saved position (no start given).
	if err := corpusRun(t, src, dst, "tmp", "", end, 4, []string{db}); err != nil {
		t.Fatalf("second run: %v", err)
	}
	if got, want := dumpDatabases(t, dst, []string{db})[db], dumpDatabases(t, src, []string{db})[db]; got != want {
		t.Fatalf("target differs from the source:\n%s", diffLines(want, got))
	}
	if temps, _ = position.LoadTempTables(ctx, meta, "tmp"); temps != "" {
		t.Fatalf("temporary tables after the session dropped its r: %q, want none", temps)
	}
}

// TestTemporaryTableUsedAcrossRestart: a source session fills a temporary
// table and later copies it into a replicated table with a statement. In
// one run the target builds the temporary table on the session's own
// connection and ends equal; when binlane restarts between the table's
// creation and its use (the temporary table goes with its connection), the
// stream stops before the statement, naming the table and why, with the
// position and the target as they were: never rows computed from the
// target's real table of that name.
func TestTemporaryTableUsedAcrossRestart(t *testing.T) {
	ctx := context.Background()
	src, dst, from := sourceAndTarget(t)
	dst2 := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Name: "target2", ServerID: 3})
	const db = "tmpuse"
	src.ExecT(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".t (a INT PRIMARY KEY)",
		"CREATE TABLE "+db+".r (a INT PRIMARY KEY)", "INSERT INTO "+db+".r VALUES (7)")
	run := mixedSession(t, src, db)
	// r shadows the real r: run on the target's real r, the INSERT below
	// would copy 7 instead of 1 and 2.
	run("SET SESSION binlog_format=STATEMENT", "CREATE TEMPORARY TABLE r (a INT)", "INSERT INTO r VALUES (1), (2)",
		"INSERT INTO r SELECT a + 10 FROM t")
	mid := gtidPos(t, src)
	run("INSERT INTO t SELECT a FROM r", "UPDATE t JOIN r USING (a) SET t.a = t.a + 100 WHERE r.a = 2", "DROP TEMPORARY TABLE r")
	end := gtidPos(t, src)

	// One run: equal.
	if err := corpusRun(t, src, dst2, "tmpuse", from, end, 4, []string{db}); err != nil {
		t.Fatalf("one run: %v", err)
	}
	want := dumpDatabases(t, src, []string{db})[db]
	if got := dumpDatabases(t, dst2, []string{db})[db]; got != want {
		t.Fatalf("target differs from the source:\n%s", diffLines(want, got))
	}
	verifyServers(t, src, dst2, db)

	// A restart between: a clear stop before the statement.
	if err := corpusRun(t, src, dst, "tmpuse", from, mid, 1, []string{db}); err != nil {
		t.Fatalf("first run: %v", err)
	}
	before := dumpDatabases(t, dst, []string{db})[db]
	err := corpusRun(t, src, dst, "tmpuse", "", end, 4, []string{db})
	for _, w := range []string{"INSERT INTO t SELECT a FROM r", "reads temporary table `tmpuse`.`r`", "created before this run"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Fatalf("second run ended with %v; want an error naming %q", err, w)
		}
	}
	st, ok, lerr := position.Load(ctx, dst.OpenT(t, ""), "tmpuse")
	if lerr != nil || !ok || st.GTID != mid || st.State != position.StateError {
		t.Fatalf("position %q state %q (%v %v), want %q in state error", st.GTID, st.State, ok, lerr, mid)
	}
	if got := dumpDatabases(t, dst, []string{db})[db]; got != before {
		t.Fatalf("target changed by the refused statement:\n%s", diffLines(before, got))
	}
}

// TestTemporaryTableRefusals: a statement naming a session's temporary
// table together with a replicated one, or reading one (CREATE TABLE ...
// SELECT from a temporary r that shadows the replicated r: run on the
// target it would read the real r), stops the stream before it, with the
// position and the target as they were, and the error recorded.
func TestTemporaryTableRefusals(t *testing.T) {
	ctx := context.Background()
	src, dst, _ := sourceAndTarget(t)
	for i, c := range []struct{ temp, stmt, refusal string }{
		{"m", "RENAME TABLE m TO m2, r TO r2", "renames temporary and other tables"},
		{"r", "CREATE TABLE c SELECT * FROM r", "reads temporary table"},
	} {
		db := fmt.Sprintf("tmpx%d", i)
		t.Run(c.stmt, func(t *testing.T) {
			from := gtidPos(t, src)
			src.ExecT(t, "CREATE DATABASE "+db, "CREATE TABLE "+db+".r (id INT PRIMARY KEY)", "INSERT INTO "+db+".r VALUES (1)")
			run := mixedSession(t, src, db)
			run("CREATE TEMPORARY TABLE " + c.temp + " (x INT)")
			before := gtidPos(t, src)
			want := dumpDatabases(t, src, []string{db})[db]
			run(c.stmt)
			err := corpusRun(t, src, dst, db, from, gtidPos(t, src), 4, []string{db})
			if err == nil || !strings.Contains(err.Error(), c.refusal) || !strings.Contains(err.Error(), c.stmt) {
				t.Fatalf("stream ended with %v; want the refusal naming the statement", err)
			}
			st, ok, err := position.Load(ctx, dst.OpenT(t, ""), db)
			if err != nil || !ok || st.GTID != before || st.State != position.StateError || !strings.Contains(st.Message, c.refusal) {
				t.Fatalf("position %q state %q message %q (%v %v); want %q, error recorded", st.GTID, st.State, st.Message, ok, err, before)
			}
			if got := dumpDatabases(t, dst, []string{db})[db]; got != want {
				t.Fatalf("target changed:\n%s", diffLines(want, got))
			}
		})
	}
}

// mixedSession opens one source session in database db with
// binlog_format=MIXED and returns a function running statements on it; the
// session stays open (its temporary tables with it) until the test ends.
func mixedSession(t *testing.T, src *sandbox.Server, db string) func(stmts ...string) {
	t.Helper()
	ctx := context.Background()
	session, err := src.OpenT(t, db).Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	run := func(stmts ...string) {
		t.Helper()
		for _, q := range stmts {
			if _, err := session.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	run("SET SESSION binlog_format=MIXED")
	return run
}

// sourceAndTarget starts a source and a target, and returns the source's
// position after a first transaction: a start for corpusRun.
func sourceAndTarget(t *testing.T) (src, dst *sandbox.Server, from string) {
	t.Helper()
	src = sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst = sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	return src, dst, gtidPos(t, src)
}
