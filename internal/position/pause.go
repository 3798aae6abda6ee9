package position

import (
	"context"
	"database/sql"
	"fmt"
)

// A pause request is how an online verify, another process, makes a
// running stream hold at a source position: it writes the position into
// the stream's row (pause_at); the stream's process, which polls it, stops
// applying exactly there, records StatePaused and waits until the request
// is cleared. Only the row carries the request, so it survives either
// process restarting, and the stream's lock is never shared.

// RequestPause asks the stream to hold at pos.
func RequestPause(ctx context.Context, db *sql.DB, name, pos string) error {
	res, err := db.ExecContext(ctx, "UPDATE "+Table+" SET pause_at = ? WHERE name = ?", pos, name)
	if err != nil {
		return fmt.Errorf("ask stream %q to pause at %s: %w", name, pos, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if _, ok, err := Load(ctx, db, name); err == nil && !ok {
			return fmt.Errorf("the target has no stream %q", name)
		}
	}
	return nil
}

// ClearPause withdraws a pause request: the stream goes on.
func ClearPause(ctx context.Context, db *sql.DB, name string) error {
	if _, err := db.ExecContext(ctx, "UPDATE "+Table+" SET pause_at = '' WHERE name = ?", name); err != nil {
		return fmt.Errorf("let stream %q go on: %w", name, err)
	}
	return nil
}

// PauseAt reads the stream's pause request ("" when none).
func PauseAt(ctx context.Context, db *sql.DB, name string) (string, error) {
	var pos string
	err := db.QueryRowContext(ctx, "SELECT pause_at FROM "+Table+" WHERE name = ?", name).Scan(&pos)
	if err == sql.ErrNoRows || isNoTable(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read stream %q: %w", name, err)
	}
	return pos, nil
}
