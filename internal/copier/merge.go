package copier

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/txn"
)

// Merger puts copied chunks into the stream of source transactions, each
// exactly where its snapshot falls: after the last transaction its
// snapshot position contains, before the first one it does not. That one
// rule makes the copy correct by construction:
//
//   - a change the snapshot saw is in the chunk's rows; the applier skips
//     it for rows not copied yet (see the coverage filter), so it is
//     neither lost nor applied twice;
//   - a change after the snapshot comes after the chunk in the stream, and
//     the applier, which commits in stream order, applies it on top of the
//     copied rows — also a delete of a row the chunk copied, which is why
//     chunks are not written with INSERT IGNORE or REPLACE.
//
// The stream must not pass a chunk's position before the chunk is there.
// A reader therefore takes a ticket before it starts its snapshot: while a
// ticket's position is unknown the merger lets no transaction through, so
// the snapshot sees at least everything the stream has passed; once the
// position is known, transactions it contains flow on, and the stream waits
// at it for the chunk. A table copied in one pass arrives as several parts
// of one ticket, emitted back to back.
//
// A position is a GTID state or, when the source wrote while the snapshot
// began (see snapshot.Query), a binlog coordinate. The stream reads the
// same binlog and knows where each transaction starts and ends in it; the
// coordinate is a transaction boundary (the end of the last group the
// snapshot holds), so a transaction that starts before it is in the
// snapshot and one that starts at or after it is not. That places a chunk
// as exactly as a GTID state does, without asking the source to read its
// binlog file up to the coordinate (BINLOG_GTID_POS), which under a write
// load cost the source more CPU than the copy itself.
//
// The merger is the only goroutine that touches its state; readers talk to
// it through channels. It assigns every part its place (Seq) in the stream.
type Merger struct {
	reserve chan *Ticket
	done    chan struct{} // closed when Run returns: nobody takes parts
	pos     gtid.Set      // everything emitted so far
	seq     uint64
	tickets []*Ticket // unfinished (placed before the first one due)
	open    bool      // a transaction sent in parts is half emitted
	openID  gtid.GTID // and its GTID
	// lastStart is where the last transaction emitted starts in the
	// source's binlog; at is a place before which the stream holds every
	// transaction (the end of the last one emitted whole, or a heartbeat's
	// place). Unset before the first.
	lastStart, at coord
}

// Ticket is a reader's place in the stream.
type Ticket struct {
	posKnown chan ticketPos
	placed   chan bool // the merger's answer to SetPos
	parts    chan ticketPart
	pos      snapshot.Position
	known    bool
	done     <-chan struct{} // the merger's
	// gone is closed when the reader gives the ticket up after SetPos (see
	// GiveUp): the merger, reaching the ticket, places nothing (more).
	gone   chan struct{}
	giveUp sync.Once
}

// errChunkAbandoned ends a chunk sent in parts whose reader failed.
var errChunkAbandoned = errors.New("copier: the copy of a table was interrupted")

// errMergerDone: the stream stopped; nothing more is placed.
var errMergerDone = errors.New("copier: the stream stopped")

// NewMerger returns a merger for a stream starting after start.
func NewMerger(start gtid.Set) *Merger {
	return &Merger{reserve: make(chan *Ticket), done: make(chan struct{}), pos: start.Clone()}
}

// Reserve takes a ticket. Call it before starting the snapshot, then
// SetPos with the snapshot's position (or Cancel).
func (m *Merger) Reserve(ctx context.Context) (*Ticket, error) {
	t := &Ticket{posKnown: make(chan ticketPos, 1), placed: make(chan bool, 1), parts: make(chan ticketPart), done: m.done,
		gone: make(chan struct{})}
	select {
	case m.reserve <- t:
		return t, nil
	case <-m.done:
		return nil, errMergerDone
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ticketPart is a part of a ticket's chunk (a nil chunk: the ticket is
// given up).
type ticketPart struct {
	c    *txn.Chunk
	last bool
}

type ticketPos struct {
	pos       snapshot.Position
	cancelled bool
}

// SetPos gives the ticket's snapshot position. It reports false when the
// stream has already passed a transaction the snapshot does not contain:
// the binlog (which the stream reads) is written before the storage engine
// commits, so the stream can be a transaction ahead of a snapshot begun
// after it. Such a chunk has no place left; the ticket is gone, and the
// reader reads again in a new snapshot.
func (t *Ticket) SetPos(ctx context.Context, pos snapshot.Position) (bool, error) {
	t.posKnown <- ticketPos{pos: pos}
	select {
	case ok := <-t.placed:
		return ok, nil
	case <-t.done:
		return false, errMergerDone
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// Cancel gives a ticket up before its position is known (the snapshot
// could not start). After SetPos, give up with GiveUp instead.
func (t *Ticket) Cancel() { t.posKnown <- ticketPos{cancelled: true} }

// GiveUp gives up a ticket whose position was given (or whose SetPos was
// interrupted, so that the merger may or may not have placed it): when the
// stream gets to it, nothing (more) of its chunk is placed, and parts sent
// already are rolled back by the applier. It never blocks, so the reader
// needs no goroutine to wait for the merger. Calling it again does nothing.
func (t *Ticket) GiveUp() { t.giveUp.Do(func() { close(t.gone) }) }

// Send hands over a part of the ticket's chunk (a chunk of a range is one
// part, last); it blocks until the stream is at the ticket's position.
func (t *Ticket) Send(ctx context.Context, c *txn.Chunk, last bool) error {
	p := ticketPart{c: c, last: last}
	select {
	case t.parts <- p:
		return nil
	case <-t.done:
		return errMergerDone
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Merger) drop(t *Ticket) {
	for i, x := range m.tickets {
		if x == t {
			m.tickets = append(m.tickets[:i], m.tickets[i+1:]...)
			return
		}
	}
}

// Run merges until in closes (then it returns nil) or ctx ends.
func (m *Merger) Run(ctx context.Context, in *txn.Pipe, out *txn.Pipe) error {
	defer close(m.done)
	for {
		if err := m.flushDue(ctx, out); err != nil {
			return err
		}
		var intake <-chan txn.Part
		if m.canTake() {
			intake = in.C()
		}
		var known chan ticketPos
		var unknown *Ticket
		for _, t := range m.tickets {
			if !t.known {
				unknown, known = t, t.posKnown
				break
			}
		}
		select {
		case t := <-m.reserve:
			m.tickets = append(m.tickets, t)
		case tp := <-known:
			if tp.cancelled {
				m.drop(unknown)
				continue
			}
			if !m.placeable(tp.pos) {
				m.drop(unknown)
				unknown.placed <- false
				continue
			}
			unknown.pos, unknown.known = tp.pos, true
			unknown.placed <- true
		case p, ok := <-intake:
			if !ok {
				return nil
			}
			in.Taken(&p)
			if p.Txn == nil && p.Mark != nil {
				if c := (coord{p.Mark.File, p.Mark.Pos}); !m.open && !c.before(m.at) {
					m.at = c
				}
				continue
			}
			if err := m.emit(ctx, out, p); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// canTake reports whether the next transaction part may be read: none of a
// half-emitted transaction is held back; a new transaction waits while a
// ticket's position is unknown.
func (m *Merger) canTake() bool {
	if m.open {
		return true
	}
	for _, t := range m.tickets {
		if !t.known {
			return false
		}
	}
	return true
}

// placeable reports whether a snapshot at pos can still be placed: the
// stream has emitted nothing the snapshot lacks, and a half-emitted
// transaction is in it (the chunk then goes after it). For a coordinate:
// the last transaction emitted (half or whole) starts before it.
func (m *Merger) placeable(pos snapshot.Position) bool {
	if !pos.HasGTIDs {
		return !m.lastStart.set() || m.lastStart.before(coordOf(pos))
	}
	return pos.GTIDs.ContainsSet(m.pos) && (!m.open || m.openID.Flavor == 0 || pos.GTIDs.Contains(m.openID))
}

// dueBefore reports whether a placed ticket's chunk goes before t, the
// next transaction: t is not in its snapshot. Every transaction emitted
// before t is (see placeable and emit), so this is the chunk's place.
func (t *Ticket) dueBefore(next *txn.Txn) (bool, error) {
	if t.pos.HasGTIDs {
		return !t.pos.GTIDs.Contains(next.GTID), nil
	}
	if next.StartPos == 0 {
		return false, fmt.Errorf("copier: transaction %s has no binlog position to place a chunk read at %s by", next.GTID, t.pos)
	}
	return !(coord{next.File, next.StartPos}).before(coordOf(t.pos)), nil
}

// reached reports whether the stream, with nothing half emitted, holds
// everything the ticket's snapshot holds: its chunk can go now.
func (m *Merger) reached(t *Ticket) bool {
	if t.pos.HasGTIDs {
		return m.pos.ContainsSet(t.pos.GTIDs)
	}
	return m.at.set() && !m.at.before(coordOf(t.pos))
}

// emit sends a transaction part, first the chunks due before it.
func (m *Merger) emit(ctx context.Context, out *txn.Pipe, p txn.Part) error {
	if p.First && !m.open {
		if err := m.emitDue(ctx, out, p.Txn); err != nil {
			return err
		}
		m.seq++
		p.Txn.Seq = m.seq
		m.openID = p.Txn.GTID
		m.lastStart = coord{p.Txn.File, p.Txn.StartPos}
	}
	m.open = !p.Last
	if err := out.Send(ctx, p); err != nil {
		return err
	}
	// An aborted transaction is sent again from its start (after the
	// stream restarts): it is not part of the position.
	if p.Last && p.Abort == nil {
		if p.Txn.GTID.Flavor != 0 {
			m.pos.Add(p.Txn.GTID)
		}
		m.at = coord{p.Txn.File, p.Txn.EndPos}
	}
	return nil
}

// emitDue emits the chunks due before next (in the order their tickets
// were placed: chunks due at one place commute, each holding exactly what
// the stream emitted so far).
func (m *Merger) emitDue(ctx context.Context, out *txn.Pipe, next *txn.Txn) error {
	return m.emitWhere(ctx, out, func(t *Ticket) (bool, error) { return t.dueBefore(next) })
}

// flushDue emits the chunks whose position the stream has reached (when no
// transaction is half emitted).
func (m *Merger) flushDue(ctx context.Context, out *txn.Pipe) error {
	if m.open {
		return nil
	}
	return m.emitWhere(ctx, out, func(t *Ticket) (bool, error) { return m.reached(t), nil })
}

// emitWhere emits the chunks of the placed tickets that due says go now,
// and keeps the others.
func (m *Merger) emitWhere(ctx context.Context, out *txn.Pipe, due func(*Ticket) (bool, error)) error {
	kept := m.tickets[:0]
	for i, t := range m.tickets {
		now := false
		if t.known {
			var err error
			if now, err = due(t); err != nil {
				m.tickets = append(kept, m.tickets[i:]...)
				return err
			}
		}
		if !now {
			kept = append(kept, t)
			continue
		}
		if err := m.emitTicket(ctx, out, t); err != nil {
			m.tickets = append(kept, m.tickets[i+1:]...)
			return err
		}
	}
	clear(m.tickets[len(kept):])
	m.tickets = kept
	return nil
}

// emitTicket waits for the ticket's chunk and emits all its parts. The
// stream waits meanwhile: it is at the chunk's place.
func (m *Merger) emitTicket(ctx context.Context, out *txn.Pipe, t *Ticket) error {
	if t.pos.HasGTIDs && !m.pos.ContainsSet(t.pos.GTIDs) ||
		!t.pos.HasGTIDs && m.lastStart.set() && !m.lastStart.before(coordOf(t.pos)) {
		return fmt.Errorf("copier: the stream passed a chunk's position (%s, stream at %s, %s:%d)", t.pos, m.pos,
			m.lastStart.file, m.lastStart.off)
	}
	header := &txn.Txn{}
	for first := true; ; first = false {
		var tp ticketPart
		select {
		case tp = <-t.parts:
		case <-t.gone: // parts are sent synchronously: none is pending
		case <-ctx.Done():
			return ctx.Err()
		}
		c := tp.c
		if c == nil { // the reader gave up: nothing (more) to place
			if !first {
				// Parts of a table copied in one pass went ahead: the applier
				// rolls them back.
				return out.Send(ctx, txn.Part{Txn: header, Last: true, Abort: errChunkAbandoned})
			}
			return nil
		}
		if first {
			m.seq++
			header.Seq = m.seq
		}
		if err := out.Send(ctx, txn.Part{Txn: header, Chunk: c, First: first, Last: tp.last, Bytes: c.Bytes}); err != nil {
			return err
		}
		if tp.last {
			return nil
		}
	}
}

// coord is a place in the source's binlog.
type coord struct {
	file string
	off  uint64
}

func coordOf(p snapshot.Position) coord { return coord{p.File, p.Offset} }

func (c coord) set() bool { return c.file != "" }

// before orders places in the binlog: files by their sequence number (the
// suffix after the last dot, which the server increments), then offsets.
func (c coord) before(d coord) bool {
	if c.file != d.file {
		return fileSeq(c.file) < fileSeq(d.file)
	}
	return c.off < d.off
}

func fileSeq(name string) uint64 {
	n, _ := strconv.ParseUint(name[strings.LastIndexByte(name, '.')+1:], 10, 64)
	return n
}

// IsStopped reports the error readers get once the stream stopped.
func IsStopped(err error) bool { return errors.Is(err, errMergerDone) }
