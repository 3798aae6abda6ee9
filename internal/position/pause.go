package position

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// A pause request is how another process (binlane pause, an online verify,
// a cut-over) makes a running stream hold: it writes what it asks for into
// the stream's row (pause_at: a source position, or package pause's word
// for "where you are") and who asks (pause_by); the stream's process,
// which polls it, holds exactly there, records StatePaused and waits until
// the request changes. Only the row carries the request, so it survives
// either process restarting, and the stream's lock is never shared.
//
// One request at a time: a request is written only when there is none or
// when it is the same requester's, and withdrawn only by its requester, so
// an online verify can neither release nor replace a cut-over's hold.

// Requesters of pauses.
const (
	ByPause   = "binlane pause"
	ByVerify  = "online verify"
	ByCutover = "binlane cutover"
)

// PauseHeldError says another requester's pause request is in place.
type PauseHeldError struct {
	Stream string
	At, By string // the request in place
}

func (e *PauseHeldError) Error() string {
	return fmt.Sprintf("stream %q is held by a pause request of %s (%s): only one request at a time", e.Stream, e.By, e.At)
}

// RequestPause asks the stream to hold at pos on behalf of by. It fails
// with a *PauseHeldError when another requester's request is in place.
func RequestPause(ctx context.Context, db *sql.DB, name, pos, by string) error {
	res, err := db.ExecContext(ctx, "UPDATE "+Table+" SET pause_at = ?, pause_by = ? WHERE name = ? AND (pause_at = '' OR pause_by = ?)",
		pos, by, name, by)
	if err != nil {
		return fmt.Errorf("ask stream %q to pause at %s: %w", name, pos, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	st, ok, err := Load(ctx, db, name)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("the target has no stream %q", name)
	case st.PauseAt == pos && st.PauseBy == by:
		return nil // already asked
	}
	return &PauseHeldError{Stream: name, At: st.PauseAt, By: st.PauseBy}
}

// ClearPause withdraws by's pause request: the stream goes on. Another
// requester's request stays (ok is false then, and when there was none).
func ClearPause(ctx context.Context, db *sql.DB, name, by string) (ok bool, err error) {
	res, err := db.ExecContext(ctx, "UPDATE "+Table+" SET pause_at = '', pause_by = '' WHERE name = ? AND pause_by = ? AND pause_at <> ''",
		name, by)
	if err != nil {
		return false, fmt.Errorf("let stream %q go on: %w", name, err)
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// PauseRequest is the request in a stream's row, and whether the stream
// was cut over (it must then never run again).
type PauseRequest struct {
	At, By  string // At "" when there is none
	CutOver bool
}

// PauseAt reads the stream's pause request.
func PauseAt(ctx context.Context, db *sql.DB, name string) (PauseRequest, error) {
	var r PauseRequest
	var state string
	err := db.QueryRowContext(ctx, "SELECT pause_at, pause_by, state FROM "+Table+" WHERE name = ?", name).Scan(&r.At, &r.By, &state)
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return PauseRequest{}, nil
	}
	if err != nil {
		return PauseRequest{}, fmt.Errorf("read stream %q: %w", name, err)
	}
	r.CutOver = state == StateCutOver
	return r, nil
}
