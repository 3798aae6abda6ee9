package apply

import (
	"sync"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

// sequencer hands out commit turns in source order and holds the position
// of the last commit. Only the holder of the turn (the worker whose batch
// starts right after the last commit) reads or changes the position, so it
// needs no lock of its own: the turn's hand-over (a channel close) orders
// the accesses.
type sequencer struct {
	mu        sync.Mutex
	committed uint64 // Seq of the last committed unit
	waiters   map[uint64]chan struct{}

	// Owned by the turn holder.
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

func newSequencer(committed uint64, start gtid.Set, file string, filePos uint64) *sequencer {
	return &sequencer{committed: committed, waiters: map[uint64]chan struct{}{}, pos: start.Clone(),
		file: file, filePos: filePos, lastSave: time.Now()}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// turn returns a channel closed when every unit before first committed.
func (s *sequencer) turn(first uint64) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed+1 == first {
		return closedChan
	}
	c, ok := s.waiters[first]
	if !ok {
		c = make(chan struct{})
		s.waiters[first] = c
	}
	return c
}

// atHead reports whether the batch starting at first may commit now.
func (s *sequencer) atHead(first uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed+1 == first
}

// committedSeq returns the last committed Seq.
func (s *sequencer) committedSeq() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// advance records the commit of everything up to last and passes the turn.
func (s *sequencer) advance(last uint64) {
	s.mu.Lock()
	s.committed = last
	c, ok := s.waiters[last+1]
	delete(s.waiters, last+1)
	s.mu.Unlock()
	if ok {
		close(c)
	}
}

// next computes the position after the given transactions, without
// changing the sequencer (the commit may still fail).
func (s *sequencer) next(ws []*work) (gtid.Set, position.Save) {
	pos := s.pos.Clone()
	save := position.Save{File: s.file, Pos: s.filePos, LastGTID: s.lastGTID, SourceTS: s.sourceTS, Applied: s.unsaved,
		TempTables: s.temps}
	for _, w := range ws {
		if w.chunk != nil {
			continue // copied rows: no source position of their own
		}
		t := w.t
		if t.GTID.Flavor != 0 {
			pos.Add(t.GTID)
			save.LastGTID = t.GTID.String()
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
	save.GTID = pos.String()
	return pos, save
}

// commit makes a computed position current; saved says whether it was
// written to the target.
func (s *sequencer) commit(pos gtid.Set, save position.Save, saved bool) {
	s.pos, s.file, s.filePos, s.lastGTID, s.sourceTS = pos, save.File, save.Pos, save.LastGTID, save.SourceTS
	if saved {
		s.unsaved, s.temps, s.lastSave = 0, nil, time.Now()
	} else {
		s.unsaved, s.temps = save.Applied, save.TempTables
	}
}
