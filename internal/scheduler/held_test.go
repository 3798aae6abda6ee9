package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHeldScanChangesNothing: Next that returns at once after a scan that
// handed out nothing (Scheduler.held), or resumes where that scan ended,
// hands out exactly what a full scan would, step by step: two schedulers take the same random stream of units
// (hot and cold keys, shared keys, tables, barriers, head-only, solo and
// lingering units), the same dispatches to up to 4 workers, commits in
// random order of the batches running (with and without domains) and
// requeues, and one of them never keeps a held scan. The held one must
// also have skipped and resumed scans, or the test proves nothing.
func TestHeldScanChangesNothing(t *testing.T) {
	total, totalResumed := 0, 0
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 46))
		cfg := Config{MaxUnits: 600, MaxBatch: 1 + rng.IntN(128), MaxBatchBytes: 1 << 20, Chain: rng.IntN(3), MaxSolo: rng.IntN(3)}
		held, ref := New(cfg, 1), New(cfg, 1)
		workers := 1 + rng.IntN(4)
		type running struct{ held, ref []*Unit }
		var run []running
		next, skipped, resumed := uint64(1), 0, 0
		fill := func(step int) {
			for len(run) < workers {
				ref.held = heldScan{}
				want := ref.Next()
				before := held.version
				h := held.held
				wasHeld := h.valid && h.version == before
				got := held.Next()
				switch {
				case wasHeld && h.stuck && h.ready == held.ready:
					skipped++
				case wasHeld && h.from > 0:
					resumed++
				}
				if seqs(got) != seqs(want) {
					t.Fatalf("seed %d step %d: Next %v, a full scan %v", seed, step, seqs(got), seqs(want))
				}
				if got == nil {
					return
				}
				run = append(run, running{got, want})
			}
		}
		for step := range 3000 {
			switch r := rng.IntN(10); {
			case r < 6 && !held.Full():
				desc := ""
				for range 1 + rng.IntN(3) {
					if rng.IntN(4) == 0 {
						desc += fmt.Sprint(",h", rng.IntN(4)) // hot
					} else {
						desc += fmt.Sprint(",c", rng.IntN(2000))
					}
				}
				switch rng.IntN(40) {
				case 0:
					desc += ",B"
				case 1:
					desc += ",H"
				case 2:
					desc += ",O"
				case 3:
					desc += ",O,L"
				case 4:
					desc += ",S:h1"
				case 5:
					desc += ",T:t"
				}
				held.Add(unit(next, desc))
				ref.Add(unit(next, desc))
				next++
			case r < 9 && len(run) > 0:
				i := 0 // the oldest batch commits: batches commit in Seq order
				for j := range run {
					if run[j].held[0].Seq < run[i].held[0].Seq {
						i = j
					}
				}
				held.Committed(run[i].held)
				ref.Committed(run[i].ref)
				run = slices.Delete(run, i, i+1)
			case len(run) > 0:
				i := rng.IntN(len(run)) // rolled back: it runs again
				held.Requeue(run[i].held)
				ref.Requeue(run[i].ref)
				run = slices.Delete(run, i, i+1)
			}
			fill(step)
		}
		total += skipped
		totalResumed += resumed
	}
	if total == 0 || totalResumed == 0 {
		t.Fatalf("%d scans skipped, %d resumed", total, totalResumed)
	}
	t.Logf("%d scans skipped, %d resumed", total, totalResumed)
}
