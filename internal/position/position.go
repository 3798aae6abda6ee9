// Package position keeps a stream's state in the target itself, in
// binlane.streams: the source position the target has applied up to, the
// stream's state and last error, who runs it, and the statement (DDL) in
// progress. The position row is updated in the same target transaction as
// the rows it covers, so a crash can neither lose an applied transaction
// nor apply one twice. Statements binlane keeps instead of running (trigger
// DDL) are recorded in binlane.deferred, in the same transaction too.
//
// Every write is made on behalf of the stream's owner (the run that took it
// over) and does nothing for a process that lost the stream: a second
// process, or a killed one whose connection the server is still finishing,
// can never change the stream.
//
// The package owns the binlane schema and every statement on it; it must
// never touch any other table.
package position

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/sqlerr"
)

// Schema and Table name where the state lives.
const (
	Schema        = "binlane"
	Table         = "`binlane`.`streams`"
	DeferredTable = "`binlane`.`deferred`"
)

// Stream states.
const (
	StateRunning = "running"
	StateStopped = "stopped"
	StateError   = "error"
	// StatePaused: the stream holds where a pause request asked it to
	// (see pause.go).
	StatePaused = "paused"
	// StateCutOver: the stream was cut over (binlane cutover, see
	// cutover.go): its target took over from its source, and the stream
	// must never apply anything again. No state is recorded over it.
	StateCutOver = "cut over"
)

// DDL states: a statement that cannot roll back (DDL) is marked running
// before it starts; a run that finds the mark after a crash decides from
// the target's schema whether it was applied. A statement that failed is
// marked failed: it was not applied and runs again.
const (
	DDLRunning = "running"
	DDLFailed  = "failed"
)

// State is one stream's row.
type State struct {
	Name     string
	SourceID string // server uuid or server_id of the source
	Flavor   string
	GTID     string // position: the source GTIDs applied (MariaDB per domain, MySQL set)
	File     string // binlog file and position after the last applied transaction
	Pos      uint64
	LastGTID string
	SourceTS time.Time // source commit time of the last applied transaction
	Applied  uint64    // transactions applied since the stream was created
	State    string
	Message  string
	// DDL is the statement in progress or failed (empty GTID: none).
	DDL       DDLMark
	Owner     Owner
	UpdatedAt time.Time
	// Reported by the running process every few seconds: lag (-1 when
	// unknown), and a JSON snapshot of the applier's counters.
	LagMillis  int64
	Stats      string
	ReportedAt time.Time
	// PauseAt is the pause request (see pause.go; "" when none) and PauseBy
	// who made it.
	PauseAt string
	PauseBy string
}

// DDLMark records a statement that cannot roll back while it runs.
type DDLMark struct {
	GTID  string
	State string // DDLRunning or DDLFailed
	// Fingerprint is the target's definition of what the statement changes,
	// taken before it ran.
	Fingerprint string
	// Conn is the connection that ran it, to wait for after a crash.
	Conn int64
}

// columns and the migrations that add the ones a table created by an older
// binlane lacks.
var migrations = []struct{ column, def string }{
	{"ddl_state", "VARCHAR(16) NOT NULL DEFAULT ''"},
	{"ddl_fingerprint", "VARCHAR(64) NOT NULL DEFAULT ''"},
	{"ddl_conn", "BIGINT NOT NULL DEFAULT 0"},
	{"owner_since", "TIMESTAMP(6) NULL DEFAULT NULL"},
	{"pause_at", "TEXT NOT NULL DEFAULT ''"},
	{"pause_by", "VARCHAR(64) NOT NULL DEFAULT ''"},
	{"temp_tables", "MEDIUMTEXT NOT NULL DEFAULT ''"},
	{"selection", "TEXT NOT NULL DEFAULT ''"},
}

// Ensure creates the schema and tables if they do not exist, and adds the
// columns an older version's table lacks.
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
			ddl_state VARCHAR(16) NOT NULL DEFAULT '',
			ddl_fingerprint VARCHAR(64) NOT NULL DEFAULT '',
			ddl_conn BIGINT NOT NULL DEFAULT 0,
			owner VARCHAR(128) NOT NULL DEFAULT '',
			owner_since TIMESTAMP(6) NULL DEFAULT NULL,
			lag_ms BIGINT NULL,
			stats MEDIUMTEXT NULL,
			reported_at TIMESTAMP(6) NULL DEFAULT NULL,
			updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
			-- Also in migrations (tables of older versions lack them): a table
			-- created here is whole even when the run ends right after.
			pause_at TEXT NOT NULL DEFAULT '',
			pause_by VARCHAR(64) NOT NULL DEFAULT '',
			temp_tables MEDIUMTEXT NOT NULL DEFAULT '',
			selection TEXT NOT NULL DEFAULT ''
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
		`CREATE TABLE IF NOT EXISTS ` + DeferredTable + ` (
			id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
			stream VARCHAR(64) NOT NULL,
			gtid VARCHAR(255) NOT NULL DEFAULT '',
			schema_name VARCHAR(64) NOT NULL DEFAULT '',
			reason VARCHAR(64) NOT NULL DEFAULT '',
			statement MEDIUMTEXT NOT NULL,
			recorded_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
			KEY (stream, id)
		) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
		CopyDDL,
		XADDL,
		CutoverDDL,
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create %s: %w", Table, err)
		}
	}
	if err := migrate(ctx, db); err != nil {
		return err
	}
	return migrateCopy(ctx, db)
}

// migrateCopy adds the column of the indexes a copy deferred to a
// binlane.copy of an older binlane.
func migrateCopy(ctx context.Context, db *sql.DB) error {
	have, err := columnsOf(ctx, db, "copy")
	if err != nil {
		return err
	}
	if have["deferred"] == 0 {
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+CopyTableName+" ADD COLUMN deferred MEDIUMTEXT NOT NULL DEFAULT '' AFTER one_pass"); err != nil {
			return fmt.Errorf("upgrade %s: %w", CopyTableName, err)
		}
	}
	return nil
}

// columnsOf returns the columns of a table of the binlane schema, with
// their lengths (at least 1).
func columnsOf(ctx context.Context, db *sql.DB, table string) (map[string]int64, error) {
	rows, err := db.QueryContext(ctx, `SELECT COLUMN_NAME, COALESCE(CHARACTER_MAXIMUM_LENGTH, 0) FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?`, Schema, table)
	if err != nil {
		return nil, fmt.Errorf("read %s.%s: %w", Schema, table, err)
	}
	defer rows.Close()
	have := map[string]int64{}
	for rows.Next() {
		var c string
		var n int64
		if err := rows.Scan(&c, &n); err != nil {
			return nil, err
		}
		have[strings.ToLower(c)] = max(n, 1)
	}
	return have, rows.Err()
}

func migrate(ctx context.Context, db *sql.DB) error {
	have, err := columnsOf(ctx, db, "streams")
	if err != nil {
		return err
	}
	for _, m := range migrations {
		if have[m.column] > 0 {
			continue
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+Table+" ADD COLUMN "+m.column+" "+m.def); err != nil {
			return fmt.Errorf("upgrade %s: %w", Table, err)
		}
	}
	if have["owner"] < 128 {
		if _, err := db.ExecContext(ctx, "ALTER TABLE "+Table+" MODIFY owner VARCHAR(128) NOT NULL DEFAULT ''"); err != nil {
			return fmt.Errorf("upgrade %s: %w", Table, err)
		}
	}
	return nil
}

const columns = `name, source_id, flavor, COALESCE(gtid_pos, ''), binlog_file, binlog_pos, last_gtid,
	COALESCE(UNIX_TIMESTAMP(source_ts), 0), applied_trx, state, message,
	ddl_gtid, ddl_state, ddl_fingerprint, ddl_conn, owner, COALESCE(UNIX_TIMESTAMP(owner_since), 0),
	UNIX_TIMESTAMP(updated_at), COALESCE(lag_ms, -1), COALESCE(stats, ''), COALESCE(UNIX_TIMESTAMP(reported_at), 0), pause_at, pause_by`

func scan(row interface{ Scan(...any) error }) (State, error) {
	var s State
	var srcTS, since, upd, rep float64
	var owner string
	err := row.Scan(&s.Name, &s.SourceID, &s.Flavor, &s.GTID, &s.File, &s.Pos, &s.LastGTID, &srcTS, &s.Applied,
		&s.State, &s.Message, &s.DDL.GTID, &s.DDL.State, &s.DDL.Fingerprint, &s.DDL.Conn, &owner, &since,
		&upd, &s.LagMillis, &s.Stats, &rep, &s.PauseAt, &s.PauseBy)
	s.SourceTS, s.ReportedAt, s.UpdatedAt = unix(srcTS), unix(rep), unix(upd)
	s.Owner = ParseOwner(owner)
	s.Owner.Since = unix(since)
	return s, err
}

func unix(f float64) time.Time {
	if f <= 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(f*1e9))
}

// Load reads one stream; ok is false when it does not exist (or the table
// does not exist yet).
//
// db may be a connection in a transaction: an online verify reads the
// stream in its target snapshot (package pause).
func Load(ctx context.Context, db rowQuerier, name string) (s State, ok bool, err error) {
	s, err = scan(db.QueryRowContext(ctx, "SELECT "+columns+" FROM "+Table+" WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) || isNoTable(err) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("read stream %q: %w", name, err)
	}
	return s, true, nil
}

// LoadTempTables reads the source sessions' temporary tables saved with the
// stream's position (encoded by package txn; "" when none). It is not part
// of State: only replicate, after Ensure, reads it, so status, wait and
// pause keep working on a table an older binlane created.
func LoadTempTables(ctx context.Context, db *sql.DB, name string) (string, error) {
	var s string
	err := db.QueryRowContext(ctx, "SELECT temp_tables FROM "+Table+" WHERE name = ?", name).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read the temporary tables saved with stream %q: %w", name, err)
	}
	return s, nil
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

// rowQuerier is a pool, a connection or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func isNoTable(err error) bool { return sqlerr.Is(err, sqlerr.NoSuchTable, sqlerr.UnknownDB) }

// Create inserts the stream's row if it does not exist.
func Create(ctx context.Context, db *sql.DB, s State) (created bool, err error) {
	res, err := db.ExecContext(ctx, `INSERT IGNORE INTO `+Table+` (name, source_id, flavor, gtid_pos, binlog_file, binlog_pos, state, message)
		VALUES (?, ?, ?, ?, ?, ?, ?, '')`, s.Name, s.SourceID, s.Flavor, s.GTID, s.File, s.Pos, StateStopped)
	if err != nil {
		return false, fmt.Errorf("create stream %q: %w", s.Name, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ForgetNew removes the row of a stream refused at its first start, while
// the owner holds it and it holds nothing: no position, no transaction
// applied. A refused start then leaves no stream in error behind (which
// status --check would report from then on).
func ForgetNew(ctx context.Context, db *sql.DB, name, owner string) error {
	_, err := db.ExecContext(ctx, "DELETE FROM "+Table+" WHERE name = ? AND owner = ? AND COALESCE(gtid_pos, '') = '' AND applied_trx = 0",
		name, owner)
	if err != nil {
		return fmt.Errorf("remove the refused stream %q: %w", name, err)
	}
	return nil
}

// execer is a pool, a connection or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ownedUpdate runs an UPDATE of the stream's row whose WHERE clause ends in
// "name = ? AND owner = ?" (the last two args). When it changes nothing it
// tells a row that needed no change from a stream another process owns.
func ownedUpdate(ctx context.Context, db execer, name, owner, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, append(args, name, owner)...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	return checkOwner(ctx, db, name, owner)
}

// CheckOwner returns a *TakenOverError when owner no longer owns the stream.
func CheckOwner(ctx context.Context, db *sql.DB, name, owner string) error {
	return checkOwner(ctx, db, name, owner)
}

func checkOwner(ctx context.Context, db execer, name, owner string) error {
	var cur, state, msg string
	var since float64
	err := db.QueryRowContext(ctx, "SELECT owner, COALESCE(UNIX_TIMESTAMP(owner_since), 0), state, message FROM "+Table+" WHERE name = ?",
		name).Scan(&cur, &since, &state, &msg)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("stream %q: no such stream", name)
	}
	if err != nil {
		return err
	}
	if state == StateCutOver {
		return &CutOverError{Stream: name, Message: msg}
	}
	if cur != owner {
		o := ParseOwner(cur)
		o.Since = unix(since)
		return &TakenOverError{Stream: name, By: o}
	}
	return nil
}

// SetState records the stream's state and message (a last error, or "").
// The state of a stream that was cut over stays.
func SetState(ctx context.Context, db *sql.DB, name, owner, state, message string) error {
	if len(message) > 60000 {
		message = message[:60000]
	}
	err := ownedUpdate(ctx, db, name, owner, "UPDATE "+Table+" SET state = ?, message = ? WHERE state <> '"+StateCutOver+
		"' AND name = ? AND owner = ?", state, message)
	if err != nil {
		return fmt.Errorf("record state of stream %q: %w", name, err)
	}
	return nil
}

// Report records the running process's view: lag and counters.
func Report(ctx context.Context, db *sql.DB, name, owner string, lag time.Duration, stats string) error {
	return ownedUpdate(ctx, db, name, owner, "UPDATE "+Table+" SET lag_ms = ?, stats = ?, reported_at = NOW(6) WHERE name = ? AND owner = ?",
		lag.Milliseconds(), stats)
}

// RecordSource notes which source the stream reads and where it starts
// (with the temporary tables of the source's sessions there), and marks it
// running.
func RecordSource(ctx context.Context, db *sql.DB, name, owner, sourceID, flavor, start, tempTables string) error {
	err := ownedUpdate(ctx, db, name, owner, "UPDATE "+Table+` SET gtid_pos = ?, temp_tables = ?, source_id = ?, flavor = ?, state = ?, message = ''
		WHERE state <> '`+StateCutOver+`' AND name = ? AND owner = ?`, start, tempTables, sourceID, flavor, StateRunning)
	if err != nil {
		return fmt.Errorf("record stream %q: %w", name, err)
	}
	return nil
}

// KeepStart saves the position a new stream is to start from, before it
// reads the source (see RecordSource), when it has none yet.
func KeepStart(ctx context.Context, db *sql.DB, name, owner, start string) error {
	err := ownedUpdate(ctx, db, name, owner, "UPDATE "+Table+` SET gtid_pos = ?
		WHERE COALESCE(gtid_pos, '') = '' AND applied_trx = 0 AND state <> '`+StateCutOver+`' AND name = ? AND owner = ?`, start)
	if err != nil {
		return fmt.Errorf("record the start of stream %q: %w", name, err)
	}
	return nil
}

// MarkDDL records, on the connection about to run it, that a statement
// which cannot roll back starts. It fails for a process that lost the
// stream, so such a process never runs the statement.
func MarkDDL(ctx context.Context, conn execer, name, owner string, m DDLMark) error {
	return ownedUpdate(ctx, conn, name, owner, "UPDATE "+Table+` SET ddl_gtid = ?, ddl_state = ?, ddl_fingerprint = ?, ddl_conn = ?
		WHERE name = ? AND owner = ?`, m.GTID, DDLRunning, m.Fingerprint, m.Conn)
}

// FailDDL records that the marked statement failed: it was not applied.
func FailDDL(ctx context.Context, db *sql.DB, name, owner string) error {
	return ownedUpdate(ctx, db, name, owner, "UPDATE "+Table+" SET ddl_state = ? WHERE name = ? AND owner = ? AND ddl_gtid <> ''", DDLFailed)
}
