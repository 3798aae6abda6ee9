package replica

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/binlog/binlogtest"
	"github.com/binlane/binlane/internal/gtid"
)

// stream builds synthetic events with consecutive positions in one file.
type synth struct {
	file string
	pos  uint32
}

func (s *synth) ev(data any) *binlog.Event {
	const size = 50
	s.pos += size
	return &binlog.Event{Header: binlog.Header{Timestamp: 1, EventSize: size, LogPos: s.pos}, File: s.file, Pos: uint64(s.pos - size), Data: data}
}

func mariaGTID(seq uint64, flags byte) *binlog.MariaGTIDEvent {
	return &binlog.MariaGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MariaDB, ServerID: 1, Seq: seq}, Flags2: flags}
}

func query(q string) *binlog.QueryEvent { return &binlog.QueryEvent{Query: []byte(q)} }

var sid = gtid.UUID{1, 2, 3}

func mysqlGTID(seq uint64) *binlog.MySQLGTIDEvent {
	return &binlog.MySQLGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MySQL, SID: sid, Seq: seq}}
}

type step struct {
	data     any
	complete bool
}

func runSteps(t *testing.T, name string, start Position, steps []step) *Tracker {
	t.Helper()
	tr := NewTracker(start)
	s := &synth{file: "binlog.000007", pos: 1000}
	for i, st := range steps {
		ev := s.ev(st.data)
		if got := tr.Observe(ev); got != st.complete {
			t.Fatalf("%s: step %d (%T): complete=%v, want %v", name, i, st.data, got, st.complete)
		}
		if st.complete && (tr.Position().Pos != uint64(s.pos) || tr.Position().File != s.file) {
			t.Fatalf("%s: step %d: position %s:%d, want %d", name, i, tr.Position().File, tr.Position().Pos, s.pos)
		}
	}
	return tr
}

func TestTrackerMariaDBGroups(t *testing.T) {
	tr := runSteps(t, "mariadb", StartAtGTID(gtid.Set{}), []step{
		{mariaGTID(1, binlog.MariaFlStandalone|binlog.MariaFlDDL), false}, {query("CREATE TABLE t (a INT)"), true},
		{mariaGTID(2, binlog.MariaFlTransactional), false}, {&binlog.TableMap{}, false}, {&binlog.RowsEvent{}, false}, {&binlog.XIDEvent{}, true},
		{mariaGTID(3, binlog.MariaFlPreparedXA), false}, {&binlog.RowsEvent{}, false}, {query("XA END X'78',X'',1"), false}, {&binlog.XAPrepareEvent{}, true},
		{mariaGTID(4, binlog.MariaFlStandalone|binlog.MariaFlCompletedXA), false}, {query("XA COMMIT X'78',X'',1"), true},
		{mariaGTID(5, 0), false}, {&binlog.RowsEvent{}, false}, {query("ROLLBACK TO SAVEPOINT a"), false}, {query("COMMIT"), true},
		{mariaGTID(6, 0), false}, {query("SAVEPOINT a"), false}, {query("ROLLBACK"), true},
		{&binlog.HeartbeatEvent{File: "x", Pos: 99}, false},
	})
	if got := tr.Position().GTIDs.String(); got != "0-1-6" || tr.LastGTID().Seq != 6 || tr.InGroup() {
		t.Fatalf("position %s, last %s", got, tr.LastGTID())
	}
}

func TestTrackerMySQLGroups(t *testing.T) {
	payload := &binlog.TransactionPayloadEvent{Events: []*binlog.Event{
		{Data: query("BEGIN")}, {Data: &binlog.TableMap{}}, {Data: &binlog.RowsEvent{}}, {Data: &binlog.XIDEvent{}},
	}}
	tr := runSteps(t, "mysql", StartAtGTID(gtid.Set{}), []step{
		{mysqlGTID(1), false}, {query("CREATE TABLE t (a INT)"), true},
		{mysqlGTID(2), false}, {query("BEGIN"), false}, {&binlog.RowsEvent{}, false}, {&binlog.XIDEvent{}, true},
		{mysqlGTID(3), false}, {query("BEGIN"), false}, {&binlog.RowsEvent{}, false}, {query("COMMIT"), true},
		{mysqlGTID(4), false}, {query("XA START X'78',X'',1"), false}, {&binlog.RowsEvent{}, false},
		{query("XA END X'78',X'',1"), false}, {&binlog.XAPrepareEvent{}, true},
		{mysqlGTID(5), false}, {query("/* c */ XA COMMIT X'78',X'',1"), true},
		{mysqlGTID(6), false}, {query("XA START X'79',X'',1"), false}, {query("XA END X'79',X'',1"), false}, {query("xa commit X'79',X'',1 ONE PHASE"), true},
		{mysqlGTID(7), false}, {payload, true},
		{&binlog.MySQLGTIDEvent{Anonymous: true}, false}, {query("BEGIN"), false}, {&binlog.XIDEvent{}, true},
	})
	if got := tr.Position().GTIDs.String(); got != sid.String()+":1-7" {
		t.Fatalf("position %s", got)
	}
}

func TestTrackerPositionsAndRestart(t *testing.T) {
	start := StartAtGTID(mustSet(t, "0-1-10,1-1-3"))
	tr := NewTracker(start)
	// A fake rotate names the file but is no boundary.
	tr.Observe(&binlog.Event{File: "binlog.000002", Data: &binlog.RotateEvent{Fake: true, NextFile: "binlog.000002", Position: 4}})
	if p := tr.Position(); p.File != "" {
		t.Fatalf("fake rotate moved the position to %s:%d", p.File, p.Pos)
	}
	// MariaDB's fake GTID list after skipped groups carries the real offset.
	tr.Observe(&binlog.Event{Header: binlog.Header{LogPos: 5000, Flags: binlog.FlagArtificial}, File: "binlog.000002",
		Data: &binlog.GTIDListEvent{List: []gtid.GTID{{Flavor: gtid.MariaDB, Seq: 10}}}})
	if p := tr.Position(); p.File != "binlog.000002" || p.Pos != 5000 || p.GTIDs.String() != "0-1-10,1-1-3" {
		t.Fatalf("after fake GTID list: %s:%d %s", p.File, p.Pos, p.GTIDs)
	}
	// A partial group is dropped on Restart and never counted.
	s := &synth{file: "binlog.000002", pos: 5000}
	tr.Observe(s.ev(&binlog.MariaGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MariaDB, Domain: 1, ServerID: 1, Seq: 4}}))
	tr.Observe(s.ev(&binlog.RowsEvent{}))
	tr.Discard()
	if tr.InGroup() {
		t.Fatal("still in a group after Restart")
	}
	if tr.Observe(s.ev(&binlog.XIDEvent{})) {
		t.Fatal("an XID outside a group completed one")
	}
	// A real rotate outside a group moves to the next file.
	tr.Observe(&binlog.Event{Header: binlog.Header{Timestamp: 1}, Data: &binlog.RotateEvent{NextFile: "binlog.000003", Position: 4}})
	if p := tr.Position(); p.File != "binlog.000003" || p.Pos != 4 || !p.GTIDMode || p.GTIDs.String() != "0-1-10,1-1-3" {
		t.Fatalf("after rotate: %+v", p)
	}
	// Positions handed out are copies.
	p := tr.Position()
	p.GTIDs.Add(gtid.GTID{Flavor: gtid.MariaDB, Domain: 5, Seq: 1})
	if tr.Position().GTIDs.String() != "0-1-10,1-1-3" || start.GTIDs.String() != "0-1-10,1-1-3" {
		t.Fatal("tracker shares its GTID set")
	}
}

// TestRefuseTagged: a stream stops, for good, at a tagged transaction and
// says why; untagged and MariaDB transactions pass.
func TestRefuseTagged(t *testing.T) {
	tagged := &binlog.MySQLGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MySQL, SID: sid, Tag: "mytag", Seq: 3}}
	cases := []struct {
		data any
		want string
	}{
		{mysqlGTID(3), ""},
		{&binlog.MariaGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MariaDB, Domain: 0, ServerID: 1, Seq: 3}}, ""},
		{&binlog.XIDEvent{}, ""},
		{tagged, "binlog b.000001:245: Gtid_tagged event: tagged GTIDs (MySQL 8.3+) are not supported: transaction " + sid.String() + ":mytag:3"},
	}
	for _, c := range cases {
		ev := &binlog.Event{File: "b.000001", Pos: 245, Header: binlog.Header{Type: binlog.EventGTIDTagged}, Data: c.data}
		err := refuseTagged(ev)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%T: %v", c.data, err)
		case c.want != "" && (err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.Is(err, gtid.ErrTagged) || retryable(err)):
			t.Errorf("got %v, want a final error starting %q", err, c.want)
		}
	}
}

// TestEveryEventKindAnswered: Observe has a case for every kind of event
// the decoder makes, if only to say why it ignores it.
func TestEveryEventKindAnswered(t *testing.T) {
	binlogtest.RequireAnswered(t, "tracker.go", "Observe")
}

// TestInBodyLeavesTheTrackerAlone: Stream.Next skips its lock for the
// events inBody names, so Observe must change nothing for them, inside a
// group and between groups; the events that open, end or move a group
// are not among them.
func TestInBodyLeavesTheTrackerAlone(t *testing.T) {
	body := []any{&binlog.TableMap{}, &binlog.RowsEvent{}, &binlog.AnnotateRowsEvent{}, &binlog.RowsQueryEvent{},
		&binlog.IntvarEvent{}, &binlog.RandEvent{}, &binlog.UserVarEvent{}}
	for _, open := range []bool{false, true} {
		tr := NewTracker(Position{File: "binlog.000007", Pos: 4})
		s := &synth{file: "binlog.000007", pos: 1000}
		if open {
			tr.Observe(s.ev(mariaGTID(5, 0)))
		}
		for _, d := range body {
			ev := s.ev(d)
			if !inBody(ev) {
				t.Fatalf("%T: not in a group's body", d)
			}
			before := *tr
			before.pos = tr.Position()
			if tr.Observe(ev) {
				t.Fatalf("%T completed a group", d)
			}
			if !reflect.DeepEqual(*tr, before) {
				t.Errorf("open %v: %T changed the tracker: %+v, was %+v", open, d, *tr, before)
			}
		}
	}
	s := &synth{file: "binlog.000007", pos: 1000}
	for _, d := range []any{mariaGTID(6, 0), mysqlGTID(6), query("BEGIN"), query("COMMIT"), &binlog.XIDEvent{},
		&binlog.XAPrepareEvent{}, &binlog.RotateEvent{}, &binlog.GTIDListEvent{}, &binlog.TransactionPayloadEvent{}} {
		if inBody(s.ev(d)) {
			t.Errorf("%T counted as a group's body", d)
		}
	}
}
