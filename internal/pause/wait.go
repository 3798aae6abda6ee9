package pause

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

// NotRunningError says the stream cannot hold for a request: no process
// runs it, or it stopped, failed or was cut over.
type NotRunningError struct {
	Stream, State, Message string
}

func (e *NotRunningError) Error() string {
	s := fmt.Sprintf("stream %q is %s", e.Stream, e.State)
	if e.Message != "" {
		s += " (" + e.Message + ")"
	}
	return s + ": it must be running (binlane replicate) to hold for a pause request"
}

// PassedError says the stream holds past an At request's position (it was
// there before the request came).
type PassedError struct{ At, Want gtid.Set }

func (e *PassedError) Error() string {
	return fmt.Sprintf("the stream holds at %s, past the requested %s", e.At, e.Want)
}

// WithdrawnError says the stream's row no longer carries the request
// waited for: it was withdrawn (binlane resume) or replaced.
type WithdrawnError struct{ Now position.PauseRequest }

func (e *WithdrawnError) Error() string {
	if e.Now.At == "" {
		return "the pause request was withdrawn (binlane resume?)"
	}
	return fmt.Sprintf("the pause request was replaced by %s's (%s)", e.Now.By, e.Now.At)
}

// TimeoutError says the stream did not hold within the time given.
type TimeoutError struct {
	Stream string
	Req    Request
	After  time.Duration
	At     string // where the stream was
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("stream %q did not %s within %s (it is at %s): is it far behind, or still copying?", e.Stream,
		e.Req.verb(), e.After, e.At)
}

func (r Request) verb() string {
	if r.Kind == At {
		return "reach " + r.At.String() + " and hold"
	}
	return "hold"
}

// Held is the requester's side of the state machine: whether the stream's
// row st shows it holding as req asks (for At, at exactly req's position).
// A stream that stopped, failed or was cut over, a request that is no
// longer in the row, and a stream holding past req's position are errors.
func Held(st position.State, req Request) (bool, error) {
	switch {
	case st.State == position.StateStopped || st.State == position.StateError || st.State == position.StateCutOver:
		return false, &NotRunningError{Stream: st.Name, State: st.State, Message: st.Message}
	case st.PauseAt != req.Text() || st.PauseBy != req.By:
		return false, &WithdrawnError{Now: position.PauseRequest{At: st.PauseAt, By: st.PauseBy}}
	case st.State != position.StatePaused:
		return false, nil
	case req.Kind == Hold:
		return true, nil
	}
	at, err := gtid.ParseSet(st.GTID)
	if err != nil {
		return false, fmt.Errorf("stream %q position %q: %w", st.Name, st.GTID, err)
	}
	switch {
	case at.Equal(req.At):
		return true, nil
	case at.ContainsSet(req.At):
		return false, &PassedError{At: at, Want: req.At}
	}
	return false, nil // held for an earlier request: it moves on to req's position
}

// WaitHeld waits until the stream holds as req asks (see Held), for at
// most timeout, and returns its row then. It fails as soon as no process
// runs the stream (its lock is free); a stream whose row says stopped while
// a process holds its lock is starting, and is waited for.
func WaitHeld(ctx context.Context, db *sql.DB, stream string, req Request, timeout time.Duration) (position.State, error) {
	deadline := time.Now().Add(timeout)
	var lockChecked time.Time
	for {
		st, ok, err := position.Load(ctx, db, stream)
		if err != nil {
			return st, err
		}
		if !ok {
			return st, fmt.Errorf("the target has no stream %q", stream)
		}
		held, err := Held(st, req)
		if held {
			return st, nil
		}
		var nr *NotRunningError
		notRunning := errors.As(err, &nr)
		if err != nil && (!notRunning || st.State == position.StateCutOver) {
			return st, err
		}
		if notRunning || time.Since(lockChecked) > time.Second {
			running, lerr := position.Running(ctx, db, stream)
			switch {
			case lerr != nil:
				return st, lerr
			case !running && notRunning:
				return st, err
			case !running:
				return st, &NotRunningError{Stream: stream, State: "not run by any binlane process"}
			}
			lockChecked = time.Now()
		}
		if time.Now().After(deadline) {
			return st, &TimeoutError{Stream: stream, Req: req, After: timeout, At: st.GTID}
		}
		select {
		case <-ctx.Done():
			return st, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// IsNotRunning reports a *NotRunningError.
func IsNotRunning(err error) bool {
	var nr *NotRunningError
	return errors.As(err, &nr)
}
