package rowsql

// Runs across a merged commit. A target transaction holds the row changes
// of many source transactions, and an application interleaves its tables
// (order entry: a stock UPDATE, an order line INSERT, a stock UPDATE, ...),
// so changes of one kind and table are seldom adjacent and each would be a
// statement of its own, whose parsing and planning cost the target more
// than the row. The run planner gathers them: it moves a change earlier, to
// the end of the last pending run of its group (table plan, operation,
// foreign-key session setting), when it shares no conflict key with any
// change it moves past. The writer then writes each run as one statement of
// the forms it already has (multi-row INSERT, DELETE ... IN, the upsert of
// updates that keep their keys).
//
// Why the reordered changes do what the source's order did. The conflict
// keys are those the scheduler orders transactions by (package writeset):
// every primary and unique key value of the before and after images, the
// parent key values a change references (shared) and the key values a
// parent change creates, removes or changes (exclusive). Two changes whose
// keys are disjoint touch different rows, reach no common unique value, and
// neither is a parent row the other references, checks or cascades into
// (one level: a change that fires a foreign-key action is a fence, below):
// each statement finds, inserts, deletes and checks the same rows in either
// order, succeeds or fails the same, and affects the same row count. The
// planner never moves a change past one it conflicts with, so changes that
// share a key (the same row, a unique value handed from one row to another,
// a parent and its child) keep the source's order: parents are inserted
// before their children and children deleted before their parents. Inside
// one statement the rows are processed in VALUES order (inserts, upserts);
// a DELETE's rows, which the server visits in its own order, are pairwise
// disjoint (two deletes of one key value are separated by the change that
// brought it back, which conflicts with both, so they are never in one run).
//
// Fences keep their place and let nothing move past them: a change of a
// table without a usable key, of one a self-referencing foreign key or a
// foreign-key cycle links (written row by row in source order), of a table
// with triggers or one that must run alone (plan.Table.Serialize), a change
// with a key that could not be normalized (its writeset takes a table
// whole), and a change that fires a foreign-key action (its cascades reach
// rows the binlog does not name).

// runEntry is one row change as the planner sees it.
type runEntry struct {
	// group: changes of one group may share a statement; -1: never (an
	// update that changes a key is one statement of its own).
	group int
	fence bool
	// keys are held exclusively, shared only against exclusive holders
	// (writeset.Set.Keys and Shared; tables folded in as keys).
	keys, shared []uint64
}

// runPlanner orders changes into runs. Its maps are reused from one plan
// to the next; it is not safe for concurrent use.
type runPlanner struct {
	runs     [][]int32      // members of each run, in source order
	lastExcl map[uint64]int // key -> last run holding it exclusively
	lastAny  map[uint64]int // key -> last run holding it in any mode
	open     map[int]int    // group -> its last run
	order    []int32        // output
}

// plan returns the order in which to write entries: runs one after
// another, each run's members in source order.
func (r *runPlanner) plan(entries []runEntry) []int32 {
	r.reset()
	floor := -1 // the last fence's run: nothing moves before it
	for i := range entries {
		e := &entries[i]
		bar := floor
		for _, k := range e.keys {
			bar = max(bar, r.last(r.lastAny, k))
		}
		for _, k := range e.shared {
			bar = max(bar, r.last(r.lastExcl, k))
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
			r.lastExcl[k] = max(r.last(r.lastExcl, k), at)
			r.lastAny[k] = max(r.last(r.lastAny, k), at)
		}
		for _, k := range e.shared {
			r.lastAny[k] = max(r.last(r.lastAny, k), at)
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

func (r *runPlanner) last(m map[uint64]int, k uint64) int {
	if v, ok := m[k]; ok {
		return v
	}
	return -1
}

func (r *runPlanner) reset() {
	if r.lastExcl == nil {
		r.lastExcl, r.lastAny, r.open = map[uint64]int{}, map[uint64]int{}, map[int]int{}
	}
	clear(r.lastExcl)
	clear(r.lastAny)
	clear(r.open)
	r.runs, r.order = r.runs[:0], r.order[:0]
}
