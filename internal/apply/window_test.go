package apply

import (
	"fmt"
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/scheduler"
)

func TestWindowSizer(t *testing.T) {
	repeat := func(pattern []int, n int) []int {
		var out []int
		for range n {
			out = append(out, pattern...)
		}
		return out
	}
	cases := []struct {
		name string
		busy []int
		want int
	}{
		{"one worker busy keeps one worker's window", repeat([]int{1}, 200), 512},
		{"four busy grow it to the configured window", repeat([]int{4}, 200), 2048},
		{"more busy than the window counts stop at it", repeat([]int{16}, 200), 2048},
		{"an occasional second worker does not double it", repeat([]int{1, 1, 1, 2}, 50), 512},
		{"two busy most of the time", repeat([]int{2, 2, 2, 1}, 50), 1024},
		{"it shrinks when the parallel work ends", slices.Concat(repeat([]int{4}, 200), repeat([]int{1}, 200)), 512},
		{"never below one worker's", repeat([]int{0}, 200), 512},
		{"a few reports do not grow it at once", repeat([]int{4}, 4), 1024},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWindowSizer(512, 2048)
			if got := w.size(); got != 512 {
				t.Fatalf("starts at %d, want one worker's 512", got)
			}
			got := 0
			for _, b := range c.busy {
				got = w.observe(b)
			}
			if got != c.want {
				t.Fatalf("window %d, want %d (average busy %.2f)", got, c.want, w.avg)
			}
		})
	}
}

// TestWindowFollowsTheWork: a backlog whose transactions each wait for the
// one before keeps one worker busy, and the window stays one worker's
// (before, 4 workers held 4 workers' window of transactions in memory for
// nothing); a backlog of independent transactions still gets the window
// of every worker.
func TestWindowFollowsTheWork(t *testing.T) {
	st := replayHotRow(t, 300, 8)
	one, four := int64(scheduler.DefaultWindow(1, 8)), int64(scheduler.DefaultWindow(4, 8))
	if one >= four {
		t.Fatalf("the test needs a window that grows: %d and %d", one, four)
	}
	if peak := st.PeakInFlight.Load(); peak > one || st.Window.Load() != one {
		t.Fatalf("a serial backlog: %d transactions in flight at most, window %d at the end; want at most one worker's %d",
			peak, st.Window.Load(), one)
	}

	p := newPair(t)
	p.src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.cold (id INT PRIMARY KEY, n INT)")
	for i := range 600 {
		p.src.ExecT(t, fmt.Sprintf("INSERT INTO app.cold VALUES (%d, %d)", i, i))
	}
	st, err := p.replay(t, runOpts{workers: 4, maxBatch: 8, mode: scheduler.ModeWriteset})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if peak := st.PeakInFlight.Load(); peak <= one {
		t.Fatalf("independent transactions: %d in flight at most, want more than one worker's window %d", peak, one)
	}
}
