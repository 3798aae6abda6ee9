package wiresql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/wire"
	"github.com/binlane/binlane/internal/wiresql"
)

// open starts a target sandbox and opens a pool of wiresql connections as
// binlane's target account, with its documented grants on database wl.
func open(t *testing.T, setup ...string) (*sandbox.Server, *sql.DB) {
	t.Helper()
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	s.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v VARCHAR(20), b VARBINARY(20))")
	if _, err := s.GrantBinlane(context.Background(), false, "wl"); err != nil {
		t.Fatal(err)
	}
	c := &wiresql.Connector{Config: wire.Config{Addr: s.Addr(), User: sandbox.TargetUser, Password: sandbox.AccountPassword},
		Setup: setup}
	db := sql.OpenDB(c)
	t.Cleanup(func() { db.Close() })
	return s, db
}

func raw(t *testing.T, c *sql.Conn) *wiresql.Conn {
	t.Helper()
	var wc *wiresql.Conn
	if err := c.Raw(func(dc any) error { wc = dc.(*wiresql.Conn); return nil }); err != nil {
		t.Fatal(err)
	}
	return wc
}

// pinned takes a connection of db for the test, and its driver side.
func pinned(t *testing.T, db *sql.DB) (*sql.Conn, *wiresql.Conn) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, raw(t, c)
}

// TestRunCounts: a multi-statement round trip returns each statement's
// count, matched rows for an UPDATE that changes nothing; a failed
// statement ends the round trip with the server's error after the counts
// of those before it, and the connection goes on.
func TestRunCounts(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	c, wc := pinned(t, db)
	counts, err := wc.Run(ctx, []byte("INSERT INTO wl.t VALUES (1,'a',NULL),(2,'b',NULL);UPDATE wl.t SET v='a' WHERE id=1;"+
		"DELETE FROM wl.t WHERE id=3;SET @x=1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 1, 0, 0}; !equal(counts, want) {
		t.Fatalf("counts %v, want %v", counts, want)
	}
	counts, err = wc.Run(ctx, []byte("UPDATE wl.t SET v='c' WHERE id=2;INSERT INTO wl.t VALUES (1,'dup',NULL);SET @y=1"), nil)
	if sqlerr.Code(err) != sqlerr.DupEntry || !equal(counts, []int64{1}) {
		t.Fatalf("counts %v, error %v; want [1] and a duplicate key", counts, err)
	}
	var y sql.NullInt64
	if err := c.QueryRowContext(ctx, "SELECT @y").Scan(&y); err != nil || y.Valid {
		t.Fatalf("@y %v (%v): the statement after the failed one ran", y, err)
	}
}

// TestArguments: arguments are written into the statement and read back
// as they were, whatever their bytes.
func TestArguments(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	for i, v := range []string{"plain", "it's", `back\slash`, "tab\tnul\x00", "ünïcode", "?"} {
		if _, err := db.ExecContext(ctx, "INSERT INTO wl.t VALUES (?, ?, ?)", i, v, []byte(v+"\xff")); err != nil {
			t.Fatalf("insert %q: %v", v, err)
		}
		var got string
		var b []byte
		if err := db.QueryRowContext(ctx, "SELECT v, b FROM wl.t WHERE id = ?", i).Scan(&got, &b); err != nil {
			t.Fatal(err)
		}
		if got != v || string(b) != v+"\xff" {
			t.Fatalf("read back %q and %q, want %q and %q", got, b, v, v+"\xff")
		}
	}
	var n int
	var f float64
	var ok bool
	var null sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT ?, ?, ?, ?", int64(-7), 0.1, true, nil).Scan(&n, &f, &ok, &null); err != nil {
		t.Fatal(err)
	}
	if n != -7 || f != 0.1 || !ok || null.Valid {
		t.Fatalf("read %d %v %v %v", n, f, ok, null)
	}
	if err := db.QueryRowContext(ctx, "SELECT ?", 1, 2).Scan(&n); err == nil {
		t.Fatal("two arguments for one placeholder accepted")
	}
}

// TestInfile: LOAD DATA LOCAL reads the file the round trip serves; a
// file it does not serve fails the round trip, and the connection goes on.
func TestInfile(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	c, wc := pinned(t, db)
	files := func(name string) ([]byte, bool) {
		if name == "mem-1" {
			return []byte("10\tx\n11\ty\n"), true
		}
		return nil, false
	}
	counts, err := wc.Run(ctx, []byte("LOAD DATA LOCAL INFILE 'mem-1' INTO TABLE wl.t (id, v);SET @z=1"), files)
	if err != nil || !equal(counts, []int64{2, 0}) {
		t.Fatalf("counts %v, error %v", counts, err)
	}
	if _, err := wc.Run(ctx, []byte("LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE wl.t (id, v)"), files); err == nil ||
		!strings.Contains(err.Error(), "not a file binlane serves") {
		t.Fatalf("a file not served: %v", err)
	}
	done := wc.Serve("mem-2", []byte("12\tz\n"))
	if _, err := c.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'mem-2' INTO TABLE wl.t (id, v)"); err != nil {
		t.Fatal(err)
	}
	done()
	var n int
	if err := c.QueryRowContext(ctx, "SELECT COUNT(*) FROM wl.t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("%d rows (%v), want 3", n, err)
	}
}

// TestPipelined: round trips sent before the last one's answer was read
// are answered in order, each with its own counts or error.
func TestPipelined(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	_, wc := pinned(t, db)
	trips := []string{
		"INSERT INTO wl.t VALUES (1,'a',NULL),(2,'b',NULL)",
		"INSERT INTO wl.t VALUES (2,'dup',NULL);SET @never=1",
		"UPDATE wl.t SET v='z';DO SLEEP(0.05)",
		strings.Repeat("DO 1;", 100000) + "DO 1", // 500 KB: several socket writes
	}
	for _, q := range trips {
		if err := wc.Send(ctx, []byte(q)); err != nil {
			t.Fatal(err)
		}
	}
	if wc.IsValid() {
		t.Fatal("a connection with answers unread is valid for the pool")
	}
	wants := [][]int64{{2}, nil, {2, 0}, nil}
	for i := range trips {
		counts, err := wc.Receive(ctx, nil)
		if i == 1 {
			if sqlerr.Code(err) != sqlerr.DupEntry {
				t.Fatalf("round trip %d: %v, want a duplicate key", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if i == 3 {
			if len(counts) != 100001 {
				t.Fatalf("round trip %d: %d counts", i, len(counts))
			}
			continue
		}
		if !equal(counts, wants[i]) {
			t.Fatalf("round trip %d: counts %v, want %v", i, counts, wants[i])
		}
	}
	if !wc.IsValid() {
		t.Fatal("connection not valid after every answer was read")
	}
}

// TestRunSent: what sent sends goes right behind the round trip Run is
// waiting for, and is answered after it.
func TestRunSent(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	_, wc := pinned(t, db)
	var sendErr error
	counts, err := wc.RunSent(ctx, []byte("INSERT INTO wl.t VALUES (7,'a',NULL),(8,'b',NULL)"), nil, func() {
		if wc.Pending() != 1 {
			t.Errorf("%d round trips pending when sent runs, want 1", wc.Pending())
		}
		sendErr = wc.SendAfter(ctx, []byte("DO 1;"), []byte("UPDATE wl.t SET v='c' WHERE id>=7"))
	})
	if err != nil || sendErr != nil || !equal(counts, []int64{2}) {
		t.Fatalf("first round trip: counts %v, %v; sent: %v", counts, err, sendErr)
	}
	if counts, err := wc.Receive(ctx, nil); err != nil || !equal(counts, []int64{0, 2}) {
		t.Fatalf("round trip sent behind it: counts %v, %v", counts, err)
	}
}

// TestContextBreaks: a cancelled round trip leaves the connection broken,
// and the pool does not hand it out again.
func TestContextBreaks(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := c.ExecContext(short, "DO SLEEP(2)"); err == nil {
		t.Fatal("a round trip past its deadline succeeded")
	}
	if wc := raw(t, c); wc.IsValid() {
		t.Fatal("an interrupted connection is valid")
	}
	c.Close()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("the pool after an interrupted connection: %v", err)
	}
}

// TestSetup: the connector's statements shape every connection, a
// refused optional one is skipped, a refused required one fails.
func TestSetup(t *testing.T) {
	s, db := open(t, "SET SESSION sql_mode='ANSI_QUOTES'")
	var mode string
	if err := db.QueryRow("SELECT @@session.sql_mode").Scan(&mode); err != nil || mode != "ANSI_QUOTES" {
		t.Fatalf("sql_mode %q (%v)", mode, err)
	}
	cfg := wire.Config{Addr: s.Addr(), User: sandbox.TargetUser, Password: sandbox.AccountPassword}
	opt := sql.OpenDB(&wiresql.Connector{Config: cfg, Optional: []string{"SET SESSION no_such_variable=1"}})
	defer opt.Close()
	if err := opt.Ping(); err != nil {
		t.Fatalf("a refused optional statement failed the connection: %v", err)
	}
	req := sql.OpenDB(&wiresql.Connector{Config: cfg, Setup: []string{"SET SESSION no_such_variable=1"}})
	defer req.Close()
	if err := req.Ping(); sqlerr.Code(err) != sqlerr.UnknownSystemVar {
		t.Fatalf("a refused required statement: %v", err)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSettle: a round trip sent ahead whose answer its sender never reads
// is undone before the connection runs anything else: its rows do not
// survive the next statement (a START TRANSACTION would have committed
// them).
func TestSettle(t *testing.T) {
	_, db := open(t)
	ctx := context.Background()
	c, wc := pinned(t, db)
	if err := wc.Send(ctx, []byte("START TRANSACTION;INSERT INTO wl.t VALUES (1,'sent ahead',NULL)")); err != nil {
		t.Fatal(err)
	}
	if _, err := wc.Run(ctx, []byte("START TRANSACTION;INSERT INTO wl.t VALUES (2,'next',NULL);COMMIT"), nil); err != nil {
		t.Fatal(err)
	}
	if err := wc.Send(ctx, []byte("START TRANSACTION;INSERT INTO wl.t VALUES (3,'sent ahead',NULL)")); err != nil {
		t.Fatal(err)
	}
	var ids []int
	rows, err := c.QueryContext(ctx, "SELECT id FROM wl.t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int
		rows.Scan(&id)
		ids = append(ids, id)
	}
	rows.Close()
	if len(ids) != 1 || ids[0] != 2 {
		t.Fatalf("rows %v, want only 2", ids)
	}
}
