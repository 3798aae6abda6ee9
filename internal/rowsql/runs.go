package rowsql

// The run planner: see the package doc ("Runs across a merged commit")
// for what it does and why the order it picks does what the source's did.

// runEntry is one row change as the planner sees it.
type runEntry struct {
	// group: changes of one group may share a statement; -1: never (an
	// update that changes a key is one statement of its own).
	group int
	fence bool
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
}

// holders are the last runs holding a key exclusively and in any mode
// (-1: none).
type holders struct{ excl, any int32 }

// plan returns the order in which to write entries: runs one after
// another, each run's members in source order.
func (r *runPlanner) plan(entries []runEntry) []int32 {
	r.reset()
	floor := -1 // the last fence's run: nothing moves before it
	for i := range entries {
		e := &entries[i]
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
			floor = at
		}
		r.runs[at] = append(r.runs[at], int32(i))
		for _, k := range e.keys {
			h := r.holders(k)
			r.last[k] = holders{excl: max(h.excl, int32(at)), any: max(h.any, int32(at))}
		}
		for _, k := range e.shared {
			h := r.holders(k)
			r.last[k] = holders{excl: h.excl, any: max(h.any, int32(at))}
		}
	}
	for _, run := range r.runs {
		r.order = append(r.order, run...)
	}
	return r.order
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
	return holders{-1, -1}
}

func (r *runPlanner) reset() {
	if r.last == nil {
		r.last, r.open = map[uint64]holders{}, map[int]int{}
	}
	clear(r.last)
	clear(r.open)
	r.runs, r.order = r.runs[:0], r.order[:0]
}
