package rowsql

// The run planner: see the package doc ("Runs across a merged commit")
// for what it does and why the order it picks does what the source's did.

// runEntry is one row change as the planner sees it.
type runEntry struct {
	// group: changes of one group may share a statement; -1: never (an
	// update that changes its primary key or a foreign-key column is one
	// statement of its own).
	group int
	fence bool
	// merge: an update that changes no key value (an upsert run's
	// member that moves no unique value), which a later such update of the same row may join (see
	// the package doc, "Net effect of repeated updates").
	merge bool
	// keys are held exclusively, shared only against exclusive holders
	// (scheduler.KeySet.Keys and Shared; tables folded in as keys).
	keys, shared []uint64
}

// runPlanner orders changes into runs. Its tables are reused from one plan
// to the next; it is not safe for concurrent use.
type runPlanner struct {
	runs [][]int32   // members of each run, in source order
	last holderTable // key -> the last runs holding it
	open []int32     // group -> its last run (-1: none)
	// order is the output.
	order []int32
	// final: entry -> the last entry merged into it, whose after image it
	// writes (-1: none).
	final []int32
	runOf []int32 // entry placed in a run -> its run
	fence int     // the last fence entry: nothing merges across it
}

// holders are the last runs holding a key exclusively and in any mode,
// and the last entry placed in a run that holds it in any mode (a merged
// entry is never one); -1: none.
type holders struct{ excl, any, entry int32 }

// plan returns the order in which to write entries: runs one after
// another, each run's members in source order. An entry merged into an
// earlier one (r.final) is not in the order: the earlier one's statement
// writes its after image.
func (r *runPlanner) plan(entries []runEntry) []int32 {
	r.reset(entries)
	floor := -1 // the last fence's run: nothing moves before it
	r.fence = -1
	for i := range entries {
		e := &entries[i]
		if p := r.mergeTarget(entries, i); p >= 0 {
			r.final[p] = int32(i)
			r.hold(e, int(r.runOf[p]), -1)
			continue
		}
		bar := floor
		for _, k := range e.keys {
			bar = max(bar, int(r.last.get(k).any))
		}
		for _, k := range e.shared {
			bar = max(bar, int(r.last.get(k).excl))
		}
		at := -1
		if e.group >= 0 && !e.fence && r.open[e.group] >= 0 && int(r.open[e.group]) >= bar {
			at = int(r.open[e.group])
		}
		if at < 0 {
			at = r.newRun()
			if e.group >= 0 && !e.fence {
				r.open[e.group] = int32(at)
			}
		}
		if e.fence {
			floor, r.fence = at, i
		}
		r.runs[at] = append(r.runs[at], int32(i))
		r.runOf[i] = int32(at)
		r.hold(e, at, int32(i))
	}
	for _, run := range r.runs {
		r.order = append(r.order, run...)
	}
	return r.order
}

// hold records that run at holds e's keys, and that entry does when it
// is not -1 (a merged entry's keys stay its target's).
func (r *runPlanner) hold(e *runEntry, at int, entry int32) {
	for _, k := range e.keys {
		h := r.last.get(k)
		h.excl, h.any, h.entry = max(h.excl, int32(at)), max(h.any, int32(at)), pick(entry, h.entry)
	}
	for _, k := range e.shared {
		h := r.last.get(k)
		h.any, h.entry = max(h.any, int32(at)), pick(entry, h.entry)
	}
}

// pick is v, or else (v is -1) old.
func pick(v, old int32) int32 {
	if v < 0 {
		return old
	}
	return v
}

// mergeTarget returns the entry entries[i] merges into, or -1: an
// earlier update that changes no key value, of the same group, that is
// the last entry holding every key of entries[i] (so entries[i] holds
// nothing the earlier one does not, and no entry in between shares a key
// with it), and no fence since (a foreign-key action may reach the row
// with no key in common). The two are one row's updates with nothing
// between them that could see the row: the earlier one's statement may
// write the later one's after image.
func (r *runPlanner) mergeTarget(entries []runEntry, i int) int32 {
	e := &entries[i]
	if !e.merge || len(e.keys) == 0 {
		return -1
	}
	p := r.last.get(e.keys[0]).entry
	if p < 0 || int(p) < r.fence || !entries[p].merge || entries[p].group != e.group {
		return -1
	}
	for _, keys := range [][]uint64{e.keys, e.shared} {
		for _, k := range keys {
			if r.last.get(k).entry != p {
				return -1
			}
		}
	}
	return p
}

// newRun appends an empty run, reusing a member slice of an earlier plan.
func (r *runPlanner) newRun() int {
	if n := len(r.runs); n < cap(r.runs) {
		r.runs = r.runs[:n+1]
		r.runs[n] = r.runs[n][:0]
	} else {
		r.runs = append(r.runs, nil)
	}
	return len(r.runs) - 1
}

// reset readies the planner for entries: no key held, no group open,
// final all -1.
func (r *runPlanner) reset(entries []runEntry) {
	keys, groups := 0, 0
	for i := range entries {
		keys += len(entries[i].keys) + len(entries[i].shared)
		groups = max(groups, entries[i].group+1)
	}
	r.last.reset(keys)
	r.open = growInt32(r.open, groups)
	r.final, r.runOf = growInt32(r.final, len(entries)), growInt32(r.runOf, len(entries))
	for _, s := range [][]int32{r.open, r.final} {
		for i := range s {
			s[i] = -1
		}
	}
	r.runs, r.order = r.runs[:0], r.order[:0]
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// holderTable maps keys to their holders for one plan. A Go map took three
// operations per key (two lookups and an assignment) and its clear per
// plan (order entry: 5% of binlane's CPU); here one probe finds an entry,
// which the caller updates in place, and a plan starts by moving to the
// next generation: a slot of an older one is empty. Open addressing with
// linear probing, sized at reset to at most half full for the plan's
// keys. Keys are hashes, but not all are (tests): Fibonacci hashing takes
// the high bits of the key times the golden ratio, which spreads any key.
type holderTable struct {
	slots []holderSlot
	gen   uint32
	shift uint // 64 - log2(len(slots))
}

type holderSlot struct {
	key uint64
	gen uint32 // the slot is in use in this generation only
	h   holders
}

// holderTableMin is the smallest table, in slots (6 KiB).
const holderTableMin = 256

// reset empties the table and makes room for n keys.
func (t *holderTable) reset(n int) {
	size := holderTableMin
	for size < 2*n {
		size *= 2
	}
	// A table four times larger than this plan needs (after a bulk
	// transaction's keys) goes; one a little larger stays.
	if size > len(t.slots) || len(t.slots) > 4*size && len(t.slots) > 1<<16 {
		t.slots, t.gen = make([]holderSlot, size), 0
		t.shift = 64
		for n := size; n > 1; n >>= 1 {
			t.shift--
		}
	}
	t.gen++
	if t.gen == 0 { // wrapped: slots of generation 0 would look in use
		clear(t.slots)
		t.gen = 1
	}
}

// get returns k's holders to read or update in place, none (-1) when k
// was not held yet in this plan. The pointer is good until the next reset.
func (t *holderTable) get(k uint64) *holders {
	mask := len(t.slots) - 1
	for i := int((k * 0x9e3779b97f4a7c15) >> t.shift); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.gen != t.gen {
			*s = holderSlot{key: k, gen: t.gen, h: holders{-1, -1, -1}}
			return &s.h
		}
		if s.key == k {
			return &s.h
		}
	}
}
