package rowsql

import (
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Bounds of the changes held for the run planner: the rows themselves stay
// in the batch's buffers, but the planner's keys and maps grow with them,
// and a run longer than this gains nothing (one statement per run is
// already cheap; statements split at MaxStatement anyway).
const (
	maxPendingChanges = 4096
	maxPendingBytes   = DefaultMaxRoundTrip
)

// pending holds the row changes of the open target transaction that wait to
// be ordered into runs (see runs.go).
type pending struct {
	changes []pendingChange
	entries []runEntry
	spans   []keySpan
	keys    []uint64 // the entries' keys, one after another
	bytes   int
	groups  map[groupKey]int
	ws      writeset.Builder
	set     scheduler.KeySet
	planner runPlanner
}

type pendingChange struct {
	t *txn.Txn
	p *plan.Table
	c *txn.Change
}

// keySpan locates an entry's keys and shared keys in pending.keys.
type keySpan struct{ from, mid, to int }

// groupKey: changes that can share one statement (the plan fixes the
// table and its column set).
type groupKey struct {
	p     *plan.Table
	form  form
	fkOff bool
}

func (h *pending) reset() {
	clear(h.changes) // they point into binlog events: let them go
	h.changes, h.entries, h.spans, h.keys = h.changes[:0], h.entries[:0], h.spans[:0], h.keys[:0]
	h.bytes = 0
	clear(h.groups)
}

// add records a change with its conflict keys, computed by the scheduler's
// own rules (writeset.Builder.AddChange) for the change alone: those the
// scheduler's writeset already holds (known: the change's span in it), or
// computed here.
func (h *pending) add(t *txn.Txn, p *plan.Table, c *txn.Change, f form, group int, known *Keys, at int) {
	set, span := &h.set, writeset.Span{}
	if known != nil {
		set, span = known.Set, known.Spans[at]
	} else {
		h.set.Reset()
		span = h.ws.AddChangeSpan(&h.set, p, c)
	}
	// Whole: a table taken whole (a key that could not be normalized, rows
	// that cannot be named). Shared table accesses conflict only with
	// exclusive ones, which are fences: they need no key here.
	fence := p.RowKey == nil || p.OrderedRows || p.Serialize != "" || span.Whole || writeset.FiresActions(p, c)
	sp := keySpan{from: len(h.keys)}
	h.keys = append(h.keys, set.Keys[span.Keys[0]:span.Keys[1]]...)
	sp.mid = len(h.keys)
	// Not the lock keys (writeset.Span): they order lock waits between
	// connections, not statements of one transaction.
	h.keys = append(h.keys, set.Shared[span.Shared[0]:span.Lock]...)
	sp.to = len(h.keys)
	merge := f == formUpsert && !fence && !changesUnique(p, c) // formUpsert: full images only
	h.changes = append(h.changes, pendingChange{t: t, p: p, c: c})
	h.entries = append(h.entries, runEntry{group: group, fence: fence, merge: merge})
	h.spans = append(h.spans, sp)
	h.bytes += imageBytes(c.Before) + imageBytes(c.After) + 8*(sp.to-sp.from) + 64
}

// group numbers the statement group of a change; -1 for an update that
// must be a statement of its own.
func (h *pending) group(p *plan.Table, f form, c *txn.Change) int {
	if !f.shares() {
		return -1
	}
	if h.groups == nil {
		h.groups = map[groupKey]int{}
	}
	k := groupKey{p: p, form: f, fkOff: c.Flags&binlog.RowsFlagNoForeignKeyChecks != 0}
	g, ok := h.groups[k]
	if !ok {
		g = len(h.groups)
		h.groups[k] = g
	}
	return g
}

func (h *pending) full() bool {
	return len(h.changes) >= maxPendingChanges || h.bytes >= maxPendingBytes
}

// order plans the runs of what is pending.
func (h *pending) order() []int32 {
	for i := range h.entries {
		sp := h.spans[i]
		h.entries[i].keys, h.entries[i].shared = h.keys[sp.from:sp.mid], h.keys[sp.mid:sp.to]
	}
	return h.planner.plan(h.entries)
}

func imageBytes(img []binlog.Value) int {
	n := 0
	for i := range img {
		n += 16 + len(img[i].B)
	}
	return n
}

// hoisting reports whether row changes wait for the run planner: only for
// a whole batch written by Body, never in diagnosis (which names single
// statements in source order).
func (w *Writer) hoisting() bool { return w.Runs && !w.OneByOne }

// hold adds the changes of one rows item to what waits for the planner;
// collapsible tables go to the collapser as in Rows.
// known, when not nil, holds the keys of changes[j] at first+j.
func (w *Writer) hold(t *txn.Txn, p *plan.Table, changes []txn.Change, known *Keys, first int) error {
	h := &w.pend
	for j := range changes {
		c := &changes[j]
		taken, err := w.collapse(t, p, c)
		if err != nil {
			return err
		}
		if taken {
			continue
		}
		f := formOf(p, c, false) // never diagnosis: see hoisting
		h.add(t, p, c, f, h.group(p, f, c), known, first+j)
		if h.full() {
			if err := w.writeRuns(); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeRuns writes what is pending in the planner's order; the writer's
// adjacency rules (change) make each run one statement, or several where
// a statement would grow too long.
func (w *Writer) writeRuns() error {
	h := &w.pend
	if len(h.changes) == 0 {
		return nil
	}
	for _, i := range h.order() {
		pc := &h.changes[i]
		c := pc.c
		if m := h.planner.final[i]; m >= 0 {
			// A fresh value: the writer may hold the change beyond this
			// call (the first update of an upsert run).
			c = &txn.Change{Table: c.Table, Kind: c.Kind, Flags: c.Flags, Before: c.Before, After: h.changes[m].c.After}
		}
		if err := w.change(pc.t, pc.p, c); err != nil {
			return err
		}
	}
	h.reset()
	return nil
}
