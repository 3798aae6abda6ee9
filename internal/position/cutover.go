package position

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// A cut-over (binlane cutover) keeps a journal of what it changed in
// binlane.cutover, one row per stream, so that a cut-over killed at any
// step is finished or undone by the next run: never half-switched.
//
//   - CutoverStarted: before the hand-over. What it changed so far is
//     recorded before each change (FrozeSource before the source is made
//     read-only); rolling back undoes it.
//   - CutoverHandedOver: the hand-over committed, in one target transaction
//     with the stream's state StateCutOver. From here it only goes forward:
//     the remaining steps (triggers, a writable target, the reverse stream)
//     are made again by the next run until CutoverDone.
//   - CutoverRolledBack: undone; a new cut-over may start.
//
// The journal lives in the target, beside the stream's row, and is written
// only by the cut-over that holds it (its token).

// Cut-over states.
const (
	CutoverStarted    = "started"
	CutoverHandedOver = "handed over"
	CutoverDone       = "done"
	CutoverRolledBack = "rolled back"
)

// CutoverTableName is the journal's table.
const CutoverTableName = "`binlane`.`cutover`"

// CutoverDDL creates binlane.cutover.
const CutoverDDL = "CREATE TABLE IF NOT EXISTS " + CutoverTableName + ` (
	stream VARCHAR(64) NOT NULL PRIMARY KEY,
	state VARCHAR(16) NOT NULL,
	token VARCHAR(128) NOT NULL DEFAULT '',
	froze_source VARCHAR(16) NOT NULL DEFAULT '',
	source_gtid TEXT NOT NULL,
	target_gtid TEXT NOT NULL,
	target_read_only TINYINT NOT NULL DEFAULT 0,
	reverse_stream VARCHAR(64) NOT NULL DEFAULT '',
	verified VARCHAR(16) NOT NULL DEFAULT '',
	message TEXT NOT NULL,
	started_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	handed_over_at TIMESTAMP(6) NULL DEFAULT NULL,
	updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// Cutover is a stream's journal row.
type Cutover struct {
	Stream string
	State  string
	Token  string // the cut-over process that holds the journal
	// FrozeSource is "read-only" once binlane is about to make the source
	// read-only (it was writable): a rollback makes it writable again.
	FrozeSource string
	SourceGTID  string // P: the source's final position
	TargetGTID  string // Q: the target's own position at the hand-over
	// TargetReadOnly: the target was read-only at the hand-over; binlane
	// makes it writable.
	TargetReadOnly bool
	Reverse        string // the reverse stream to prepare ("" none)
	Verified       string // "equal", "skipped" or ""
	Message        string
	StartedAt      time.Time
	HandedOverAt   time.Time
}

// CutoverError says a stream was cut over and must not run again.
type CutOverError struct {
	Stream  string
	Message string // the stream's message, which says where and when
}

func (e *CutOverError) Error() string {
	return fmt.Sprintf("stream %q was cut over (%s): its target took over from its source, and the stream must never apply "+
		"anything again; the way back is its reverse stream (binlane cutover --reverse)", e.Stream, e.Message)
}

// LoadCutover reads a stream's journal; ok is false when it has none.
func LoadCutover(ctx context.Context, db *sql.DB, stream string) (c Cutover, ok bool, err error) {
	var ro int
	var started, handed float64
	err = db.QueryRowContext(ctx, "SELECT stream, state, token, froze_source, source_gtid, target_gtid, target_read_only, reverse_stream, "+
		"verified, message, UNIX_TIMESTAMP(started_at), COALESCE(UNIX_TIMESTAMP(handed_over_at), 0) FROM "+CutoverTableName+
		" WHERE stream = ?", stream).Scan(&c.Stream, &c.State, &c.Token, &c.FrozeSource, &c.SourceGTID, &c.TargetGTID, &ro,
		&c.Reverse, &c.Verified, &c.Message, &started, &handed)
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return Cutover{}, false, nil
	}
	if err != nil {
		return Cutover{}, false, fmt.Errorf("read the cut-over of stream %q: %w", stream, err)
	}
	c.TargetReadOnly, c.StartedAt, c.HandedOverAt = ro != 0, unix(started), unix(handed)
	return c, true, nil
}

// BeginCutover starts the journal of a new cut-over held by token. A
// journal that was rolled back is replaced; any other is an error (the
// caller finishes or rolls it back first).
func BeginCutover(ctx context.Context, db *sql.DB, stream, token, reverse string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+CutoverTableName+" WHERE stream = ? AND state = ?", stream, CutoverRolledBack); err != nil {
		return fmt.Errorf("start the cut-over of stream %q: %w", stream, err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+CutoverTableName+
		" (stream, state, token, source_gtid, target_gtid, reverse_stream, message) VALUES (?, ?, ?, '', '', ?, '')",
		stream, CutoverStarted, token, reverse); err != nil {
		return fmt.Errorf("start the cut-over of stream %q (is one unfinished?): %w", stream, err)
	}
	return tx.Commit()
}

// ClaimCutover makes token the holder of a journal another cut-over process
// left (it died: the caller holds the cut-over lock).
func ClaimCutover(ctx context.Context, db *sql.DB, stream, token string) error {
	if _, err := db.ExecContext(ctx, "UPDATE "+CutoverTableName+" SET token = ? WHERE stream = ?", token, stream); err != nil {
		return fmt.Errorf("take over the cut-over of stream %q: %w", stream, err)
	}
	return nil
}

// CutoverColumn is a column of the journal (CutoverDDL). The cut-over's
// steps name the columns they write and act on by these constants, and
// UpdateCutover refuses any other: a misspelled name fails, instead of
// being skipped and leaving a step unjournaled.
type CutoverColumn string

// The journal's columns a cut-over step writes or acts on.
const (
	CutoverFrozeSource    CutoverColumn = "froze_source"
	CutoverSourceGTID     CutoverColumn = "source_gtid"
	CutoverTargetGTID     CutoverColumn = "target_gtid"
	CutoverTargetReadOnly CutoverColumn = "target_read_only"
	CutoverReverseStream  CutoverColumn = "reverse_stream"
	CutoverVerified       CutoverColumn = "verified"
	CutoverMessage        CutoverColumn = "message"
	CutoverState          CutoverColumn = "state"
)

// CutoverColumns are all of them, in CutoverDDL's order.
func CutoverColumns() []CutoverColumn {
	return []CutoverColumn{CutoverState, CutoverFrozeSource, CutoverSourceGTID, CutoverTargetGTID, CutoverTargetReadOnly,
		CutoverReverseStream, CutoverVerified, CutoverMessage}
}

// updatableCutover are the columns UpdateCutover writes, in the order it
// writes them; the others are written with the states they belong to
// (BeginCutover, HandOver).
var updatableCutover = []CutoverColumn{CutoverFrozeSource, CutoverSourceGTID, CutoverVerified, CutoverMessage, CutoverState}

// UpdateCutover records a step of the cut-over held by token: the columns
// of set (froze_source, source_gtid, verified, message, state). Any other
// column is an error, and nothing is written.
func UpdateCutover(ctx context.Context, db *sql.DB, stream, token string, set map[CutoverColumn]any) error {
	q := "UPDATE " + CutoverTableName + " SET "
	var args []any
	for _, col := range updatableCutover {
		v, ok := set[col]
		if !ok {
			continue
		}
		if len(args) > 0 {
			q += ", "
		}
		q += string(col) + " = ?"
		args = append(args, v)
	}
	if len(args) != len(set) {
		for col := range set {
			if !slices.Contains(updatableCutover, col) {
				return fmt.Errorf("record the cut-over of stream %q: %q is not a journal column UpdateCutover writes (want one of %v)",
					stream, col, updatableCutover)
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	res, err := db.ExecContext(ctx, q+" WHERE stream = ? AND token = ?", append(args, stream, token)...)
	if err != nil {
		return fmt.Errorf("record the cut-over of stream %q: %w", stream, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		if c, ok, err := LoadCutover(ctx, db, stream); err == nil && (!ok || c.Token != token) {
			return fmt.Errorf("the cut-over of stream %q is no longer this process's (another one took it over)", stream)
		}
	}
	return nil
}

// HandOver is the cut-over's point of no return, one target transaction:
// the stream must hold at exactly source (its position, and the cut-over's
// pause request, which stays: the stream can never apply past it); its
// state becomes StateCutOver, and the journal CutoverHandedOver with the
// target's own position target. same tells whether the stream's saved
// position is the source position (GTID sets compare as sets).
func HandOver(ctx context.Context, db *sql.DB, stream, token, source, target string, targetReadOnly bool,
	same func(saved string) bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var pos, pauseAt, pauseBy, state string
	if err := tx.QueryRowContext(ctx, "SELECT gtid_pos, pause_at, pause_by, state FROM "+Table+" WHERE name = ? FOR UPDATE",
		stream).Scan(&pos, &pauseAt, &pauseBy, &state); err != nil {
		return fmt.Errorf("hand over stream %q: %w", stream, err)
	}
	switch {
	case pauseBy != ByCutover || pauseAt != source:
		return fmt.Errorf("hand over stream %q: its pause request is %q by %q, not this cut-over's at %s", stream, pauseAt, pauseBy, source)
	case !same(pos):
		return fmt.Errorf("hand over stream %q: it is at %s, not at %s", stream, pos, source)
	}
	msg := fmt.Sprintf("cut over at %s on %s by binlane cutover", source, time.Now().UTC().Format(time.RFC3339))
	if _, err := tx.ExecContext(ctx, "UPDATE "+Table+" SET state = ?, message = ? WHERE name = ?", StateCutOver, msg, stream); err != nil {
		return fmt.Errorf("hand over stream %q: %w", stream, err)
	}
	ro := 0
	if targetReadOnly {
		ro = 1
	}
	res, err := tx.ExecContext(ctx, "UPDATE "+CutoverTableName+" SET state = ?, source_gtid = ?, target_gtid = ?, target_read_only = ?, "+
		"handed_over_at = NOW(6) WHERE stream = ? AND token = ? AND state = ?", CutoverHandedOver, source, target, ro, stream, token, CutoverStarted)
	if err != nil {
		return fmt.Errorf("hand over stream %q: %w", stream, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("hand over stream %q: the cut-over's journal is no longer this process's", stream)
	}
	return tx.Commit()
}

// CheckPrepare tells whether a stream called name can be prepared on db (a
// reverse stream): there is none, or it was cut over (its row and history
// are replaced), or no process ever ran it (what Prepare left: a rerun).
func CheckPrepare(ctx context.Context, db *sql.DB, name string) error {
	st, ok, err := Load(ctx, db, name)
	if err != nil || !ok || st.State == StateCutOver || st.Owner.Token == "" && st.Applied == 0 && st.State == StateStopped {
		return err
	}
	return fmt.Errorf("this server already has a stream %q (%s at %s): choose another name for the reverse stream", name, st.State, st.GTID)
}

// Prepare creates a stream called name that starts at pos (a reverse
// stream, which needs no copy), replacing a stream of that name that was
// cut over and its history (copy, kept statements, cut-over journal).
func Prepare(ctx context.Context, db *sql.DB, name, pos, message string) error {
	if err := Ensure(ctx, db); err != nil {
		return err
	}
	if err := CheckPrepare(ctx, db, name); err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{
		"DELETE FROM " + Table + " WHERE name = ?",
		"DELETE FROM " + CopyTableName + " WHERE stream = ?",
		"DELETE FROM " + DeferredTable + " WHERE stream = ?",
		"DELETE FROM " + CutoverTableName + " WHERE stream = ?",
	} {
		if _, err := tx.ExecContext(ctx, q, name); err != nil {
			return fmt.Errorf("prepare stream %q: %w", name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO "+Table+" (name, gtid_pos, state, message) VALUES (?, ?, ?, ?)",
		name, pos, StateStopped, message); err != nil {
		return fmt.Errorf("prepare stream %q: %w", name, err)
	}
	return tx.Commit()
}
