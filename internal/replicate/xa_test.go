package replicate

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlerr"
)

// TestXAExactlyOnce replays the states a crash can leave an XA transaction
// in on the target, each at the point where binlane's own work and its
// position update are two target transactions: prepared there but the
// position still before the prepare, and finished there but the position
// still before the finish. A run from there must neither apply the rows
// twice nor lose them (issue 16 K).
func TestXAExactlyOnce(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	from := gtidPos(t, src)
	db := "xa"
	src.ExecT(t, "CREATE DATABASE xa", "CREATE TABLE xa.t (a INT PRIMARY KEY, v INT)", "INSERT INTO xa.t VALUES (100, 0)")
	prepare := func(id string, a int) {
		runCorpusWorkload(t, src, db, corpusWorkload{name: id, stmts: []string{"USE xa",
			"XA START '" + id + "'", "INSERT INTO t VALUES (" + itoa(a) + ", 1)", "UPDATE t SET v = v + 1 WHERE a = 100",
			"XA END '" + id + "'", "XA PREPARE '" + id + "'"}})
	}
	prepare("one", 1)
	afterPrepare := gtidPos(t, src)
	src.ExecT(t, "XA COMMIT 'one'")
	afterCommit := gtidPos(t, src)
	srcDB := []string{db}

	// 1. Apply up to the prepare: the target holds "one" prepared.
	if err := corpusRun(t, src, dst, "xa", from, afterPrepare, 2, srcDB); err != nil {
		t.Fatal(err)
	}
	// 2. A crash after XA COMMIT on the target and before the position
	// update: the commit is done, the position is before it.
	finishXA(t, dst, "XA COMMIT 'one'")
	if err := corpusRun(t, src, dst, "xa", "", afterCommit, 2, srcDB); err != nil {
		t.Fatal(err)
	}
	checkXAState(t, dst, "xa", afterCommit)

	// 3. A crash after XA PREPARE on the target and before the position
	// update: the target has "two" prepared, the position is before it.
	prepare("two", 2)
	afterPrepare2 := gtidPos(t, src)
	src.ExecT(t, "XA COMMIT 'two'")
	runCorpusWorkload(t, dst, db, corpusWorkload{name: "crashed prepare", stmts: []string{"USE xa", "SET sql_log_bin=0",
		"XA START 'two'", "INSERT INTO t VALUES (2, 1)", "UPDATE t SET v = v + 1 WHERE a = 100", "XA END 'two'", "XA PREPARE 'two'"}})
	if err := corpusRun(t, src, dst, "xa", "", afterPrepare2, 2, srcDB); err != nil {
		t.Fatal(err)
	}
	end := gtidPos(t, src)
	if err := corpusRun(t, src, dst, "xa", "", end, 2, srcDB); err != nil {
		t.Fatal(err)
	}
	checkXAState(t, dst, "xa", end)
	if got, want := dumpDatabases(t, dst, srcDB)[db], dumpDatabases(t, src, srcDB)[db]; got != want {
		t.Fatalf("target differs:\n%s", diffLines(want, got))
	}
	var v int
	if err := dst.OpenT(t, "").QueryRow("SELECT v FROM xa.t WHERE a = 100").Scan(&v); err != nil || v != 2 {
		t.Fatalf("v = %d (%v): each XA transaction's update must apply exactly once", v, err)
	}
}

// checkXAState checks the stream's position and that nothing stays
// prepared on the target or recorded as prepared.
func checkXAState(t *testing.T, dst *sandbox.Server, stream, want string) {
	t.Helper()
	db := dst.OpenT(t, "")
	st, ok, err := position.Load(context.Background(), db, stream)
	if err != nil || !ok || st.GTID != want {
		t.Fatalf("position %q (%v %v), want %q", st.GTID, ok, err, want)
	}
	rows, err := db.Query("XA RECOVER")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("an XA transaction stays prepared on the target")
	}
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM " + position.XATable).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d XA transactions recorded as prepared (%v)", n, err)
	}
}

// finishXA runs an XA COMMIT or ROLLBACK of a transaction binlane's target
// session prepared. binlane has closed that session, but the server
// detaches the prepared transaction only when it has processed the
// disconnect; until then the xid is unknown to every other session
// (XAER_NOTA). runCorpusWorkload waits for its own sessions to end; this
// one is binlane's, so retry.
func finishXA(t *testing.T, srv *sandbox.Server, stmt string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := srv.Exec(ctx, stmt)
		if err == nil {
			return
		}
		if !sqlerr.Is(err, sqlerr.XAUnknownXID) || time.Now().After(deadline) {
			t.Fatalf("%s: %v", stmt, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(n int) string { return string(rune('0' + n)) }
