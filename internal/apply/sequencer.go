package apply

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

// sequencer hands out commit turns and holds the position of what
// committed.
//
// Turns: a batch's turn comes when what it must follow committed (see
// turnRule). Units the scheduler marks Ordered (statements, barriers,
// copied chunks, XA, MySQL sources, cross-domain conflicts) follow every
// earlier unit, as all units did before GTID domains were independent;
// the other units follow the earlier units of their MariaDB GTID domain
// and the earlier Ordered units only, so a long transaction of one domain
// does not hold back the commits of another.
//
// Position: with domains committing out of Seq order two batches may reach
// their commit at the same time, and each writes the whole position (one
// GTID per domain) in binlane.streams. Exactness comes from the position
// lock (posLock): a worker takes it before computing the position it
// writes and keeps it until its COMMIT answered, and only then updates pos.
// So pos is always exactly what the last committed target transaction
// wrote, every write is pos plus the batch's own GTIDs, and the row in the
// target always names exactly the committed transactions: for each domain,
// its last committed GTID, before which every transaction of the domain
// committed (domain order). A crash leaves that row, and the restart asks
// the source for every domain from its own GTID: nothing is lost or
// applied twice. A COMMIT whose outcome is unknown (connection lost) breaks
// the sequencer: no later batch may write a position computed without it.
// The lock covers only the position statement and the COMMIT when the
// batch had to wait (it flushed its rows first), so it is never held
// across a row lock wait that another turn holder could be part of; a
// batch at the head (every earlier unit committed) sends its last rows
// with it, as before, being the earliest of all.
type sequencer struct {
	mu        sync.Mutex
	committed uint64              // every Seq <= committed has committed
	above     map[uint64]struct{} // Seqs above committed that committed
	// waiters are the batches waiting for their turn (see wait): a commit
	// wakes only those it lets commit.
	waiters []turnWaiter
	broken  error // why a commit's outcome is unknown (see breakOff)

	// posLock is held (a token taken) by the worker writing the position.
	posLock chan struct{}
	// Owned by the holder of posLock.
	pos      gtid.Set
	file     string
	filePos  uint64
	lastGTID string
	sourceTS uint32
	unsaved  int // transactions committed in memory only (empty ones)
	// temps are the source sessions' temporary tables an unsaved commit
	// changed (nil: the saved ones stand).
	temps    *string
	lastSave time.Time
}

// turnRule is what a batch must follow: every earlier unit (all), or the
// listed Seqs (the previous unit of each of its units' domains and the
// previous Ordered unit, when before the batch).
type turnRule struct {
	all   bool
	after []uint64
}

// turnWaiter is a batch waiting for its turn; ch is closed when it came
// or the sequencer broke.
type turnWaiter struct {
	first uint64
	rule  turnRule
	ch    chan struct{}
}

// ErrCommitUnknown: a commit's outcome is unknown; nothing may commit
// after it in this run. A restart from the saved position gets past it:
// the position is saved in the same target transaction as the rows, so the
// target's row says whether that commit happened.
var ErrCommitUnknown = errors.New("an earlier commit's outcome is unknown: no later commit may write the position")

func newSequencer(committed uint64, start gtid.Set, file string, filePos uint64) *sequencer {
	s := &sequencer{committed: committed, above: map[uint64]struct{}{},
		posLock: make(chan struct{}, 1), pos: start.Clone(), file: file, filePos: filePos, lastSave: time.Now()}
	return s
}

// done reports whether seq committed. Callers hold mu.
func (s *sequencer) done(seq uint64) bool {
	if seq <= s.committed {
		return true
	}
	_, ok := s.above[seq]
	return ok
}

// ready reports whether a batch starting at first with rule r may commit.
func (s *sequencer) ready(first uint64, r turnRule) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return false, s.broken
	}
	return s.turn(first, r), nil
}

// wait is ready, and when the batch may not commit yet, the channel closed
// once it may (or the sequencer broke). Only that batch is woken: with
// every waiter woken at every commit, the one whose turn came ran after
// the others had looked and gone back to sleep, behind everything else
// runnable when binlane has one core (a trace of 4 workers: 0.1-0.6 ms a
// commit, the target idle). A caller that stops waiting (its batch gave
// way) leaves its waiter listed until that turn comes: then it is closed,
// unheard, and dropped; every batch's turn comes, its retry's included.
func (s *sequencer) wait(first uint64, r turnRule) (bool, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return false, nil, s.broken
	}
	if s.turn(first, r) {
		return true, nil, nil
	}
	ch := make(chan struct{})
	s.waiters = append(s.waiters, turnWaiter{first: first, rule: r, ch: ch})
	return false, ch, nil
}

// turn is ready without the lock and the broken check; callers hold mu.
func (s *sequencer) turn(first uint64, r turnRule) bool {
	if s.committed+1 >= first {
		return true
	}
	if r.all {
		return false
	}
	for _, seq := range r.after {
		if !s.done(seq) {
			return false
		}
	}
	return true
}

// atHead reports whether every unit before first committed.
func (s *sequencer) atHead(first uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed+1 == first
}

// committedSeq returns the Seq up to which everything committed.
func (s *sequencer) committedSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// advance records the commit of the Seqs first..last and wakes the
// waiters whose turn came; it reports whether there were any.
func (s *sequencer) advance(first, last uint64) (woke bool) {
	s.mu.Lock()
	if first <= s.committed+1 && len(s.above) == 0 {
		// In order (one domain, or the head): no bookkeeping per Seq.
		s.committed = max(s.committed, last)
	}
	for seq := max(first, s.committed+1); seq <= last; seq++ {
		s.above[seq] = struct{}{}
	}
	for {
		if _, ok := s.above[s.committed+1]; !ok {
			break
		}
		delete(s.above, s.committed+1)
		s.committed++
	}
	var wake []chan struct{}
	kept := s.waiters[:0]
	for _, w := range s.waiters {
		if s.turn(w.first, w.rule) {
			wake = append(wake, w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	clear(s.waiters[len(kept):])
	s.waiters = kept
	s.mu.Unlock()
	for _, c := range wake {
		close(c)
	}
	return len(wake) > 0
}

// breakOff stops every later commit (see ErrCommitUnknown) and wakes the
// waiters. Their error wraps cause (the lost connection): whichever batch
// reports first stops the run, so each must carry what a restart needs to
// know (TestReplicateSurvivesRestarts stopped the stream for good when a
// waiter's bare error came first).
func (s *sequencer) breakOff(cause error) {
	s.mu.Lock()
	s.broken = fmt.Errorf("%w (%w)", ErrCommitUnknown, cause)
	waiters := s.waiters
	s.waiters = nil
	s.mu.Unlock()
	for _, w := range waiters {
		close(w.ch)
	}
}

// isBroken reports whether a commit's outcome is unknown.
func (s *sequencer) isBroken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken != nil
}

// next computes the position after the given transactions, without
// changing the sequencer (the commit may still fail). The caller holds
// posLock.
func (s *sequencer) next(ws []*work) (gtid.Set, position.Save) {
	pos := s.pos.Clone()
	save := position.Save{File: s.file, Pos: s.filePos, LastGTID: s.lastGTID, SourceTS: s.sourceTS, Applied: s.unsaved,
		TempTables: s.temps}
	var last *gtid.GTID // formatted once, after the loop
	for _, w := range ws {
		if w.chunk != nil {
			continue // copied rows: no source position of their own
		}
		t := w.t
		if t.GTID.Flavor != 0 {
			pos.Add(t.GTID)
			last = &t.GTID
		}
		save.File, save.Pos = t.File, t.EndPos
		if t.Timestamp != 0 {
			save.SourceTS = t.Timestamp
		}
		if t.TempTables != nil {
			save.TempTables = t.TempTables
		}
		save.Applied++
	}
	if last != nil {
		save.LastGTID = last.String()
	}
	save.GTID = pos.String()
	return pos, save
}

// commit makes a computed position current; saved says whether it was
// written to the target. The caller holds posLock.
func (s *sequencer) commit(pos gtid.Set, save position.Save, saved bool) {
	s.pos, s.file, s.filePos, s.lastGTID, s.sourceTS = pos, save.File, save.Pos, save.LastGTID, save.SourceTS
	if saved {
		s.unsaved, s.temps, s.lastSave = 0, nil, time.Now()
	} else {
		s.unsaved, s.temps = save.Applied, save.TempTables
	}
}
