package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/go-sql-driver/mysql"
)

// TestRollbackRestoresSession: a batch that replayed rows the source wrote
// with foreign_key_checks=0 switches the session off; when it is rolled
// back (lock wait, retry, error) instead of committed, the next batch on
// the same connection must again check foreign keys.
func TestRollbackRestoresSession(t *testing.T) {
	ctx := context.Background()
	db := targetPool(t, dsn.ApplySession(true, 5))
	c, err := openConn(ctx, db)
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

// TestApplySessionOnEveryConnection: every connection of the pool is in
// the apply session, also one it dials again after a connection was
// dropped, or one taken without openConn (the lock-wait monitor's).
func TestApplySessionOnEveryConnection(t *testing.T) {
	ctx := context.Background()
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	// optional: BINLOG ADMIN, which sql_log_bin needs.
	if _, err := dst.GrantBinlane(ctx, true, "app"); err != nil {
		t.Fatal(err)
	}
	target, err := dsn.Parse(dst.UserURL(sandbox.TargetUser, sandbox.AccountPassword) + "?time_zone=%27%2B05%3A00%27")
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenPool(target, 1, dsn.ApplySession(false, 7))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check := func(what string, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) {
		t.Helper()
		var mode, tz, iso string
		var lockWait, logBin, checks, fk int
		if err := q.QueryRowContext(ctx, "SELECT @@session.sql_mode, @@session.time_zone, @@session.tx_isolation, "+
			"@@session.innodb_lock_wait_timeout, @@session.sql_log_bin, @@session.check_constraint_checks, @@session.foreign_key_checks").
			Scan(&mode, &tz, &iso, &lockWait, &logBin, &checks, &fk); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(mode, "STRICT_ALL_TABLES") || !strings.Contains(mode, "ALLOW_INVALID_DATES") || tz != "+00:00" ||
			iso != "READ-COMMITTED" || lockWait != 7 || logBin != 0 || checks != 0 || fk != 1 {
			t.Fatalf("%s: sql_mode %q, time_zone %q, isolation %q, lock wait %d, sql_log_bin %d, check_constraint_checks %d, "+
				"foreign_key_checks %d", what, mode, tz, iso, lockWait, logBin, checks, fk)
		}
	}
	for i := range 2 {
		c, err := openConn(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("worker connection %d", i), c.conn)
		c.close() // dropped: the pool dials the next one again
	}
	check("a pooled connection", db)
}

// TestApplySessionRefused: an account that may not keep binlane's writes
// out of the target's binlog gets an error that names the session and the
// variable, not just the server's "access denied".
func TestApplySessionRefused(t *testing.T) {
	ctx := context.Background()
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	if _, err := dst.GrantBinlane(ctx, false, "app"); err != nil { // without BINLOG ADMIN
		t.Fatal(err)
	}
	target, err := dsn.Parse(dst.UserURL(sandbox.TargetUser, sandbox.AccountPassword))
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenPool(target, 1, dsn.ApplySession(false, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c, err := openConn(ctx, db)
	if err == nil {
		c.close()
		t.Fatal("connected without the privilege sql_log_bin = 0 needs")
	}
	if msg := err.Error(); !strings.Contains(msg, "apply session") || !strings.Contains(msg, "sql_log_bin = 0") ||
		strings.Contains(msg, sandbox.AccountPassword) {
		t.Fatalf("error: %v", err)
	}
}

// targetPool starts a target and opens a one-connection worker pool on it
// as binlane's least-privilege account, in the given session.
func targetPool(t *testing.T, session dsn.Session) *sql.DB {
	t.Helper()
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	if _, err := dst.GrantBinlane(context.Background(), false, "app"); err != nil {
		t.Fatal(err)
	}
	target, err := dsn.Parse(dst.UserURL(sandbox.TargetUser, sandbox.AccountPassword))
	if err != nil {
		t.Fatal(err)
	}
	db, err := OpenPool(target, 1, session)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestAheadRefused: only the guard's own error says that the commit before
// a round trip sent ahead was not found; a lost connection keeps its own
// words (before, every error without a row count was blamed on the guard).
func TestAheadRefused(t *testing.T) {
	guard := &mysql.MySQLError{Number: sqlerr.SubqueryNotOneRow, Message: "Subquery returns more than 1 row"}
	for _, tc := range []struct {
		err     error
		refused bool
	}{
		{guard, true},
		{fmt.Errorf("read answer: %w", io.ErrUnexpectedEOF), false},
		{&mysql.MySQLError{Number: sqlerr.Deadlock, Message: "Deadlock found"}, false},
		{nil, false},
	} {
		got := aheadRefused(tc.err)
		says := got != nil && strings.Contains(got.Error(), "the commit before them not found")
		if says != tc.refused || !errors.Is(got, tc.err) || sqlerr.Code(got) != sqlerr.Code(tc.err) {
			t.Errorf("aheadRefused(%v) = %v, refused %v", tc.err, got, tc.refused)
		}
	}
}
