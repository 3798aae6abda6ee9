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

// runPlanner orders changes into runs. Its maps are reused from one plan
// to the next; it is not safe for concurrent use.
type runPlanner struct {
	runs  [][]int32          // members of each run, in source order
	last  map[uint64]holders // key -> the last runs holding it
	open  map[int]int        // group -> its last run
	order []int32            // output
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
	r.reset()
	r.sized(len(entries))
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
			bar = max(bar, int(r.holders(k).any))
		}
		for _, k := range e.shared {
			bar = max(bar, int(r.holders(k).excl))
		}
		at := -1
		if ri, ok := r.open[e.group]; ok && e.group >= 0 && !e.fence && ri >= bar {
			at = ri
		}
		if at < 0 {
			at = r.newRun()
			if e.group >= 0 && !e.fence {
				r.open[e.group] = at
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
		h := r.holders(k)
		r.last[k] = holders{excl: max(h.excl, int32(at)), any: max(h.any, int32(at)), entry: pick(entry, h.entry)}
	}
	for _, k := range e.shared {
		h := r.holders(k)
		r.last[k] = holders{excl: h.excl, any: max(h.any, int32(at)), entry: pick(entry, h.entry)}
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
	p := r.holders(e.keys[0]).entry
	if p < 0 || int(p) < r.fence || !entries[p].merge || entries[p].group != e.group {
		return -1
	}
	for _, keys := range [][]uint64{e.keys, e.shared} {
		for _, k := range keys {
			if r.holders(k).entry != p {
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

func (r *runPlanner) holders(k uint64) holders {
	if h, ok := r.last[k]; ok {
		return h
	}
	return holders{-1, -1, -1}
}

func (r *runPlanner) reset() {
	if r.last == nil {
		r.last, r.open = map[uint64]holders{}, map[int]int{}
	}
	clear(r.last)
	clear(r.open)
	r.runs, r.order = r.runs[:0], r.order[:0]
}

// sized makes final and runOf hold n entries, final all -1.
func (r *runPlanner) sized(n int) {
	r.final, r.runOf = growInt32(r.final, n), growInt32(r.runOf, n)
	for i := range r.final {
		r.final[i] = -1
	}
}

func growInt32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}
