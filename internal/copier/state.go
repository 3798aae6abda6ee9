package copier

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// State is the copy as the applier sees it, in stream order: which ranges
// of each table have taken their place in the stream, and which tables
// still wait for the indexes the copy deferred. The applier's coordinator
// calls Filter, Sequenced and Statement from its one goroutine, in stream
// order; its workers call Committed; progress displays read it under the
// lock.
type State struct {
	mu     sync.Mutex
	tables map[string]*tableState // by "schema.table"
	// waiting are the chunks handed to the stream whose readers wait for
	// their commit (see Committed).
	waiting map[*txn.Chunk]*handedOver
}

type tableState struct {
	t   *Table
	cov keyrange.Coverage
	// keyPos caches, per plan, the source columns of the chunking key.
	keyPos map[*plan.Table][]int
	// build is the table's deferred indexes not built yet, or handed to
	// the applier with the chunk that completed the table or a statement
	// on it (then nil); building is set while that chunk's build runs.
	build    *txn.IndexBuild
	building bool
}

// handedOver is a chunk handed to the stream whose reader waits for its
// commit (written), and what its commit tells the table's progress.
type handedOver struct {
	table    string
	prog     *Progress
	bytes    int           // the chunk's (its last part's, for a whole table)
	readTook time.Duration // reading it, placed
	written  chan struct{}
}

// committed records the chunk's commit: the rows it wrote, whether its
// table is done, the time it took for sizing the next chunks; and lets its
// reader go on.
func (h *handedOver) committed(s *State, rows int, took time.Duration) {
	h.prog.Rows.Add(int64(rows))
	h.prog.Done.Store(s.tableDone(h.table))
	h.prog.sizer.observe(rows, h.bytes, h.readTook+took)
	close(h.written)
}

// NewState builds the state of a copy from its tables and their
// checkpoints (position.CopyTable rows).
func NewState(tables []*Table, saved []position.CopyTable) (*State, error) {
	s := &State{tables: map[string]*tableState{}, waiting: map[*txn.Chunk]*handedOver{}}
	bySaved := map[string]position.CopyTable{}
	for _, c := range saved {
		bySaved[c.Schema+"."+c.Table] = c
	}
	for _, t := range tables {
		ts := &tableState{t: t, cov: keyrange.Coverage{Cols: t.Key}, keyPos: map[*plan.Table][]int{}, build: t.Build}
		if c, ok := bySaved[t.ID()]; ok {
			switch {
			case c.State == position.CopyDone:
				ts.cov.All, ts.build = true, nil
			case c.Coverage != "":
				if err := json.Unmarshal([]byte(c.Coverage), &ts.cov); err != nil {
					return nil, fmt.Errorf("the copy checkpoint of %s: %w", t.Quoted(), err)
				}
			}
			if c.State == position.CopyIndexing {
				ts.build = nil // built before the stream starts (see package replicate)
			}
		}
		s.tables[t.ID()] = ts
	}
	return s, nil
}

// Done reports whether every table is copied (as far as the stream went).
func (s *State) Done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ts := range s.tables {
		if !ts.cov.All {
			return false
		}
	}
	return true
}

// coverage returns a copy of a table's coverage, for the readers.
func (s *State) coverage(id string) keyrange.Coverage {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.tables[id].cov
	c.Ranges = append([]keyrange.Range(nil), c.Ranges...)
	return c
}

func (s *State) table(schemaName, table string) *tableState {
	if ts := s.tables[schemaName+"."+table]; ts != nil {
		return ts
	}
	for id, ts := range s.tables { // names the server compares without case
		if strings.EqualFold(id, schemaName+"."+table) {
			return ts
		}
	}
	return nil
}

// Filter keeps the changes of a table being copied that apply to the
// target: those of rows in ranges already copied (earlier in the stream).
// A change of a row not copied yet is in the rows its chunk will read —
// the chunk's snapshot comes later in the stream. An update that moves a
// row across the boundary becomes the delete or the insert of it that
// applies. Tables not being copied are not touched (ok false).
//
// keys are the chunking key values of the rows the kept changes write
// (before and after images): the scheduler orders a change after the
// chunk whose range holds its row (see scheduler.Span).
//
// A partial row image (binlog_row_image MINIMAL or NOBLOB) follows the same
// rules, with two errors where they cannot hold: an image without the
// chunking key (nothing says whether its row was copied), and an update
// that moves a row from a range not copied yet into a copied one (the
// insert it becomes needs the whole row, which the image does not hold,
// and the chunk read later no longer has it).
func (s *State) Filter(p *plan.Table, changes []txn.Change) (out []txn.Change, keys []keyrange.Key, ok bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.table(p.Target.Schema, p.Target.Name)
	if ts == nil || ts.cov.All {
		return changes, nil, false, nil
	}
	pos, found := ts.keyPos[p]
	if !found {
		pos = keyPositions(ts.t, p)
		ts.keyPos[p] = pos
	}
	covered := func(row []binlog.Value) (keyrange.Key, bool, error) {
		if row == nil || pos == nil {
			return nil, false, nil // nothing copied of a one-pass table yet
		}
		for _, c := range pos {
			if row[c].Kind == binlog.KindAbsent {
				return nil, false, fmt.Errorf("table %s is being copied and a partial row image (binlog_row_image MINIMAL "+
					"or NOBLOB on the source) lacks its column `%s`, by which the copy tells copied rows from the others: "+
					"set binlog_row_image=FULL on the source until the copy is done", p.Name, p.Cols[c].Name)
			}
		}
		k, ok := rowKey(ts.t.Key, row, pos)
		return k, ok && ts.cov.Contains(k), nil
	}
	out = changes[:0:0]
	for _, c := range changes {
		bk, b, err := covered(c.Before)
		if err != nil {
			return nil, nil, true, err
		}
		ak, a, err := covered(c.After)
		if err != nil {
			return nil, nil, true, err
		}
		switch {
		case c.Kind == binlog.RowsInsert && a, c.Kind == binlog.RowsDelete && b, c.Kind == binlog.RowsUpdate && a && b:
			out = append(out, c)
		case c.Kind == binlog.RowsUpdate && b:
			out = append(out, txn.Change{Table: c.Table, Kind: binlog.RowsDelete, Partial: c.Partial, Flags: c.Flags, Before: c.Before})
			a = false
		case c.Kind == binlog.RowsUpdate && a && c.Partial:
			return nil, nil, true, fmt.Errorf("table %s is being copied and an update moves a row into a copied range from "+
				"one not copied yet: the partial row image (binlog_row_image MINIMAL or NOBLOB on the source) does not hold "+
				"the whole row to insert; set binlog_row_image=FULL on the source until the copy is done", p.Name)
		case c.Kind == binlog.RowsUpdate && a:
			out = append(out, txn.Change{Table: c.Table, Kind: binlog.RowsInsert, Flags: c.Flags, After: c.After})
			b = false
		}
		if b {
			keys = append(keys, bk)
		}
		if a {
			keys = append(keys, ak)
		}
	}
	return out, keys, true, nil
}

// keyPositions maps the chunking key's columns onto a plan's source
// columns; nil when the table has no chunking key.
func keyPositions(t *Table, p *plan.Table) []int {
	if t.Key == nil {
		return nil
	}
	pos := make([]int, len(t.Key))
	for i, k := range t.Key {
		pos[i] = -1
		for j := range p.Cols {
			if strings.EqualFold(p.Cols[j].Name, k.Name) {
				pos[i] = j
			}
		}
		if pos[i] < 0 {
			return nil
		}
	}
	return pos
}

// Sequenced records that a chunk took its place in the stream: its range
// counts as copied for every change after it. It returns the table's
// checkpoint after the chunk; skip is set when the chunk must not be
// written: the table's contents were replaced (dropped, truncated) earlier
// in the stream, which then carries every change after that. A chunk that
// completes a table whose indexes the copy deferred gets their Build.
func (s *State) Sequenced(c *txn.Chunk) (cp position.CopyProgress, skip bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.table(c.Schema, c.Table)
	if ts == nil {
		return cp, false, fmt.Errorf("copier: a chunk of %s.%s, which is not being copied", c.Schema, c.Table)
	}
	switch {
	case ts.cov.All:
		return cp, true, nil
	case c.Whole:
		ts.cov.All = true
	default:
		ts.cov.Add(c.Covers)
	}
	if ts.cov.All && ts.build != nil {
		c.Build, ts.build, ts.building = ts.build, nil, true
	}
	cp, err = ts.progress(len(c.Rows))
	// The build records the table done, after it.
	cp.Indexing, cp.Done = c.Build != nil, cp.Done && c.Build == nil
	return cp, false, err
}

func (ts *tableState) progress(rows int) (position.CopyProgress, error) {
	b, err := json.Marshal(&ts.cov)
	return position.CopyProgress{Schema: ts.t.Schema, Table: ts.t.Name, Coverage: string(b), Rows: rows,
		Done: ts.cov.All && ts.build == nil}, err
}

// handOver registers a chunk whose commit its reader waits for (nil:
// forget it, it was not handed over).
func (s *State) handOver(c *txn.Chunk, h *handedOver) {
	s.mu.Lock()
	if h == nil {
		delete(s.waiting, c)
	} else {
		s.waiting[c] = h
	}
	s.mu.Unlock()
}

// Committed says that a chunk (the last part of a whole table) committed,
// with the rows it wrote and the time the target took (the indexes it
// built included): its reader goes on, and sizes its next chunks from it.
func (s *State) Committed(c *txn.Chunk, rows int, took time.Duration) {
	s.mu.Lock()
	h := s.waiting[c]
	delete(s.waiting, c)
	if ts := s.table(c.Schema, c.Table); ts != nil && ts.cov.All {
		// The chunk that completed the table, its indexes built (one that
		// follows it is skipped, and runs after it).
		ts.building = false
	}
	s.mu.Unlock()
	if h != nil {
		h.committed(s, rows, took)
	}
}

// tableDone reports whether a table is copied, its indexes built.
func (s *State) tableDone(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.tables[id]
	return ts.cov.All && ts.build == nil && !ts.building
}

// Copying reports whether a table is still being copied.
func (s *State) Copying() bool { return !s.Done() }

// Statement follows a statement of the stream that touches tables being
// copied. One that replaces a table's contents (DROP, TRUNCATE, CREATE OR
// REPLACE; DROP DATABASE for all of its tables) completes the table's copy
// at that point: the stream carries everything after it, and chunks read
// later are skipped. One that renames a table being copied stops the
// stream: the copy cannot follow rows to another name.
//
// Before any statement on a table whose deferred indexes are not built,
// the applier builds them (builds): the statement then runs on the
// definition it ran on at the source, whatever it changes (an index the
// copy deferred included), and nothing of it is lost.
func (s *State) Statement(st *txn.Statement) (cps []position.CopyProgress, builds []*txn.IndexBuild, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// A statement that may reference another table by foreign key (its
	// text says REFERENCES) needs the parent's index, which may be one the
	// copy deferred: it counts as touching every table, like one whose
	// tables could not be read.
	anyTable := st.Unknown || !st.DML && containsFold(st.Query, "REFERENCES")
	var hit []*tableState
	for _, ts := range s.tables {
		if !anyTable && !touches(st, ts.t) || ts.cov.All && ts.build == nil {
			continue
		}
		hit = append(hit, ts)
	}
	if st.DML {
		// A statement computes its rows from the target's tables: one the
		// copy has not completed lacks rows the source had.
		for _, ts := range hit {
			if !ts.cov.All {
				return nil, nil, fmt.Errorf("statement-logged DML %q reads or writes %s, which binlane is still copying: the target "+
					"would compute its rows from a partial table; let the copy finish before such statements, or make the source "+
					"session log rows (SET SESSION binlog_format=ROW)", abbreviate(st.Query), ts.t.Quoted())
			}
		}
	}
	if st.Renames() {
		for _, ts := range hit {
			if (!ts.cov.All || st.Unknown) && (st.Unknown || touches(st, ts.t)) {
				return nil, nil, fmt.Errorf("statement %q renames a table while binlane copies it: the copy cannot follow rows to "+
					"another name; let the copy finish before renaming, or start the copy again", abbreviate(st.Query))
			}
		}
	}
	replaces := st.ReplacesContents()
	for _, ts := range hit {
		built := ts.build != nil
		if built {
			builds, ts.build = append(builds, ts.build), nil
		}
		replaced := replaces && touches(st, ts.t) && !ts.cov.All
		if replaced {
			ts.cov = keyrange.Coverage{Cols: ts.t.Key, All: true}
		}
		if built || replaced {
			cp, err := ts.progress(0)
			if err != nil {
				return nil, nil, err
			}
			cp.Built = built
			cps = append(cps, cp)
		}
	}
	return cps, builds, nil
}

// touches reports whether a statement names a table (or its schema).
func touches(st *txn.Statement, t *Table) bool {
	for _, n := range st.Tables {
		if strings.EqualFold(t.Schema, n.Schema) && (n.Table == "" || strings.EqualFold(t.Name, n.Table)) {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool { return strings.Contains(strings.ToUpper(s), sub) }

func abbreviate(q string) string {
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}
