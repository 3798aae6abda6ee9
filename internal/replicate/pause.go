package replicate

import (
	"context"
	"errors"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

// errPauseChanged restarts a run at once: a pause request came, changed or
// was withdrawn (see position.RequestPause).
var errPauseChanged = errors.New("pause request changed")

// pausePoll is how often a run looks for pause requests: an online verify
// waits for the stream to hold, so this bounds its wait.
const pausePoll = 250 * time.Millisecond

// pauseStop returns the position the run stops at: the pause request's when
// there is one. A stream already at the requested position holds there
// (state paused) until the request changes; then the run restarts. A run
// that copies ignores requests: the copy must finish first.
func (r *run) pauseStop(ctx context.Context, stop, start gtid.Set, copying bool) (gtid.Set, error) {
	r.pausing, r.pauseStops = "", false
	req, err := position.PauseAt(ctx, r.meta, r.cfg.Stream)
	if err != nil || req == "" {
		return stop, err
	}
	r.pausing = req // seen, even when ignored: the watcher restarts on a change only
	if copying {
		r.log.Warn("ignoring a pause request while the copy runs", "pause_at", req)
		return stop, nil
	}
	at, err := gtid.ParseSet(req)
	if err != nil {
		r.log.Warn("ignoring a pause request that is not a GTID position", "pause_at", req, "error", err)
		return stop, nil
	}
	r.pauseStops = true
	if !start.ContainsSet(at) {
		r.log.Info("pausing at a requested position", "pause_at", req)
		return at, nil
	}
	r.saveState(position.StatePaused, "held at "+start.String()+" for an online verify")
	r.log.Info("paused", "position", start.String(), "requested", req)
	tick := time.NewTicker(pausePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return stop, ctx.Err()
		case <-tick.C:
		}
		now, err := position.PauseAt(ctx, r.meta, r.cfg.Stream)
		if err != nil {
			return stop, err
		}
		if now != req {
			r.log.Info("pause request withdrawn; going on", "position", start.String())
			r.saveState(position.StateRunning, "")
			return stop, errPauseChanged
		}
	}
}

// watchPause stops a running attempt when a pause request appears or
// changes from seen (the request the attempt started with), so that the
// next attempt stops exactly at it. It takes seen as an argument: it may
// outlive its attempt by a moment, while the next one sets r.pausing.
func (r *run) watchPause(ctx context.Context, stop context.CancelCauseFunc, seen string) {
	tick := time.NewTicker(pausePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		req, err := position.PauseAt(ctx, r.meta, r.cfg.Stream)
		if err != nil {
			continue // the lock watcher reports a lost target
		}
		if req != seen {
			stop(errPauseChanged)
			return
		}
	}
}
