package apply

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// TestSequencerCarriesTempTables: the temporary tables a transaction
// changed are written with the first position saved after it, also when
// it committed in memory only (an empty transaction), and not again.
func TestSequencerCarriesTempTables(t *testing.T) {
	start, err := gtid.ParseSet("0-1-1")
	if err != nil {
		t.Fatal(err)
	}
	s := newSequencer(0, start, "b.1", 4)
	changed := `[{"server":1}]`
	tx := func(seq uint64, temps *string) []*work {
		return []*work{{t: &txn.Txn{Seq: seq, GTID: gtid.GTID{Flavor: gtid.MariaDB, ServerID: 1, Seq: seq + 1}, TempTables: temps}}}
	}
	pos, save := s.next(tx(1, &changed))
	if save.TempTables == nil || *save.TempTables != changed {
		t.Fatalf("first save: temporary tables %v", save.TempTables)
	}
	s.commit(pos, save, false) // an empty transaction: nothing written
	pos, save = s.next(tx(2, nil))
	if save.TempTables == nil || *save.TempTables != changed {
		t.Fatalf("the next save lost the unsaved change: %v", save.TempTables)
	}
	s.commit(pos, save, true)
	if _, save = s.next(tx(3, nil)); save.TempTables != nil {
		t.Fatalf("a save after the written one writes them again: %q", *save.TempTables)
	}
}

// TestSequencerLastGTID: the position saved after a merged commit names
// the last transaction with a GTID in it (copied chunks and transactions
// read without GTIDs have none), or keeps the one before when none has.
func TestSequencerLastGTID(t *testing.T) {
	g := func(domain uint32, seq uint64) gtid.GTID {
		return gtid.GTID{Flavor: gtid.MariaDB, Domain: domain, ServerID: 1, Seq: seq}
	}
	tx := func(id gtid.GTID) *work { return &work{t: &txn.Txn{GTID: id}} }
	chunk := &work{t: &txn.Txn{}, chunk: &txn.Chunk{}}
	cases := []struct {
		name string
		ws   []*work
		want string
	}{
		{"one", []*work{tx(g(0, 5))}, "0-1-5"},
		{"the last of several", []*work{tx(g(0, 5)), tx(g(1, 9)), tx(g(0, 6))}, "0-1-6"},
		{"a chunk after it", []*work{tx(g(0, 5)), tx(g(0, 6)), chunk}, "0-1-6"},
		{"one without a GTID after it", []*work{tx(g(0, 5)), tx(gtid.GTID{})}, "0-1-5"},
		{"none: the one before stays", []*work{chunk, tx(gtid.GTID{})}, "0-1-4"},
	}
	start, err := gtid.ParseSet("0-1-4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		s := newSequencer(0, start.Clone(), "b.1", 4)
		s.lastGTID = "0-1-4"
		if _, save := s.next(c.ws); save.LastGTID != c.want {
			t.Errorf("%s: last GTID %q, want %q", c.name, save.LastGTID, c.want)
		}
	}
}

// TestSequencerDomainTurns: with MariaDB GTID domains, a unit's commit
// waits only for the earlier units of its domain and the earlier Ordered
// units; statements (barriers), copied chunks, MySQL transactions and
// units sharing a key with an uncommitted unit of another domain wait for
// every earlier unit. The turns are computed the way the coordinator does
// (scheduler verdict, follow, ruleOf) and checked after each commit.
func TestSequencerDomainTurns(t *testing.T) {
	type unit struct {
		domain  uint32
		keys    []uint64 // exclusive keys
		shared  []uint64
		barrier bool
		chunk   bool
		mysql   bool
	}
	type check struct {
		commit []uint64 // committed before the check, in this order
		ready  []uint64 // the uncommitted units whose turn has come; no other
	}
	tests := []struct {
		name   string
		units  []unit
		checks []check
	}{
		{"domains commit independently",
			[]unit{{domain: 1}, {domain: 2}, {domain: 2}, {domain: 1}},
			[]check{{nil, []uint64{1, 2}}, {[]uint64{2}, []uint64{1, 3}}, {[]uint64{3}, []uint64{1}}, {[]uint64{1}, []uint64{4}}}},
		{"one domain keeps source order",
			[]unit{{domain: 0}, {domain: 0}, {domain: 0}},
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}}},
		{"a statement waits for every domain and every later unit waits for it",
			[]unit{{domain: 1}, {domain: 2, barrier: true}, {domain: 1}, {domain: 3}},
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}, {[]uint64{2}, []uint64{3, 4}}}},
		{"a copied chunk stays in order",
			[]unit{{domain: 1}, {domain: 0, chunk: true}, {domain: 2}},
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}, {[]uint64{2}, []uint64{3}}}},
		{"MySQL transactions keep one order",
			[]unit{{mysql: true}, {mysql: true, domain: 0}, {mysql: true}},
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}}},
		{"a key shared across domains orders them, and what follows",
			[]unit{{domain: 1, keys: []uint64{7}}, {domain: 2, keys: []uint64{7}}, {domain: 3}, {domain: 1}},
			// 4 follows 2 (an Ordered unit) although 2 is of another domain
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}, {[]uint64{2}, []uint64{3, 4}}}},
		{"two shared holders of other domains order an exclusive one",
			[]unit{{domain: 1, shared: []uint64{7}}, {domain: 2, shared: []uint64{7}}, {domain: 2, keys: []uint64{7}}},
			[]check{{nil, []uint64{1}}, {[]uint64{1}, []uint64{2}}, {[]uint64{2}, []uint64{3}}}},
		{"a key shared inside one domain leaves the others free",
			[]unit{{domain: 1, keys: []uint64{7}}, {domain: 2}, {domain: 1, keys: []uint64{7}}},
			[]check{{nil, []uint64{1, 2}}, {[]uint64{2}, []uint64{1}}, {[]uint64{1}, []uint64{3}}}},
		{"the Ordered unit waits for every earlier unit, the ones between run free",
			[]unit{{domain: 1, keys: []uint64{7}}, {domain: 3}, {domain: 2, keys: []uint64{7}}},
			[]check{{nil, []uint64{1, 2}}, {[]uint64{2}, []uint64{1}}, {[]uint64{1}, []uint64{3}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sched := scheduler.New(scheduler.Config{Mode: scheduler.ModeWriteset, MaxBatch: 1, Domains: true}, 1)
			c := &coordinator{sched: sched, lastOfDomain: map[uint32]uint64{}}
			var works []*work
			for i, u := range tc.units {
				seq := uint64(i + 1)
				w := &work{t: &txn.Txn{Seq: seq}}
				w.set.Keys, w.set.Shared = u.keys, u.shared
				w.unit = scheduler.Unit{Seq: seq, Domain: u.domain, Barrier: u.barrier, Solo: u.chunk, Set: &w.set,
					Ordered: u.mysql, Payload: w}
				sched.Add(&w.unit)
				c.follow(w)
				works = append(works, w)
			}
			s := newSequencer(0, gtid.Set{}, "", 0)
			done := map[uint64]bool{}
			for _, ck := range tc.checks {
				for _, seq := range ck.commit {
					s.advance(seq, seq)
					done[seq] = true
				}
				want := map[uint64]bool{}
				for _, seq := range ck.ready {
					want[seq] = true
				}
				for _, w := range works {
					seq := w.unit.Seq
					if done[seq] {
						continue
					}
					ok, err := s.ready(seq, ruleOf([]*work{w}, seq))
					if err != nil {
						t.Fatal(err)
					}
					if ok != want[seq] {
						t.Errorf("after commits %v: unit %d ready %v, want %v", ck.commit, seq, ok, want[seq])
					}
				}
			}
		})
	}
}

// TestSequencerBreaks: after a commit whose outcome is unknown no turn
// comes any more, and waiters are woken to learn it.
func TestSequencerBreaks(t *testing.T) {
	s := newSequencer(0, gtid.Set{}, "", 0)
	ok, changed, err := s.wait(2, turnRule{after: []uint64{1}})
	if ok || err != nil {
		t.Fatalf("unit 2 ready before unit 1 committed: %v %v", ok, err)
	}
	cause := fmt.Errorf("commit: %w", mysql.ErrInvalidConn)
	s.breakOff(cause)
	select {
	case <-changed:
	default:
		t.Fatal("a waiter was not woken")
	}
	_, err = s.ready(1, turnRule{})
	if !errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("a turn after a break: %v", err)
	}
	// Every waiter's error names the cause: the first to report stops the
	// run, and the stream restarts only after a lost connection.
	if !errors.Is(err, mysql.ErrInvalidConn) || !sqlerr.ConnectionLost(err, sqlerr.MariaDB) {
		t.Fatalf("the cause is lost: %v", err)
	}
}

// TestOutcomeUnknown: only a COMMIT without an answer may have happened. A
// batch stopped before it sent its COMMIT (another batch failed) was
// reported as one of unknown outcome, which breaks the sequencer for
// nothing and tells the operator something false.
func TestOutcomeUnknown(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{mysql.ErrInvalidConn, true},
		{fmt.Errorf("commit: %w", io.ErrUnexpectedEOF), true},
		{&mysql.MySQLError{Number: 1213, Message: "Deadlock found"}, false},
		{fmt.Errorf("x: %w", rowsql.ErrRowCount), false},
		{errStopping, false},
		{fmt.Errorf("batch 3: %w", errAborted), false},
	} {
		if got := outcomeUnknown(c.err); got != c.want {
			t.Errorf("%v: outcome unknown %v, want %v", c.err, got, c.want)
		}
	}
}

// TestSequencerWakesOnlyTheTurn: a commit wakes the batches whose turn it
// brings and leaves the others asleep (woken at every commit, the one
// whose turn came could run last); a broken sequencer wakes them all.
func TestSequencerWakesOnlyTheTurn(t *testing.T) {
	s := newSequencer(0, gtid.Set{}, "", 0)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	wait := func(first uint64, r turnRule) <-chan struct{} {
		t.Helper()
		ok, ch, err := s.wait(first, r)
		if ok || err != nil {
			t.Fatalf("batch %d: turn %v, error %v; want a wait", first, ok, err)
		}
		return ch
	}
	second := wait(2, turnRule{all: true})
	third := wait(3, turnRule{all: true})
	otherDomain := wait(5, turnRule{after: []uint64{4}})
	if !s.advance(1, 1) {
		t.Fatal("advance(1) woke nobody")
	}
	if !closed(second) || closed(third) || closed(otherDomain) {
		t.Fatalf("after 1: woken 2 %v, 3 %v, 5 %v; want only 2", closed(second), closed(third), closed(otherDomain))
	}
	if s.advance(6, 6) {
		t.Fatal("advance(6) reported a wake with no waiter for it")
	}
	s.advance(4, 4) // another domain's batch commits out of order
	if closed(third) || !closed(otherDomain) {
		t.Fatalf("after 4: woken 3 %v, 5 %v; want only 5", closed(third), closed(otherDomain))
	}
	if ok, err := s.ready(3, turnRule{all: true}); ok || err != nil {
		t.Fatalf("batch 3 ready %v (error %v) before 2 committed", ok, err)
	}
	later := wait(9, turnRule{all: true})
	s.breakOff(io.ErrUnexpectedEOF)
	if !closed(third) || !closed(later) {
		t.Fatal("a broken sequencer left waiters asleep")
	}
	if _, _, err := s.wait(9, turnRule{all: true}); !errors.Is(err, ErrCommitUnknown) {
		t.Fatalf("wait after breakOff: %v", err)
	}
}
