package copier

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// State is the copy as the applier sees it, in stream order: which ranges
// of each table have taken their place in the stream. The applier's
// coordinator calls Filter and Sequenced from its one goroutine, in stream
// order; progress displays read it under the lock.
type State struct {
	mu     sync.Mutex
	tables map[string]*tableState // by "schema.table"
}

type tableState struct {
	t   *Table
	cov Coverage
	// keyPos caches, per plan, the source columns of the chunking key.
	keyPos map[*plan.Table][]int
	// skipParts: the whole-table chunk being sequenced is skipped.
	skipParts bool
}

// NewState builds the state of a copy from its tables and their
// checkpoints (position.CopyTable rows).
func NewState(tables []*Table, saved []position.CopyTable) (*State, error) {
	s := &State{tables: map[string]*tableState{}}
	bySaved := map[string]position.CopyTable{}
	for _, c := range saved {
		bySaved[c.Schema+"."+c.Table] = c
	}
	for _, t := range tables {
		ts := &tableState{t: t, cov: Coverage{Cols: t.Key}, keyPos: map[*plan.Table][]int{}}
		if c, ok := bySaved[t.ID()]; ok {
			if c.State == position.CopyDone {
				ts.cov.All = true
			} else if c.Coverage != "" {
				if err := json.Unmarshal([]byte(c.Coverage), &ts.cov); err != nil {
					return nil, fmt.Errorf("the copy checkpoint of %s: %w", t.Quoted(), err)
				}
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

// coverage returns a copy of a table's coverage, for the producer.
func (s *State) coverage(id string) Coverage {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.tables[id].cov
	c.Ranges = append([]Range(nil), c.Ranges...)
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
func (s *State) Filter(p *plan.Table, changes []txn.Change) (out []txn.Change, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.table(p.Target.Schema, p.Target.Name)
	if ts == nil || ts.cov.All {
		return changes, false
	}
	pos, found := ts.keyPos[p]
	if !found {
		pos = keyPositions(ts.t, p)
		ts.keyPos[p] = pos
	}
	covered := func(row []binlog.Value) bool {
		if row == nil || pos == nil {
			return false // nothing copied of a one-pass table yet
		}
		k, ok := FromRow(ts.t.Key, row, pos)
		return ok && ts.cov.Contains(k)
	}
	out = changes[:0:0]
	for _, c := range changes {
		b, a := covered(c.Before), covered(c.After)
		switch {
		case c.Kind == binlog.RowsInsert && a, c.Kind == binlog.RowsDelete && b, c.Kind == binlog.RowsUpdate && a && b:
			out = append(out, c)
		case c.Kind == binlog.RowsUpdate && b:
			out = append(out, txn.Change{Table: c.Table, Kind: binlog.RowsDelete, Flags: c.Flags, Before: c.Before})
		case c.Kind == binlog.RowsUpdate && a:
			out = append(out, txn.Change{Table: c.Table, Kind: binlog.RowsInsert, Flags: c.Flags, After: c.After})
		}
	}
	return out, true
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
// in the stream, which then carries every change after that.
func (s *State) Sequenced(c *txn.Chunk) (cp position.CopyProgress, skip bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.table(c.Schema, c.Table)
	if ts == nil {
		return cp, false, fmt.Errorf("copier: a chunk of %s.%s, which is not being copied", c.Schema, c.Table)
	}
	switch {
	case c.Whole && c.Part > 0:
		// A later part of a whole table: its parts follow one another in
		// the stream, and the first one decided.
		skip = ts.skipParts
	case ts.cov.All:
		skip, ts.skipParts = true, true
	case c.Whole:
		ts.cov.All, ts.skipParts = true, false
	default:
		ts.cov.Add(c.Covers.(Range))
	}
	if skip {
		return cp, true, nil
	}
	cp, err = ts.progress(len(c.Rows))
	return cp, false, err
}

func (ts *tableState) progress(rows int) (position.CopyProgress, error) {
	b, err := json.Marshal(&ts.cov)
	return position.CopyProgress{Schema: ts.t.Schema, Table: ts.t.Name, Coverage: string(b), Rows: rows, Done: ts.cov.All}, err
}

// Copying reports whether a table is still being copied.
func (s *State) Copying() bool { return !s.Done() }

// Statement follows a statement of the stream that touches tables being
// copied. One that replaces a table's contents (DROP, TRUNCATE, CREATE OR
// REPLACE; DROP DATABASE for all of its tables) completes the table's copy
// at that point: the stream carries everything after it, and chunks read
// later are skipped. One that renames a table being copied stops the
// stream: the copy cannot follow rows to another name.
func (s *State) Statement(st *txn.Statement) ([]position.CopyProgress, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var hit []*tableState
	for _, n := range st.Tables {
		for _, ts := range s.tables {
			if ts.cov.All || !strings.EqualFold(ts.t.Schema, n.Schema) {
				continue
			}
			if n.Table == "" || strings.EqualFold(ts.t.Name, n.Table) {
				hit = append(hit, ts)
			}
		}
	}
	if st.Renames() && (len(hit) > 0 || st.Unknown) {
		return nil, fmt.Errorf("statement %q renames a table while binlane copies it: the copy cannot follow rows to another name; "+
			"let the copy finish before renaming, or start the copy again", abbreviate(st.Query))
	}
	if !st.ReplacesContents() {
		return nil, nil
	}
	var out []position.CopyProgress
	for _, ts := range hit {
		ts.cov = Coverage{Cols: ts.t.Key, All: true}
		cp, err := ts.progress(0)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, nil
}

func abbreviate(q string) string {
	if len(q) > 200 {
		return q[:200] + "..."
	}
	return q
}
