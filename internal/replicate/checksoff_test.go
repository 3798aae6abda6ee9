package replicate

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestChecksOffInsertBesideCascade shows why the random foreign-key
// workloads (runsLoad, TestForeignKeyCascadesRandom) run a transaction with
// foreign_key_checks=0 alone among their sessions. InnoDB's cascade locks
// the child rows it deletes, not the gaps between them, and an insert with
// the checks off takes no lock on the parent row: such an insert of a child
// of a parent row another transaction is deleting commits while that
// delete is open, and survives its cascade on the source. The binlog then
// has the insert first and the parent delete after it, and any replay in
// binlog order (binlane with one worker, a native replica) cascades into
// the inserted row: the target lacks a row the source has, with no error.
// The source's history is not serializable; no applier can reproduce it.
func TestChecksOffInsertBesideCascade(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	src.ExecT(t, "CREATE DATABASE marker")
	from := gtidPos(t, src)
	src.ExecT(t, cascadeSchema...)
	src.ExecT(t, "INSERT INTO fk.a VALUES (1, 'k1', 0)", "INSERT INTO fk.b VALUES (5, 1, 'k1', NULL, 0)",
		"INSERT INTO fk.c VALUES (10, 5, 0), (40, 5, 0)")
	db := src.OpenT(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	del, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Close()
	ins, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Close()
	for _, q := range []string{"BEGIN", "DELETE FROM fk.b WHERE id = 5"} { // cascades into c 10 and 40
		if _, err := del.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	done := make(chan error, 1)
	go func() {
		for _, q := range []string{"SET SESSION foreign_key_checks = 0", "BEGIN", "INSERT INTO fk.c VALUES (23, 5, 0)", "COMMIT"} {
			if _, err := ins.ExecContext(ctx, q); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the insert with the checks off waited for the parent's delete: InnoDB serializes them now, and the workloads' checks-off transactions need not run alone")
	}
	if _, err := del.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM fk.c WHERE id = 23").Scan(&n); err != nil || n != 1 {
		t.Fatalf("source: c 23: %d rows, %v", n, err)
	}
	to := gtidPos(t, src)
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	if err := corpusRun(t, src, dst, "gap", from, to, 1, []string{"fk"}); err != nil {
		t.Fatal(err)
	}
	if err := dst.OpenT(t, "").QueryRowContext(ctx, "SELECT COUNT(*) FROM fk.c WHERE id = 23").Scan(&n); err != nil || n != 0 {
		t.Fatalf("target: c 23: %d rows, %v (the replay in binlog order was expected to cascade into it)", n, err)
	}
}
