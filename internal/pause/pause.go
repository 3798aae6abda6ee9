// Package pause is how another process makes a running stream hold at a
// transaction boundary, and the state machine both sides follow:
//
//	requester (binlane pause,            stream's process (replicate)
//	online verify, binlane cutover)
//	─────────────────────────────        ─────────────────────────────────────
//	writes a Request into the     ──►    a watcher sees it change: the attempt
//	stream's row (pause_at/by)           drains and a new attempt Decides:
//	                                       Run      no request (or ignored)
//	                                       RunTo P  apply up to P exactly,
//	                                                then Decide again
//	                                       Hold     state paused, position
//	                                                saved; wait for a change
//	waits until the row shows it   ◄──    (Held reads the row)
//	held, then does its work
//	withdraws the request          ──►    the held attempt sees the change and
//	                                      Decides again: Run
//
// A Request is either Hold ("where you are": binlane pause) or At a source
// position P (an online verify, a cut-over). Only the row carries it, so
// it survives either process restarting: a stream started while a request
// is in place holds before it applies anything. The position commits with
// the rows (package apply), so a stream that holds at P has exactly the
// rows of P on the target.
//
// The decisions (Decide, Held) are pure; the package's I/O is the
// requester's side: WaitHeld, and Pairer, which pairs a source snapshot
// with the target held at the same position for an online verify. The
// package writes only pause requests.
package pause

import (
	"fmt"

	"github.com/binlane/binlane/internal/gtid"
)

// Kind is what a request asks.
type Kind int

const (
	// None: no request; the stream runs.
	None Kind = iota
	// Hold: hold where the stream is, at the end of what it applied.
	Hold
	// At: apply up to a source position exactly, and hold there.
	At
)

// holdText is a Hold request in the stream's row (pause_at).
const holdText = "hold"

// Request is a pause request, as in the stream's row.
type Request struct {
	Kind Kind
	At   gtid.Set // the position of an At request
	By   string   // who asked (position.ByPause, ByVerify, ByCutover)
}

// HoldRequest asks the stream to hold where it is.
func HoldRequest(by string) Request { return Request{Kind: Hold, By: by} }

// AtRequest asks the stream to hold at pos.
func AtRequest(pos gtid.Set, by string) Request { return Request{Kind: At, At: pos, By: by} }

// Text is the request as the stream's row keeps it ("" for None).
func (r Request) Text() string {
	switch r.Kind {
	case Hold:
		return holdText
	case At:
		return r.At.String()
	}
	return ""
}

func (r Request) String() string {
	switch r.Kind {
	case Hold:
		return "hold where it is (asked by " + r.By + ")"
	case At:
		return "hold at " + r.At.String() + " (asked by " + r.By + ")"
	}
	return "no pause request"
}

// Parse reads a request from the stream's row.
func Parse(text, by string) (Request, error) {
	switch text {
	case "":
		return Request{}, nil
	case holdText:
		return HoldRequest(by), nil
	}
	pos, err := gtid.ParseSet(text)
	if err != nil {
		return Request{}, fmt.Errorf("pause request %q of %s is neither %q nor a GTID position: %w", text, by, holdText, err)
	}
	return AtRequest(pos, by), nil
}

// Action is what an attempt of the stream does about a request.
type Action int

const (
	// Run: apply without a pause stop (the attempt's own stop position, if
	// any, stays).
	Run Action = iota
	// RunTo: apply up to the request's position, then decide again.
	RunTo
	// HoldHere: record the state paused and wait until the request changes.
	HoldHere
)

// Plan is an attempt's decision.
type Plan struct {
	Action Action
	StopAt gtid.Set // RunTo's position
	// Ignored says why a request does not stop the stream ("" when it
	// does, or there is none).
	Ignored string
}

// Decide is the stream's side of the state machine: what an attempt that
// starts at applied does about req. A copying stream holds for a Hold (the
// copy resumes from its checkpoints) but ignores an At request: the
// position is only meaningful once every table is copied. A stream at or
// past an At position holds where it is; the requester sees whether that
// is exactly its position (Held).
func Decide(req Request, applied gtid.Set, copying bool) Plan {
	switch req.Kind {
	case Hold:
		return Plan{Action: HoldHere}
	case At:
		if copying {
			return Plan{Action: Run, Ignored: "the copy must finish first"}
		}
		if applied.ContainsSet(req.At) {
			return Plan{Action: HoldHere}
		}
		return Plan{Action: RunTo, StopAt: req.At}
	}
	return Plan{Action: Run}
}
