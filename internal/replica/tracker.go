package replica

import (
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
)

// Tracker follows event groups (transactions) through a stream and keeps
// the position after the last complete one: the only kind of position a
// stream may resume from, because the table maps a transaction's row events
// need are inside the transaction.
//
// Groups:
//   - MariaDB: GTID … XID; GTID … XA_PREPARE; GTID … QUERY COMMIT/ROLLBACK
//     (non-transactional tables); a standalone GTID (flag 1) and its single
//     QUERY (DDL, XA COMMIT/ROLLBACK of a prepared transaction).
//   - MySQL: GTID (or anonymous GTID) then BEGIN … XID / COMMIT / ROLLBACK /
//     XA_PREPARE, or XA START … XA_PREPARE / XA COMMIT ONE PHASE; or GTID and
//     one QUERY without BEGIN (DDL). Events inside a TRANSACTION_PAYLOAD
//     count as if they were in the stream.
//
// Fake rotates and heartbeats never move the position. A fake GTID_LIST
// (MariaDB, timestamp 0) sent after skipped groups carries the real offset
// in its header, which moves the file position but not the GTID set.
//
// A Tracker is not safe for concurrent use.
type Tracker struct {
	pos     Position // after the last complete group
	open    bool     // inside a group
	cur     gtid.GTID
	mariaDB bool // the open group started with a MariaDB GTID event
	single  bool // the group ends with its first QUERY (standalone / no BEGIN)
	last    gtid.GTID
}

// NewTracker starts tracking from start (its mode is kept in Position).
func NewTracker(start Position) *Tracker { return &Tracker{pos: start.Clone()} }

// Position returns the position after the last complete group.
func (t *Tracker) Position() Position { return t.pos.Clone() }

// InGroup reports whether a group has started and not completed.
func (t *Tracker) InGroup() bool { return t.open }

// LastGTID returns the GTID of the last complete group (zero if none or
// anonymous).
func (t *Tracker) LastGTID() gtid.GTID { return t.last }

// Discard forgets a partial group, as after a Restart: its events will be
// sent again.
func (t *Tracker) Discard() { t.open = false }

// Observe accounts for one event in stream order and reports whether it
// completed a group.
func (t *Tracker) Observe(ev *binlog.Event) bool {
	switch d := ev.Data.(type) {
	case *binlog.RotateEvent:
		t.rotate(ev, d)
	case *binlog.GTIDListEvent:
		if ev.Header.Timestamp == 0 && ev.Header.LogPos != 0 && !t.open {
			t.pos.File, t.pos.Pos = ev.File, uint64(ev.Header.LogPos)
		}
	case *binlog.MariaGTIDEvent:
		t.begin(d.GTID, true, d.Standalone())
	case *binlog.MySQLGTIDEvent:
		t.begin(d.GTID, false, true)
	case *binlog.QueryEvent:
		return t.query(ev, d)
	case *binlog.XIDEvent, *binlog.XAPrepareEvent:
		return t.complete(ev)
	case *binlog.TransactionPayloadEvent:
		return t.payload(ev, d)
	case *binlog.FormatDescriptionEvent, *binlog.PreviousGTIDsEvent, *binlog.BinlogCheckpointEvent:
		// Ignored: a file's frame, between groups; only a real rotate moves
		// the position between them.
	case *binlog.HeartbeatEvent:
		// Ignored: it never moves a saved position.
	case *binlog.TableMap, *binlog.RowsEvent, *binlog.AnnotateRowsEvent, *binlog.RowsQueryEvent,
		*binlog.IntvarEvent, *binlog.RandEvent, *binlog.UserVarEvent, *binlog.LoadBlockEvent, *binlog.DeleteFileEvent:
		// Ignored: the body of a group, which neither opens nor ends one.
	case *binlog.IncidentEvent, *binlog.SkippedEvent:
		// Ignored: no part of a group (the applier stops at an incident).
	}
	return false
}

// inBody reports whether ev is of a kind Observe ignores inside a group:
// most of a stream's events, which a caller that shares a tracker under a
// lock need not lock for (Stream.Next: a lock per event was 2-4% of
// binlane's CPU on order entry and the shop, 2026-12-02).
func inBody(ev *binlog.Event) bool {
	switch ev.Data.(type) {
	case *binlog.TableMap, *binlog.RowsEvent, *binlog.AnnotateRowsEvent, *binlog.RowsQueryEvent,
		*binlog.IntvarEvent, *binlog.RandEvent, *binlog.UserVarEvent:
		return true
	}
	return false
}

func (t *Tracker) rotate(ev *binlog.Event, r *binlog.RotateEvent) {
	if r.Fake {
		// It names the file the dump starts in, not a group boundary: in
		// GTID mode the start may be anywhere in that file.
		return
	}
	// A real rotate ends its file: outside a group, the next file's start
	// is as good a boundary as the end of the last group, and survives a
	// purge of the old file.
	if !t.open {
		t.pos.File, t.pos.Pos = r.NextFile, r.Position
	}
}

func (t *Tracker) begin(g gtid.GTID, mariaDB, single bool) {
	t.open, t.cur, t.mariaDB, t.single = true, g, mariaDB, single
}

func (t *Tracker) query(ev *binlog.Event, q *binlog.QueryEvent) bool {
	kind := q.Kind()
	if !t.open {
		if kind == binlog.QueryBegin {
			// A group without GTID (old MySQL, or GTIDs off).
			t.begin(gtid.GTID{}, false, false)
			return false
		}
		if kind == binlog.QueryOther || kind == binlog.QueryCommit || kind == binlog.QueryXA {
			t.begin(gtid.GTID{}, false, true)
			return t.complete(ev)
		}
		return false
	}
	if t.single {
		if t.mariaDB {
			return t.complete(ev) // standalone: the one statement of the group
		}
		switch {
		case kind == binlog.QueryBegin, kind == binlog.QueryXA && q.XAVerb() == "START":
			t.single = false // MySQL: BEGIN opens a transaction
			return false
		}
		return t.complete(ev)
	}
	switch kind {
	case binlog.QueryCommit, binlog.QueryRollback:
		return t.complete(ev)
	case binlog.QueryXA:
		if v := q.XAVerb(); v == "COMMIT" || v == "ROLLBACK" {
			return t.complete(ev)
		}
	}
	return false
}

// payload feeds a MySQL transaction payload's inner events.
func (t *Tracker) payload(ev *binlog.Event, p *binlog.TransactionPayloadEvent) bool {
	done := false
	for _, inner := range p.Events {
		// Inner events have no position of their own: the payload's end is
		// the group's end.
		e := *inner
		e.File, e.Pos, e.Header.LogPos, e.Header.EventSize = ev.File, ev.Pos, ev.Header.LogPos, ev.Header.EventSize
		done = t.Observe(&e) || done
	}
	return done
}

func (t *Tracker) complete(ev *binlog.Event) bool {
	if !t.open {
		return false
	}
	t.open = false
	if !t.cur.IsZero() {
		t.pos.GTIDs.Add(t.cur)
	}
	t.last = t.cur
	t.pos.File = ev.File
	if ev.Header.LogPos != 0 {
		t.pos.Pos = uint64(ev.Header.LogPos)
	} else {
		t.pos.Pos = ev.NextPos() // MariaDB 11.4+ writes 0 for cached events
	}
	return true
}
