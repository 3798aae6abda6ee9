package replicate

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/txn"
)

// TestObserverStates follows an Observer through a stream's life: starting,
// holding for a pause request, running, a failed attempt (restarting, with
// its error redacted), running again with the error kept, held again, and
// the two ends.
func TestObserverStates(t *testing.T) {
	o := &Observer{heartbeat: time.Second}
	if st := o.Status(); st.State != streamstatus.StateStarting || st.Running() || st.Position != "" || st.LastError != "" {
		t.Fatalf("before a run: %+v", st)
	}
	o.setPaused(true) // a stream started while a pause request is in place
	if st := o.Status(); st.State != streamstatus.StatePaused || st.Running() {
		t.Fatalf("held before its first attempt: %+v", st)
	}
	o.setPaused(false)
	if _, ok := o.Read(); ok {
		t.Fatal("a reading before a run")
	}

	a := apply.New(apply.Config{Workers: 2}, nil, nil)
	o.Attach(a, txn.NewAssembler(nil, txn.Config{}))
	st := o.Status()
	if st.State != streamstatus.StateRunning || !st.Running() || len(st.Snapshot.Workers) != 2 || st.Copy != nil {
		t.Fatalf("attached: %+v", st)
	}

	o.failed(errors.New("target: lost connection to mysql://binlane:hunter2@db2:3306/"), false)
	st = o.Status()
	if st.State != streamstatus.StateRestarting || st.Running() || strings.Contains(st.LastError, "hunter2") ||
		!strings.Contains(st.LastError, "lost connection") || st.LastErrorAt.IsZero() {
		t.Fatalf("after a failed attempt: %+v", st)
	}
	o.Attach(apply.New(apply.Config{Workers: 3}, nil, nil), txn.NewAssembler(nil, txn.Config{}))
	st = o.Status()
	if st.State != streamstatus.StateRunning || len(st.Snapshot.Workers) != 3 || !strings.Contains(st.LastError, "lost connection") {
		t.Fatalf("after the restart: %+v", st)
	}

	o.setPaused(true)
	if st := o.Status(); st.State != streamstatus.StatePaused || st.Running() || len(st.Snapshot.Workers) != 3 {
		t.Fatalf("held: %+v", st)
	}
	o.setPaused(false)
	o.stopped()
	if st := o.Status(); st.State != streamstatus.StateStopped || st.Running() {
		t.Fatalf("stopped: %+v", st)
	}
	o2 := &Observer{}
	o2.failed(errors.New("boom"), true)
	if st := o2.Status(); st.State != streamstatus.StateError || st.LastError != "boom" {
		t.Fatalf("failed before a run: %+v", st)
	}
}

func TestCaughtUp(t *testing.T) {
	now := time.Unix(1000, 0)
	hb := time.Second
	event, beat := now.Add(-2*time.Second), now.Add(-time.Second)
	cases := []struct {
		name         string
		s            streamstatus.Snapshot
		event, heart time.Time
		want         bool
	}{
		{"heartbeat after the last event", streamstatus.Snapshot{}, event, beat, true},
		{"nothing heard", streamstatus.Snapshot{}, time.Time{}, time.Time{}, false},
		{"event after the heartbeat", streamstatus.Snapshot{}, beat, event, false},
		{"in flight", streamstatus.Snapshot{InFlight: 1, NextTS: 999}, event, beat, false},
		{"silent source", streamstatus.Snapshot{}, now.Add(-time.Minute), now.Add(-10 * time.Second), false},
	}
	for _, c := range cases {
		if got := caughtUp(c.s, c.event, c.heart, hb, now); got != c.want {
			t.Errorf("%s: caught up %v, want %v", c.name, got, c.want)
		}
	}
}

// TestDomainLags: a position with several MariaDB GTID domains is split by
// domain; a domain with a transaction in flight lags by its oldest one's
// age, the others by the stream's idle lag; one domain, or a MySQL set,
// is not split.
func TestDomainLags(t *testing.T) {
	now := time.Unix(1000, 0)
	s := streamstatus.Snapshot{Position: "0-1-5,1-1-9,2-1-40", DomainNextTS: map[uint32]int64{1: 990}}
	got := domainLags(s, 200*time.Millisecond, now)
	want := []streamstatus.DomainLag{{Domain: 0, GTID: "0-1-5", Lag: 200 * time.Millisecond}, {Domain: 1, GTID: "1-1-9", Lag: 10 * time.Second},
		{Domain: 2, GTID: "2-1-40", Lag: 200 * time.Millisecond}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("domainLags: %+v, want %+v", got, want)
	}
	for _, pos := range []string{"0-1-5", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", ""} {
		if got := domainLags(streamstatus.Snapshot{Position: pos}, 0, now); got != nil {
			t.Errorf("position %q split: %+v", pos, got)
		}
	}
}
