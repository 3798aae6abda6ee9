package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/streamstatus"
)

// TestStatusLine: the periodic line's rate covers the time since the line
// before, and a new attempt counts from its own start.
func TestStatusLine(t *testing.T) {
	t0 := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	prev := streamstatus.Snapshot{Started: t0, At: t0.Add(60 * time.Second), Committed: 1000}
	cur := streamstatus.Status{State: streamstatus.StateCaughtUp, Position: "0-1-4242", Lag: 1234 * time.Microsecond, Restarts: 1,
		Throttled: "source Threads_running 9 > 8", Snapshot: streamstatus.Snapshot{Started: t0, At: t0.Add(120 * time.Second), Committed: 19750}}
	want := "[state caught_up position 0-1-4242 lag 1ms trx_per_sec 312.5 held source Threads_running 9 > 8 restarts 1]"
	if got := fmt.Sprint(statusLine(cur, prev)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	cur.Snapshot.Started = t0.Add(100 * time.Second) // restarted: 19750 in 20 s
	cur.Throttled, cur.Restarts = "", 0
	if got := fmt.Sprint(statusLine(cur, prev)); got != "[state caught_up position 0-1-4242 lag 1ms trx_per_sec 987.5]" {
		t.Errorf("after a restart: %s", got)
	}
}
