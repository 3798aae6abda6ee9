package replicate

import (
	"context"
	"errors"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/pause"
	"github.com/binlane/binlane/internal/position"
)

// The stream's side of a pause request (package pause has the state
// machine): each attempt reads the request and decides (pause.Decide)
// whether it runs, runs up to a position and stops (the next attempt then
// holds), or holds where it is; a watcher ends a running attempt when the
// request changes, after a graceful drain.

// errPauseChanged restarts a run at once: a pause request came, changed or
// was withdrawn (see position.RequestPause).
var errPauseChanged = errors.New("pause request changed")

// errCutOver ends Run without an error: the stream held for a cut-over,
// which handed it over (binlane cutover); it must never run again.
var errCutOver = errors.New("the stream was cut over")

// pausePoll is how often a run looks for pause requests (a primary-key
// read of the stream's row): a requester waits for the stream to hold, a
// cut-over with the source's writes frozen, so this bounds its wait.
const pausePoll = 100 * time.Millisecond

// pauseStop returns the position the attempt stops at: the pause request's
// when there is one to run to; for a request to hold, it holds here (state
// paused) until the request changes, and returns errPauseChanged (or
// errCutOver). A stream that was cut over never gets past this.
func (r *run) pauseStop(ctx context.Context, stop, start gtid.Set, copying bool) (gtid.Set, error) {
	r.pausing, r.pauseStops = position.PauseRequest{}, false
	raw, err := position.PauseAt(ctx, r.meta, r.cfg.Stream)
	if err != nil {
		return stop, err
	}
	if raw.CutOver {
		return stop, errCutOver
	}
	r.pausing = raw // seen, even when ignored: the watcher restarts on a change only
	req, err := pause.Parse(raw.At, raw.By)
	if err != nil {
		r.log.Warn("ignoring a pause request", "error", err)
		return stop, nil
	}
	plan := pause.Decide(req, start, copying)
	switch plan.Action {
	case pause.Run:
		if plan.Ignored != "" {
			r.log.Warn("ignoring a pause request", "request", req.String(), "reason", plan.Ignored)
		}
		return stop, nil
	case pause.RunTo:
		if !stop.IsEmpty() && plan.StopAt.ContainsSet(stop) {
			return stop, nil // --stop-at-gtid comes first: the run ends there
		}
		r.pauseStops = true
		r.log.Info("pausing at a requested position", "pause_at", plan.StopAt.String(), "by", req.By)
		return plan.StopAt, nil
	}
	return stop, r.hold(ctx, start, req, raw)
}

// hold records the state paused and waits until the request changes.
func (r *run) hold(ctx context.Context, at gtid.Set, req pause.Request, seen position.PauseRequest) error {
	r.saveState(position.StatePaused, "held at "+at.String()+": "+req.String())
	r.cfg.Observer.setPaused(true)
	defer r.cfg.Observer.setPaused(false)
	r.log.Info("paused", "position", at.String(), "request", req.String())
	tick := time.NewTicker(pausePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		now, err := position.PauseAt(ctx, r.meta, r.cfg.Stream)
		switch {
		case err != nil:
			return err
		case now.CutOver:
			return errCutOver
		case now != seen:
			r.log.Info("pause request changed; going on", "position", at.String())
			r.saveState(position.StateRunning, "")
			return errPauseChanged
		}
	}
}

// watchPause stops a running attempt when the pause request changes from
// seen (the request the attempt started with), so that the next attempt
// decides anew.
func (r *run) watchPause(ctx context.Context, stop context.CancelCauseFunc, seen position.PauseRequest) {
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
