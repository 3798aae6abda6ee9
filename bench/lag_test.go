package main

import (
	"testing"
	"time"
)

// every returns samples of transactions first+1..last, the n-th at n*step
// (plus extra from transaction from on).
func every(first, last int64, step time.Duration, from int64, extra time.Duration) []sample {
	var out []sample
	for g := first + 1; g <= last; g++ {
		at := time.Duration(g-first) * step
		if g >= from {
			at += extra
		}
		out = append(out, sample{at, g})
	}
	return out
}

func TestPeakLag(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name     string
		src, dst []sample
		want     time.Duration
		at       int64
	}{
		{"keeps up", every(100, 200, 10*ms, 0, 0), every(100, 200, ms, 0, 0), 0, 0},
		// Transaction 111 takes 3 s to apply: a live replica receives it
		// at 110 ms and is done 3.001 s after the 110th, at 3.101 s.
		{"one big transaction", every(100, 200, 10*ms, 0, 0), every(100, 200, ms, 111, 3*time.Second), 2991 * ms, 111},
		// A replica ten times slower than the source falls behind to the end.
		{"slower than the source", every(100, 200, ms, 0, 0), every(100, 200, 10*ms, 0, 0), 891 * ms, 200},
		{"no samples", nil, every(100, 200, ms, 0, 0), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, at := peakLag(c.src, c.dst, 100, 200)
			if d := got - c.want; d < -time.Microsecond || d > time.Microsecond || at != c.at {
				t.Errorf("peak lag %v at %d, want %v at %d", got, at, c.want, c.at)
			}
		})
	}
}

func TestSeqOf(t *testing.T) {
	for in, want := range map[string]int64{"0-1-123": 123, " 0-2-7\n": 7, "0-1-5,1-1-9": 5, "": -1, "x": -1} {
		if got := seqOf(in); got != want {
			t.Errorf("seqOf(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestFirstApplied(t *testing.T) {
	for _, tc := range []struct {
		samples []sample
		want    time.Duration
		ok      bool
	}{
		{nil, 0, false},
		{[]sample{{10 * time.Millisecond, 5}}, 0, false},
		{[]sample{{10 * time.Millisecond, 5}, {30 * time.Millisecond, 6}, {50 * time.Millisecond, 9}}, 30 * time.Millisecond, true},
		{[]sample{{20 * time.Millisecond, 7}}, 20 * time.Millisecond, true},
	} {
		if got, ok := firstApplied(tc.samples, 5); got != tc.want || ok != tc.ok {
			t.Errorf("firstApplied(%v, 5) = %v, %v; want %v, %v", tc.samples, got, ok, tc.want, tc.ok)
		}
	}
}
