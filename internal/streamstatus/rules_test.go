package streamstatus

import (
	"strings"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	now := time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)
	lag := func(s float64) *float64 { return &s }
	fresh := ptr(now.Add(-3 * time.Second))
	doc := func(state string, alive bool, l *float64) Stream {
		return Stream{Stream: "m", State: state, Alive: alive, LagSeconds: l, ReportedAt: fresh}
	}
	withErr := doc(StateError, false, nil)
	withErr.LastError = &LastError{Message: "duplicate key"}
	stale := doc(StateRunning, true, lag(1))
	stale.ReportedAt = ptr(now.Add(-5 * time.Minute))
	held := doc(StateCopying, true, lag(0.5))
	held.Held = "source Threads_running 9 > 8"
	limits := CheckLimits{MaxLag: time.Minute, WarnLag: 10 * time.Second, Now: now}
	cases := []struct {
		d    Stream
		l    CheckLimits
		code int
		why  string
	}{
		{doc(StateCaughtUp, true, lag(0)), limits, OK, "stream m is caught_up, lag 0s"},
		{doc(StateRunning, true, lag(9)), limits, OK, "stream m is running, lag 9s"},
		{held, limits, OK, "stream m is copying, lag 500ms; held: source Threads_running 9 > 8"},
		{doc(StateRunning, true, lag(10)), limits, Warning, "lag 10s (warning at 10s)"},
		{doc(StateRunning, true, lag(61)), limits, Critical, "lag 1m1s (limit 1m0s)"},
		{doc(StateRunning, true, nil), limits, Unknown, "lag unknown"},
		{doc(StateRunning, true, nil), CheckLimits{Now: now}, OK, "stream m is running"},
		{doc(StateRestarting, true, lag(1)), limits, Warning, "restarting"},
		{doc(StatePaused, true, lag(1)), limits, Warning, "paused"},
		{doc(StateStopped, false, nil), limits, Warning, "stopped"},
		{withErr, limits, Critical, "stream m is in error: duplicate key"},
		{doc(StateRunning, false, nil), limits, Critical, "no binlane process runs it (last report 3s ago)"},
		{stale, limits, Warning, "has not reported (last report 5m0s ago)"},
	}
	for _, c := range cases {
		code, why := Check(c.d, c.l)
		if code != c.code || !strings.Contains(why, c.why) {
			t.Errorf("%s alive=%v: %d %q, want %d %q", c.d.State, c.d.Alive, code, why, c.code, c.why)
		}
	}
	if Worst(OK, Unknown) != Unknown || Worst(Unknown, Warning) != Warning || Worst(Critical, Warning) != Critical || Worst(Warning, OK) != Warning {
		t.Error("Worst orders codes wrongly")
	}
	if p := Ready(doc(StateCopying, true, lag(0)), time.Minute); p.OK {
		t.Error("a copying stream is ready")
	}
	if p := Live(doc(StateCopying, true, lag(0))); !p.OK {
		t.Errorf("a copying stream is not alive: %s", p.Reason)
	}
}
