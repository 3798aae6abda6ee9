// Package position keeps a stream's state in the target itself, in
// binlane.streams: the source position the target has applied up to, the
// stream's state and last error. The position row is updated in the same
// target transaction as the rows it covers, so a crash can neither lose an
// applied transaction nor apply one twice.
//
// The package owns the binlane schema and the SQL that reads and writes it;
// it must never touch any other table.
package position

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schema and Table name where the state lives.
const (
	Schema = "binlane"
	Table  = "`binlane`.`streams`"
)

// Stream states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	StateError   = "error"
)

// State is one stream's row.
type State struct {
	Name     string
	SourceID string // server uuid or server_id@address of the source
	Flavor   string
	GTID     string // position: the source GTIDs applied (MariaDB per domain, MySQL set)
	File     string // binlog file and position after the last applied transaction
	Pos      uint64
	LastGTID string
	SourceTS time.Time // source commit time of the last applied transaction
	Applied  uint64    // transactions applied since the stream was created
	State    string
	Message  string
	// DDLGTID is set while a statement that cannot roll back (DDL) runs.
	DDLGTID   string
	UpdatedAt time.Time
	// Reported by the running process every few seconds: lag (-1 when
	// unknown), and a JSON snapshot of the applier's counters.
	LagMillis  int64
	Stats      string
	ReportedAt time.Time
}

// Ensure creates the schema and table if they do not exist.
func Ensure(ctx context.Context, db *sql.DB) error {
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS `" + Schema + "`",
		`CREATE TABLE IF NOT EXISTS ` + Table + ` (
			name VARCHAR(64) NOT NULL PRIMARY KEY,
			source_id VARCHAR(255) NOT NULL DEFAULT '',
			flavor VARCHAR(16) NOT NULL DEFAULT '',
			gtid_pos TEXT NOT NULL,
			binlog_file VARCHAR(255) NOT NULL DEFAULT '',
			binlog_pos BIGINT UNSIGNED NOT NULL DEFAULT 0,
			last_gtid VARCHAR(255) NOT NULL DEFAULT '',
			source_ts TIMESTAMP(6) NULL DEFAULT NULL,
			applied_trx BIGINT UNSIGNED NOT NULL DEFAULT 0,
			state VARCHAR(16) NOT NULL DEFAULT 'stopped',
			message TEXT NOT NULL,
			ddl_gtid VARCHAR(255) NOT NULL DEFAULT '',
			owner VARCHAR(64) NOT NULL DEFAULT '',
			lag_ms BIGINT NULL,
			stats MEDIUMTEXT NULL,
			reported_at TIMESTAMP(6) NULL DEFAULT NULL,
			updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6)
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create %s: %w", Table, err)
		}
	}
	return nil
}

const columns = `name, source_id, flavor, COALESCE(gtid_pos, ''), binlog_file, binlog_pos, last_gtid,
	COALESCE(UNIX_TIMESTAMP(source_ts), 0), applied_trx, state, message, ddl_gtid, UNIX_TIMESTAMP(updated_at),
	COALESCE(lag_ms, -1), COALESCE(stats, ''), COALESCE(UNIX_TIMESTAMP(reported_at), 0)`

func scan(row interface{ Scan(...any) error }) (State, error) {
	var s State
	var srcTS, upd, rep float64
	err := row.Scan(&s.Name, &s.SourceID, &s.Flavor, &s.GTID, &s.File, &s.Pos, &s.LastGTID, &srcTS, &s.Applied,
		&s.State, &s.Message, &s.DDLGTID, &upd, &s.LagMillis, &s.Stats, &rep)
	if srcTS > 0 {
		s.SourceTS = time.Unix(0, int64(srcTS*1e9))
	}
	if rep > 0 {
		s.ReportedAt = time.Unix(0, int64(rep*1e9))
	}
	s.UpdatedAt = time.Unix(0, int64(upd*1e9))
	return s, err
}

// Load reads one stream; ok is false when it does not exist (or the table
// does not exist yet).
func Load(ctx context.Context, db *sql.DB, name string) (s State, ok bool, err error) {
	s, err = scan(db.QueryRowContext(ctx, "SELECT "+columns+" FROM "+Table+" WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("read stream %q: %w", name, err)
	}
	return s, true, nil
}

// List reads every stream.
func List(ctx context.Context, db *sql.DB) ([]State, error) {
	rows, err := db.QueryContext(ctx, "SELECT "+columns+" FROM "+Table+" ORDER BY name")
	if isNoTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read streams: %w", err)
	}
	defer rows.Close()
	var out []State
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

func isNoTable(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "Error 1146") || strings.Contains(err.Error(), "Error 1049"))
}

// Create inserts the stream's row if it does not exist.
func Create(ctx context.Context, db *sql.DB, s State) error {
	_, err := db.ExecContext(ctx, `INSERT IGNORE INTO `+Table+` (name, source_id, flavor, gtid_pos, binlog_file, binlog_pos, state, message)
		VALUES (?, ?, ?, ?, ?, ?, ?, '')`, s.Name, s.SourceID, s.Flavor, s.GTID, s.File, s.Pos, StateStopped)
	if err != nil {
		return fmt.Errorf("create stream %q: %w", s.Name, err)
	}
	return nil
}

// SetState records the stream's state and message (a last error, or "").
func SetState(ctx context.Context, db *sql.DB, name, state, message string) error {
	if len(message) > 60000 {
		message = message[:60000]
	}
	_, err := db.ExecContext(ctx, "UPDATE "+Table+" SET state = ?, message = ? WHERE name = ?", state, message, name)
	if err != nil {
		return fmt.Errorf("record state of stream %q: %w", name, err)
	}
	return nil
}

// Report records the running process's view: lag and counters.
func Report(ctx context.Context, db *sql.DB, name string, lag time.Duration, stats string) error {
	_, err := db.ExecContext(ctx, "UPDATE "+Table+" SET lag_ms = ?, stats = ?, reported_at = NOW(6) WHERE name = ?",
		lag.Milliseconds(), stats, name)
	return err
}

// Save is the position written with a transaction.
type Save struct {
	GTID     string
	File     string
	Pos      uint64
	LastGTID string
	SourceTS uint32 // seconds; 0 leaves the column as it is
	Applied  int    // transactions covered by this save
}

// AppendUpdate appends the statement that moves the stream's position, for
// the caller to send inside the transaction it covers. It fails (the
// position would become NULL, which the column refuses) unless the stream
// still belongs to owner and, when guard names a user variable, that
// variable is 0 — so a COMMIT sent after it in the same multi-statement
// round trip never runs for a process that lost the stream, or after a
// statement that did not do what it should have.
func AppendUpdate(buf []byte, name string, s Save, owner, guard string) []byte {
	buf = append(buf, "UPDATE "+Table+" SET gtid_pos=IF(owner="...)
	buf = appendQuoted(buf, owner)
	if guard != "" {
		buf = append(buf, " AND "+guard+"=0"...)
	}
	buf = append(buf, ',')
	buf = appendQuoted(buf, s.GTID)
	buf = append(buf, ",NULL)"...)
	buf = append(buf, ",binlog_file="...)
	buf = appendQuoted(buf, s.File)
	buf = append(buf, ",binlog_pos="...)
	buf = strconv.AppendUint(buf, s.Pos, 10)
	buf = append(buf, ",last_gtid="...)
	buf = appendQuoted(buf, s.LastGTID)
	if s.SourceTS != 0 {
		buf = append(buf, ",source_ts=FROM_UNIXTIME("...)
		buf = strconv.AppendUint(buf, uint64(s.SourceTS), 10)
		buf = append(buf, ')')
	}
	buf = append(buf, ",applied_trx=applied_trx+"...)
	buf = strconv.AppendInt(buf, int64(s.Applied), 10)
	buf = append(buf, " WHERE name="...)
	return appendQuoted(buf, name)
}

// ErrNotOwner reports that another process took the stream over.
var ErrNotOwner = errors.New("another binlane process took over this stream")

// IsNotOwner recognizes the server's refusal of a position update by a
// process that lost the stream (the NULL position of AppendUpdate).
func IsNotOwner(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Error 1048") && strings.Contains(err.Error(), "gtid_pos")
}

// TakeOver makes owner the stream's owner. It waits for any transaction of
// a previous owner that still holds the stream's row (a process killed
// during its commit: the server finishes that commit), so the position read
// after it includes everything the previous owner committed, and whatever
// that owner still tries to commit afterwards fails.
func TakeOver(ctx context.Context, db *sql.DB, name, owner string) error {
	res, err := db.ExecContext(ctx, "UPDATE "+Table+" SET owner = ? WHERE name = ?", owner, name)
	if err != nil {
		return fmt.Errorf("take over stream %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("take over stream %q: no such stream", name)
	}
	return nil
}

// MarkDDL records (gtid != "") or clears the statement in progress.
func MarkDDL(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, name, gtid string) error {
	_, err := db.ExecContext(ctx, "UPDATE "+Table+" SET ddl_gtid = ? WHERE name = ?", gtid, name)
	return err
}

// appendQuoted writes a string literal as hex, which reads the same under
// every sql_mode (NO_BACKSLASH_ESCAPES included) and needs no escaping.
func appendQuoted(buf []byte, s string) []byte {
	if s == "" {
		return append(buf, "''"...)
	}
	buf = append(buf, "_utf8mb4 X'"...)
	buf = hex.AppendEncode(buf, []byte(s))
	return append(buf, '\'')
}
