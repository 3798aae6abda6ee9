package position

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlquote"
)

func TestAppendUpdate(t *testing.T) {
	temps := `[{"server":1}]`
	got := string(AppendUpdate(nil, "s", Save{GTID: "0-1-5", File: "b.1", Pos: 42, LastGTID: "0-1-5", SourceTS: 7, Applied: 3,
		ClearDDL: true, TempTables: &temps}, "tok", "@g"))
	for _, part := range []string{"gtid_pos=IF(owner=" + string(sqlquote.AppendString(nil, "tok")) + " AND @g=0,",
		"temp_tables=" + string(sqlquote.AppendString(nil, temps)),
		",NULL)", "binlog_pos=42", "source_ts=FROM_UNIXTIME(7)", "ddl_gtid=''", "applied_trx=applied_trx+3",
		"WHERE name=" + string(sqlquote.AppendString(nil, "s"))} {
		if !strings.Contains(got, part) {
			t.Errorf("missing %q in %s", part, got)
		}
	}
	if plain := string(AppendUpdate(nil, "s", Save{GTID: "0-1-5"}, "tok", "")); strings.Contains(plain, "source_ts") ||
		strings.Contains(plain, "ddl_gtid") || strings.Contains(plain, " AND @") || strings.Contains(plain, "temp_tables") {
		t.Errorf("options leaked into %s", plain)
	}
}

func TestOwnerAndLockNames(t *testing.T) {
	tok := NewOwnerToken()
	o := ParseOwner(tok)
	if o.PID == 0 || o.Host == "" || o.Token != tok {
		t.Errorf("ParseOwner(%q) = %+v", tok, o)
	}
	if ParseOwner("").String() != "nobody" {
		t.Error("empty owner")
	}
	long := strings.Repeat("x", 100)
	if n := lockName(long); len(n) > 64 || n == lockName(long+"y") {
		t.Errorf("lock name %q", n)
	}
	if lockName("s") != "binlane/s" {
		t.Errorf("lock name %q", lockName("s"))
	}
}

// testDB starts a target and returns binlane's least-privilege pool on it,
// with the binlane schema created.
func testDB(t *testing.T) (*sandbox.Server, *sql.DB) {
	t.Helper()
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	db := s.OpenBinlaneT(t, "app")
	if err := Ensure(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return s, db
}

// TestStreamRow covers the stream's row against a server: ownership, the
// state a cut-over leaves, the lock and Running.
func TestStreamRow(t *testing.T) {
	s, db := testDB(t)
	ctx := context.Background()
	if err := Ensure(ctx, db); err != nil { // twice: idempotent
		t.Fatal(err)
	}
	if _, err := Create(ctx, db, State{Name: "s", GTID: "0-1-1"}); err != nil {
		t.Fatal(err)
	}
	if err := TakeOver(ctx, db, "s", "a"); err != nil {
		t.Fatal(err)
	}
	if err := RecordSource(ctx, db, "s", "a", "uuid", "mariadb", "0-1-2", ""); err != nil {
		t.Fatal(err)
	}
	if err := SaveIdle(ctx, db, "s", "a", Save{GTID: "0-1-3", Applied: 1}); err != nil {
		t.Fatal(err)
	}
	var taken *TakenOverError
	if err := SetState(ctx, db, "s", "b", StateError, "x"); !errors.As(err, &taken) {
		t.Fatalf("a non-owner recorded a state: %v", err)
	}
	if err := SaveIdle(ctx, db, "s", "b", Save{GTID: "0-1-9"}); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("a non-owner saved a position: %v", err)
	}
	st, ok, err := Load(ctx, db, "s")
	if err != nil || !ok || st.GTID != "0-1-3" || st.Applied != 1 || st.State != StateRunning || st.SourceID != "uuid" {
		t.Fatalf("%+v %v %v", st, ok, err)
	}

	// A stream cut over keeps that state, whatever its owner records.
	if _, err := db.ExecContext(ctx, "UPDATE "+Table+" SET state = ?, message = 'cut over at 0-1-3' WHERE name = 's'", StateCutOver); err != nil {
		t.Fatal(err)
	}
	var cut *CutOverError
	if err := SetState(ctx, db, "s", "a", StateStopped, ""); !errors.As(err, &cut) {
		t.Fatalf("recorded a state over a cut-over: %v", err)
	}
	if err := RecordSource(ctx, db, "s", "a", "uuid", "mariadb", "0-1-3", ""); !errors.As(err, &cut) || !strings.Contains(err.Error(), "0-1-3") {
		t.Fatalf("a cut-over stream started: %v", err)
	}
	if st, _, _ := Load(ctx, db, "s"); st.State != StateCutOver {
		t.Fatalf("state %q", st.State)
	}

	// The lock: one holder, seen by Running, released with its connection.
	if run, err := Running(ctx, db, "s"); err != nil || run {
		t.Fatalf("running before the lock: %v %v", run, err)
	}
	l, err := Acquire(ctx, db, "s")
	if err != nil {
		t.Fatal(err)
	}
	var busy *BusyError
	if _, err := Acquire(ctx, db, "s"); !errors.As(err, &busy) {
		t.Fatalf("second lock: %v", err)
	}
	if run, err := Running(ctx, db, "s"); err != nil || !run {
		t.Fatalf("not running with the lock: %v %v", run, err)
	}
	if err := l.Check(ctx); err != nil {
		t.Fatal(err)
	}
	l.Release()
	if run, _ := Running(ctx, db, "s"); run {
		t.Fatal("running after release")
	}
	_ = s
}

// TestPauseRequests: one requester at a time; only the requester
// withdraws its request; an account with SELECT and UPDATE on
// binlane.streams (online verify's) can make them.
func TestPauseRequests(t *testing.T) {
	s, db := testDB(t)
	ctx := context.Background()
	if _, err := Create(ctx, db, State{Name: "s", GTID: "0-1-1"}); err != nil {
		t.Fatal(err)
	}
	s.ExecT(t, "CREATE USER checker@'%' IDENTIFIED BY 'pw'", "GRANT SELECT, UPDATE ON binlane.streams TO checker@'%'")
	checker, err := sql.Open("mysql", "checker:pw@tcp("+s.Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer checker.Close()

	if err := RequestPause(ctx, checker, "s", "0-1-5", ByVerify); err != nil {
		t.Fatal(err)
	}
	if err := RequestPause(ctx, checker, "s", "0-1-5", ByVerify); err != nil { // again: no change, no error
		t.Fatal(err)
	}
	var held *PauseHeldError
	if err := RequestPause(ctx, db, "s", "hold", ByPause); !errors.As(err, &held) || held.By != ByVerify {
		t.Fatalf("a second requester replaced the request: %v", err)
	}
	if ok, err := ClearPause(ctx, db, "s", ByPause); ok || err != nil {
		t.Fatalf("another requester withdrew the request: %v %v", ok, err)
	}
	if r, err := PauseAt(ctx, db, "s"); err != nil || r.At != "0-1-5" || r.By != ByVerify || r.CutOver {
		t.Fatalf("%+v %v", r, err)
	}
	if err := RequestPause(ctx, checker, "s", "0-1-6", ByVerify); err != nil { // the same requester moves it
		t.Fatal(err)
	}
	if ok, err := ClearPause(ctx, checker, "s", ByVerify); !ok || err != nil {
		t.Fatalf("withdraw: %v %v", ok, err)
	}
	if r, _ := PauseAt(ctx, db, "s"); r != (PauseRequest{}) {
		t.Fatalf("left %+v", r)
	}
	if err := RequestPause(ctx, db, "nope", "hold", ByPause); err == nil || !strings.Contains(err.Error(), "no stream") {
		t.Fatalf("unknown stream: %v", err)
	}
}

// TestCutoverJournal: the journal's steps, the hand-over's checks, and a
// reverse stream prepared in place of one that was cut over.
func TestCutoverJournal(t *testing.T) {
	_, db := testDB(t)
	ctx := context.Background()
	if _, err := Create(ctx, db, State{Name: "s", GTID: "0-1-5"}); err != nil {
		t.Fatal(err)
	}
	if err := BeginCutover(ctx, db, "s", "t1", "s-reverse"); err != nil {
		t.Fatal(err)
	}
	if err := BeginCutover(ctx, db, "s", "t2", ""); err == nil {
		t.Fatal("a second cut-over began beside an unfinished one")
	}
	if err := UpdateCutover(ctx, db, "s", "t2", map[CutoverColumn]any{CutoverFrozeSource: "read-only"}); err == nil {
		t.Fatal("a process that does not hold the journal wrote it")
	}
	// A misspelled column fails, and writes nothing (not even the good one).
	if err := UpdateCutover(ctx, db, "s", "t1", map[CutoverColumn]any{CutoverFrozeSource: "read-only", "froze_sorce": "x"}); err == nil ||
		!strings.Contains(err.Error(), "froze_sorce") {
		t.Fatalf("a misspelled journal column: %v", err)
	}
	if c, _, err := LoadCutover(ctx, db, "s"); err != nil || c.FrozeSource != "" {
		t.Fatalf("a refused update wrote froze_source %q (%v)", c.FrozeSource, err)
	}
	if err := UpdateCutover(ctx, db, "s", "t1", map[CutoverColumn]any{CutoverFrozeSource: "read-only", CutoverSourceGTID: "0-1-5"}); err != nil {
		t.Fatal(err)
	}
	same := func(saved string) bool { return saved == "0-1-5" }
	// Not held for this cut-over: refused.
	if err := HandOver(ctx, db, "s", "t1", "0-1-5", "0-2-9", true, same); err == nil {
		t.Fatal("handed over without the cut-over's pause request")
	}
	if err := RequestPause(ctx, db, "s", "0-1-5", ByCutover); err != nil {
		t.Fatal(err)
	}
	if err := HandOver(ctx, db, "s", "t1", "0-1-5", "0-2-9", true, func(string) bool { return false }); err == nil {
		t.Fatal("handed over a stream not at the position")
	}
	if err := HandOver(ctx, db, "s", "t1", "0-1-5", "0-2-9", true, same); err != nil {
		t.Fatal(err)
	}
	c, ok, err := LoadCutover(ctx, db, "s")
	if err != nil || !ok || c.State != CutoverHandedOver || c.TargetGTID != "0-2-9" || !c.TargetReadOnly || c.FrozeSource != "read-only" ||
		c.Reverse != "s-reverse" || c.HandedOverAt.IsZero() || time.Since(c.StartedAt) > time.Minute {
		t.Fatalf("%+v %v %v", c, ok, err)
	}
	if err := HandOver(ctx, db, "s", "t1", "0-1-5", "0-2-9", true, same); err == nil {
		t.Fatal("handed over twice")
	}
	if st, _, _ := Load(ctx, db, "s"); st.State != StateCutOver || !strings.Contains(st.Message, "0-1-5") || st.PauseAt != "0-1-5" {
		t.Fatalf("stream after the hand-over: %+v", st)
	}

	// Prepare: refused over a live stream, allowed over a cut-over one.
	if _, err := Create(ctx, db, State{Name: "live", GTID: "0-9-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "UPDATE "+Table+" SET state = 'running', applied_trx = 3 WHERE name = 'live'"); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(ctx, db, "live", "0-2-9", ""); err == nil {
		t.Fatal("prepared over a live stream")
	}
	if err := Prepare(ctx, db, "s", "0-2-9", "prepared"); err != nil {
		t.Fatal(err)
	}
	if err := Prepare(ctx, db, "s", "0-2-9", "prepared"); err != nil { // a rerun
		t.Fatal(err)
	}
	st, _, _ := Load(ctx, db, "s")
	if st.State != StateStopped || st.GTID != "0-2-9" || st.PauseAt != "" || st.Applied != 0 || st.Message != "prepared" {
		t.Fatalf("prepared stream: %+v", st)
	}
	if _, ok, _ := LoadCutover(ctx, db, "s"); ok {
		t.Fatal("the old journal was kept")
	}
}

// TestOlderStreamsTable: status, wait and pause read a stream table an
// older binlane created (no temp_tables column: its replicate still runs);
// the next replicate's Ensure adds the column, and the temporary tables
// saved with a position read back.
func TestOlderStreamsTable(t *testing.T) {
	s, db := testDB(t)
	ctx := context.Background()
	s.ExecT(t, "ALTER TABLE "+Table+" DROP COLUMN temp_tables")
	if _, err := Create(ctx, db, State{Name: "s", GTID: "0-1-1"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := Load(ctx, db, "s"); err != nil || !ok {
		t.Fatalf("Load on an older table: %v %v", ok, err)
	}
	if all, err := List(ctx, db); err != nil || len(all) != 1 {
		t.Fatalf("List on an older table: %d streams, %v", len(all), err)
	}
	if err := Ensure(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := TakeOver(ctx, db, "s", "a"); err != nil {
		t.Fatal(err)
	}
	temps := `[{"server":1,"thread":2,"tables":[["d","t"]]}]`
	if err := SaveIdle(ctx, db, "s", "a", Save{GTID: "0-1-2", Applied: 1, TempTables: &temps}); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadTempTables(ctx, db, "s"); err != nil || got != temps {
		t.Fatalf("LoadTempTables = %q, %v; want %q", got, err, temps)
	}
	if err := SaveIdle(ctx, db, "s", "a", Save{GTID: "0-1-3", Applied: 1}); err != nil {
		t.Fatal(err)
	}
	if got, _ := LoadTempTables(ctx, db, "s"); got != temps {
		t.Fatalf("a save without a change replaced the temporary tables: %q", got)
	}
}
