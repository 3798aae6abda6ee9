package apply

import (
	"context"
	"testing"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestRollbackRestoresSession: a batch that replayed rows the source wrote
// with foreign_key_checks=0 switches the session off; when it is rolled
// back (lock wait, retry, error) instead of committed, the next batch on
// the same connection must again check foreign keys.
func TestRollbackRestoresSession(t *testing.T) {
	ctx := context.Background()
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	if _, err := dst.GrantBinlane(ctx, false, "app"); err != nil {
		t.Fatal(err)
	}
	target, err := dsn.Parse(dst.UserURL(sandbox.TargetUser, sandbox.AccountPassword))
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenPool(target, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := openConn(ctx, db, true, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if _, err := c.conn.ExecContext(ctx, "START TRANSACTION; SET SESSION foreign_key_checks=0, check_constraint_checks=1"); err != nil {
		t.Fatal(err)
	}
	if err := c.rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var fk, cc int
	if err := c.conn.QueryRowContext(ctx, "SELECT @@session.foreign_key_checks, @@session.check_constraint_checks").Scan(&fk, &cc); err != nil {
		t.Fatal(err)
	}
	if fk != 1 || cc != 0 {
		t.Fatalf("after rollback foreign_key_checks=%d check_constraint_checks=%d, want 1 and 0", fk, cc)
	}
}
