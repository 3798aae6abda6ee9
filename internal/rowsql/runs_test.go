package rowsql

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// e builds a planner entry: a group (-1: none), exclusive keys, and shared
// keys after a 0.
func e(group int, keys ...uint64) runEntry {
	en := runEntry{group: group}
	if i := slices.Index(keys, 0); i >= 0 {
		en.keys, en.shared = keys[:i], keys[i+1:]
	} else {
		en.keys = keys
	}
	return en
}

func fence(en runEntry) runEntry { en.fence = true; return en }

func TestRunPlanner(t *testing.T) {
	cases := []struct {
		name    string
		entries []runEntry
		want    []int32
	}{
		{"interleaved tables gather into runs", []runEntry{e(0, 1), e(1, 2), e(0, 3), e(1, 4), e(0, 5)},
			[]int32{0, 2, 4, 1, 3}},
		{"a change never moves past one sharing a key", []runEntry{e(0, 1), e(1, 2), e(0, 2)},
			[]int32{0, 1, 2}},
		{"the same row twice in one run keeps its order", []runEntry{e(0, 1), e(1, 2), e(0, 1)},
			[]int32{0, 2, 1}},
		{"shared keys do not conflict with each other", []runEntry{e(0, 1, 0, 9), e(1, 2, 0, 9), e(0, 3, 0, 9)},
			[]int32{0, 2, 1}},
		{"a shared key conflicts with its exclusive holder", []runEntry{e(0, 1, 0, 9), e(1, 9), e(0, 3, 0, 9)},
			[]int32{0, 1, 2}},
		{"an exclusive key conflicts with a shared holder", []runEntry{e(0, 9), e(1, 2, 0, 8), e(0, 8)},
			[]int32{0, 1, 2}},
		{"a blocked change opens a new run; later ones join the newest", []runEntry{e(0, 1), e(1, 2), e(0, 2), e(1, 3), e(0, 4)},
			[]int32{0, 1, 3, 2, 4}},
		{"changes without a group stay, others pass them", []runEntry{e(0, 1), e(-1, 5, 6), e(0, 2), e(-1, 7)},
			[]int32{0, 2, 1, 3}},
		{"nothing moves past a fence", []runEntry{e(0, 1), fence(e(2, 9)), e(0, 3), e(2, 8)},
			[]int32{0, 1, 2, 3}},
		{"a fence does not move either", []runEntry{e(0, 1), e(1, 2), fence(e(0, 3))},
			[]int32{0, 1, 2}},
		{"no keys at all move freely", []runEntry{e(0), e(1), e(0)},
			[]int32{0, 2, 1}},
	}
	var p runPlanner
	for _, c := range cases {
		got := p.plan(c.entries)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRunPlannerRandom checks the planner's promises on random changes:
// the order is a permutation, every two conflicting changes keep their
// source order, nothing crosses a fence, and the runs are no more than
// the source's own adjacent runs.
func TestRunPlannerRandom(t *testing.T) {
	var p runPlanner
	for seed := uint64(0); seed < 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(60)
		entries := make([]runEntry, n)
		for i := range entries {
			en := runEntry{group: rng.IntN(5) - 1, fence: rng.IntN(25) == 0}
			for range rng.IntN(4) {
				en.keys = append(en.keys, 1+uint64(rng.IntN(12)))
			}
			for range rng.IntN(3) {
				en.shared = append(en.shared, 1+uint64(rng.IntN(12)))
			}
			entries[i] = en
		}
		order := p.plan(entries)
		checkOrder(t, seed, entries, order)
	}
}

func checkOrder(t *testing.T, seed uint64, entries []runEntry, order []int32) {
	t.Helper()
	pos := make([]int, len(entries))
	seen := make([]bool, len(entries))
	if len(order) != len(entries) {
		t.Fatalf("seed %d: %d of %d changes", seed, len(order), len(entries))
	}
	for at, i := range order {
		if seen[i] {
			t.Fatalf("seed %d: change %d twice", seed, i)
		}
		seen[i], pos[i] = true, at
	}
	for a := range entries {
		for b := a + 1; b < len(entries); b++ {
			if (conflict(&entries[a], &entries[b]) || entries[a].fence || entries[b].fence) && pos[a] > pos[b] {
				t.Fatalf("seed %d: %d (%+v) and %d (%+v) swapped: %v", seed, a, entries[a], b, entries[b], order)
			}
		}
	}
	if statements(entries, order) > statements(entries, seq(len(entries))) {
		t.Fatalf("seed %d: more statements than in source order: %v", seed, order)
	}
}

func conflict(a, b *runEntry) bool {
	for _, k := range a.keys {
		if slices.Contains(b.keys, k) || slices.Contains(b.shared, k) {
			return true
		}
	}
	for _, k := range a.shared {
		if slices.Contains(b.keys, k) {
			return true
		}
	}
	return false
}

// statements counts what the writer would send: adjacent changes of one
// group share a statement.
func statements(entries []runEntry, order []int32) int {
	n := 0
	for i, x := range order {
		if i == 0 || entries[x].group < 0 || entries[x].group != entries[order[i-1]].group {
			n++
		}
	}
	return n
}

func seq(n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(i)
	}
	return out
}

// TestHolderTable: a reset forgets every key (also when the generation
// wraps, and across a shrink after a large plan), and keys that collide
// keep entries of their own.
func TestHolderTable(t *testing.T) {
	var h holderTable
	fill := func(n int, base uint64) {
		h.reset(n)
		for i := range n {
			// Multiples of a power of two share their home slot under a
			// plain mask; Fibonacci hashing must still find each its own.
			e := h.get(base + uint64(i)<<20)
			if *e != (holders{-1, -1, -1}) {
				t.Fatalf("key %d of %d: held before this plan: %+v", i, n, *e)
			}
			*e = holders{int32(i), int32(i), int32(i)}
		}
		for i := range n {
			if e := h.get(base + uint64(i)<<20); e.entry != int32(i) {
				t.Fatalf("key %d of %d: %+v", i, n, *e)
			}
		}
	}
	fill(100, 1)
	fill(100, 1) // the same keys again: the reset emptied them
	h.gen = ^uint32(0)
	fill(100, 1) // the generation wraps
	if h.gen != 1 {
		t.Fatalf("generation %d after the wrap, want 1", h.gen)
	}
	fill(200000, 7)
	large := len(h.slots)
	fill(10, 7)
	if len(h.slots) >= large {
		t.Fatalf("table of %d slots kept after a plan of 10 keys", len(h.slots))
	}
}

// TestRunPlannerMatchesMapPlanner: the planner's tables (holderTable, the
// open groups' slice) decide exactly as the maps they replaced did, merges
// included: the same order and the same merged entries on random plans
// run one after another through one planner (so each starts from the last
// one's tables).
func TestRunPlannerMatchesMapPlanner(t *testing.T) {
	var p runPlanner
	for seed := uint64(0); seed < 3000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		entries := make([]runEntry, rng.IntN(80))
		for i := range entries {
			en := runEntry{group: rng.IntN(6) - 1, fence: rng.IntN(30) == 0, merge: rng.IntN(2) == 0}
			key := func() uint64 {
				if rng.IntN(3) == 0 {
					return rng.Uint64() // a hash, as the writeset's keys are
				}
				return 1 + uint64(rng.IntN(10))
			}
			for range rng.IntN(4) {
				en.keys = append(en.keys, key())
			}
			for range rng.IntN(3) {
				en.shared = append(en.shared, key())
			}
			entries[i] = en
		}
		wantOrder, wantFinal := mapPlan(entries)
		order := p.plan(entries)
		if !slices.Equal(order, wantOrder) || !slices.Equal(p.final, wantFinal) {
			t.Fatalf("seed %d: order %v final %v, the map planner's %v %v", seed, order, p.final, wantOrder, wantFinal)
		}
	}
}

// mapPlan is the run planner as it was with Go maps for the key holders and
// the open groups: the reference TestRunPlannerMatchesMapPlanner holds the
// planner to.
func mapPlan(entries []runEntry) (order, final []int32) {
	last, open := map[uint64]holders{}, map[int]int{}
	get := func(k uint64) holders {
		if h, ok := last[k]; ok {
			return h
		}
		return holders{-1, -1, -1}
	}
	var runs [][]int32
	final, runOf := make([]int32, len(entries)), make([]int32, len(entries))
	for i := range final {
		final[i] = -1
	}
	hold := func(e *runEntry, at int, entry int32) {
		for _, k := range e.keys {
			h := get(k)
			last[k] = holders{excl: max(h.excl, int32(at)), any: max(h.any, int32(at)), entry: pick(entry, h.entry)}
		}
		for _, k := range e.shared {
			h := get(k)
			last[k] = holders{excl: h.excl, any: max(h.any, int32(at)), entry: pick(entry, h.entry)}
		}
	}
	floor, lastFence := -1, -1
	for i := range entries {
		e := &entries[i]
		if target := mapMergeTarget(entries, i, get, lastFence); target >= 0 {
			final[target] = int32(i)
			hold(e, int(runOf[target]), -1)
			continue
		}
		bar := floor
		for _, k := range e.keys {
			bar = max(bar, int(get(k).any))
		}
		for _, k := range e.shared {
			bar = max(bar, int(get(k).excl))
		}
		at := -1
		if ri, ok := open[e.group]; ok && e.group >= 0 && !e.fence && ri >= bar {
			at = ri
		}
		if at < 0 {
			runs = append(runs, nil)
			at = len(runs) - 1
			if e.group >= 0 && !e.fence {
				open[e.group] = at
			}
		}
		if e.fence {
			floor, lastFence = at, i
		}
		runs[at] = append(runs[at], int32(i))
		runOf[i] = int32(at)
		hold(e, at, int32(i))
	}
	for _, run := range runs {
		order = append(order, run...)
	}
	return order, final
}

func mapMergeTarget(entries []runEntry, i int, get func(uint64) holders, lastFence int) int32 {
	e := &entries[i]
	if !e.merge || len(e.keys) == 0 {
		return -1
	}
	p := get(e.keys[0]).entry
	if p < 0 || int(p) < lastFence || !entries[p].merge || entries[p].group != e.group {
		return -1
	}
	for _, keys := range [][]uint64{e.keys, e.shared} {
		for _, k := range keys {
			if get(k).entry != p {
				return -1
			}
		}
	}
	return p
}
