package scheduler

import (
	"math/rand/v2"
	"testing"
)

// TestKeyTable runs random puts and releases against a Go map doing the
// same, through growth, runs that wrap around the table's end, removals
// in the middle of runs, and the shrink after a burst, and compares every
// key's holders after each step.
func TestKeyTable(t *testing.T) {
	units := make([]*Unit, 8)
	for i := range units {
		units[i] = &Unit{Seq: uint64(i + 1)}
	}
	for _, tc := range []struct {
		name  string
		keys  int // key space: small ones crowd the table
		steps int
		burst bool // first put 5x keyTableKeep keys, then release them all
		wrap  bool // keys whose probes start in the table's last slots
	}{{"crowded", 2000, 200000, false, false}, {"sparse", 1 << 20, 100000, false, false},
		{"burst", 1500, 50000, true, false}, {"wrapping", 200, 100000, false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.keys)))
			var kt keyTable
			ref := map[uint64]holders{}
			var ends []uint64 // keys whose home is one of the last 16 of keyTableMin slots
			probe := keyTable{}
			probe.resize(keyTableMin)
			for k := uint64(1); tc.wrap && len(ends) < tc.keys; k++ {
				if probe.home(k) >= keyTableMin-16 {
					ends = append(ends, k)
				}
			}
			key := func() uint64 {
				if tc.wrap {
					return ends[rng.IntN(len(ends))]
				}
				k := uint64(rng.IntN(tc.keys))
				if k%7 == 0 {
					return k << 40 // keys that differ only in high bits
				}
				return k
			}
			if tc.burst {
				for k := range uint64(5 * keyTableKeep) {
					*kt.put(k + 1<<50) = holders{excl: units[0], last: units[0]}
				}
				grown := len(kt.slots)
				for k := range uint64(5 * keyTableKeep) {
					kt.release(k+1<<50, units[0])
				}
				if kt.n != 0 || len(kt.slots) >= grown || len(kt.slots) > keyTableKeep {
					t.Fatalf("after the burst: %d entries, %d slots (%d at its peak)", kt.n, len(kt.slots), grown)
				}
			}
			for step := range tc.steps {
				k, u := key(), units[rng.IntN(len(units))]
				switch rng.IntN(3) {
				case 0: // as Add: exclusive
					*kt.put(k) = holders{excl: u, last: u}
					ref[k] = holders{excl: u, last: u}
				case 1: // as Add: shared
					kt.put(k).last = u
					h := ref[k]
					h.last = u
					ref[k] = h
				default: // as Committed
					kt.release(k, u)
					h := ref[k]
					if h.excl == u {
						h.excl = nil
					}
					if h.last == u {
						h.last = nil
					}
					if h == (holders{}) {
						delete(ref, k)
					} else {
						ref[k] = h
					}
				}
				if kt.n != len(ref) {
					t.Fatalf("step %d: %d entries, want %d", step, kt.n, len(ref))
				}
				if step%1000 == 0 || step == tc.steps-1 {
					for k, want := range ref {
						if got := kt.get(k); got != want {
							t.Fatalf("step %d: key %d holders %v, want %v", step, k, got, want)
						}
					}
					for range 100 {
						if k := key(); ref[k] == (holders{}) && kt.get(k) != (holders{}) {
							t.Fatalf("step %d: key %d held, want none", step, k)
						}
					}
				}
			}
		})
	}
}

// TestKeyTableReserve: after reserve(n), n puts of new keys find room
// without resizing (the table holds them at most half full), and the
// entries already there stay found.
func TestKeyTableReserve(t *testing.T) {
	u := &Unit{Seq: 1}
	for _, tc := range []struct{ held, n int }{{0, 0}, {0, 1}, {0, keyTableMin / 2}, {10, keyTableMin}, {3000, 100000}} {
		var kt keyTable
		for k := range uint64(tc.held) {
			*kt.put(k + 1<<60) = holders{excl: u, last: u}
		}
		kt.reserve(tc.n)
		size := len(kt.slots)
		if tc.held+tc.n > 0 && 2*(tc.held+tc.n) > size || size > max(keyTableMin, 4*(tc.held+tc.n)) {
			t.Errorf("%d held, %d reserved: %d slots", tc.held, tc.n, size)
		}
		for k := range uint64(tc.n) {
			*kt.put(k) = holders{excl: u, last: u}
		}
		if len(kt.slots) != size {
			t.Errorf("%d held, %d reserved: resized from %d to %d slots by the puts", tc.held, tc.n, size, len(kt.slots))
		}
		for k := range uint64(tc.held) {
			if kt.get(k+1<<60).excl != u {
				t.Fatalf("%d held, %d reserved: key %d lost", tc.held, tc.n, k)
			}
		}
	}
}
