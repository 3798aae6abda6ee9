package position

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"time"

	"github.com/binlane/binlane/internal/sqlquote"
)

// CopyTable is in binlane.copy: a table of a stream's copy, with the key
// ranges copied so far (the copier's checkpoint, written in the same
// transaction as the rows it covers).
type CopyTable struct {
	Schema, Table string
	State         string // CopyCopying, CopyIndexing or CopyDone
	Coverage      string // the copier's JSON
	Rows          int64  // rows copied
	Estimate      int64  // rows the source estimated at the start
	OnePass       string // why the table is copied in one pass ("" chunked)
	// Deferred are the indexes the target's table was created without,
	// until they are built (package provision's JSON; "" for none).
	Deferred  string
	UpdatedAt time.Time
}

// Copy states.
const (
	CopyCopying = "copying"
	// CopyIndexing: every row is copied; the indexes the copy deferred are
	// not built yet.
	CopyIndexing = "indexing"
	CopyDone     = "done"
	// CopyCreated: a copy's start created the table on the target and has
	// not recorded the copy yet (StartCopy replaces the row). A run that
	// finds such rows drops those tables if they are still empty: the
	// source may no longer have them, and its stream would then create
	// them again.
	CopyCreated = "created"
)

// CopyDDL creates binlane.copy.
const CopyDDL = "CREATE TABLE IF NOT EXISTS " + CopyTableName + ` (
	stream VARCHAR(64) NOT NULL,
	schema_name VARCHAR(64) NOT NULL,
	table_name VARCHAR(64) NOT NULL,
	state VARCHAR(16) NOT NULL,
	coverage MEDIUMTEXT NOT NULL,
	rows_copied BIGINT NOT NULL DEFAULT 0,
	rows_estimate BIGINT NOT NULL DEFAULT 0,
	one_pass VARCHAR(255) NOT NULL DEFAULT '',
	deferred MEDIUMTEXT NOT NULL DEFAULT '',
	updated_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
	PRIMARY KEY (stream, schema_name, table_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// CopyTableName is the copy's state table.
const CopyTableName = "`binlane`.`copy`"

// StartCopy records the tables of a new copy, in one transaction with the
// stream's start position (owner-checked): a copy either starts whole from
// its position or not at all.
func StartCopy(ctx context.Context, db *sql.DB, stream, owner, start string, tables []CopyTable) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "DELETE FROM "+CopyTableName+" WHERE stream = ?", stream); err != nil {
		return fmt.Errorf("start the copy: %w", err)
	}
	for _, t := range tables {
		if _, err := tx.ExecContext(ctx, "INSERT INTO "+CopyTableName+
			" (stream, schema_name, table_name, state, coverage, rows_estimate, one_pass, deferred) VALUES (?, ?, ?, ?, '', ?, ?, ?)",
			stream, t.Schema, t.Table, CopyCopying, t.Estimate, t.OnePass, t.Deferred); err != nil {
			return fmt.Errorf("start the copy of %s.%s: %w", t.Schema, t.Table, err)
		}
	}
	res, err := tx.ExecContext(ctx, "UPDATE "+Table+" SET gtid_pos = ?, temp_tables = '', applied_trx = 0 WHERE name = ? AND owner = ?", start, stream, owner)
	if err != nil {
		return fmt.Errorf("start the copy: %w", err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		if err := checkOwner(ctx, tx, stream, owner); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// CopyCreating records, before a copy's start creates a table on the
// target, that it does (CopyCreated).
func CopyCreating(ctx context.Context, db *sql.DB, stream, schemaName, table string) error {
	_, err := db.ExecContext(ctx, "INSERT INTO "+CopyTableName+" (stream, schema_name, table_name, state, coverage) "+
		"VALUES (?, ?, ?, ?, '') ON DUPLICATE KEY UPDATE state = VALUES(state), coverage = ''", stream, schemaName, table, CopyCreated)
	if err != nil {
		return fmt.Errorf("record the creation of %s.%s: %w", schemaName, table, err)
	}
	return nil
}

// ForgetCreated removes the record of a table a stopped copy start
// created (CopyCreated), once it is dealt with.
func ForgetCreated(ctx context.Context, db *sql.DB, stream, schemaName, table string) error {
	_, err := db.ExecContext(ctx, "DELETE FROM "+CopyTableName+" WHERE stream = ? AND schema_name = ? AND table_name = ? AND state = ?",
		stream, schemaName, table, CopyCreated)
	if err != nil {
		return fmt.Errorf("forget the creation of %s.%s: %w", schemaName, table, err)
	}
	return nil
}

// LoadCopy reads a stream's copy (nil when it has none).
func LoadCopy(ctx context.Context, db *sql.DB, stream string) ([]CopyTable, error) {
	rows, err := db.QueryContext(ctx, "SELECT schema_name, table_name, state, coverage, rows_copied, rows_estimate, one_pass, "+
		"deferred, UNIX_TIMESTAMP(updated_at) FROM "+CopyTableName+" WHERE stream = ? ORDER BY schema_name, table_name", stream)
	if isNoTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the copy of stream %q: %w", stream, err)
	}
	defer rows.Close()
	var out []CopyTable
	for rows.Next() {
		var t CopyTable
		var upd float64
		if err := rows.Scan(&t.Schema, &t.Table, &t.State, &t.Coverage, &t.Rows, &t.Estimate, &t.OnePass, &t.Deferred, &upd); err != nil {
			return nil, err
		}
		t.UpdatedAt = unix(upd)
		out = append(out, t)
	}
	return out, rows.Err()
}

// CopyProgress is a table's copy after a chunk (or a statement that
// replaced the table's contents), written with it.
type CopyProgress struct {
	Schema, Table string
	Coverage      string // the copier's JSON
	Rows          int    // rows the chunk copied
	// Done: the table is copied; Indexing: its rows are, its deferred
	// indexes not yet; Built: they are (the record of them goes).
	Done, Indexing, Built bool
}

// AppendCopyProgress appends the statement that records a chunk's rows and
// the table's coverage after it, for the transaction that writes the chunk.
func AppendCopyProgress(buf []byte, stream string, p CopyProgress) []byte {
	state := CopyCopying
	switch {
	case p.Done:
		state = CopyDone
	case p.Indexing:
		state = CopyIndexing
	}
	buf = append(buf, "UPDATE "+CopyTableName+" SET coverage="...)
	buf = sqlquote.AppendString(buf, p.Coverage)
	buf = append(buf, ",state="...)
	buf = sqlquote.AppendString(buf, state)
	if p.Built {
		buf = append(buf, ",deferred=''"...)
	}
	buf = append(buf, ",rows_copied=rows_copied+"...)
	buf = strconv.AppendInt(buf, int64(p.Rows), 10)
	buf = append(buf, " WHERE stream="...)
	buf = sqlquote.AppendString(buf, stream)
	buf = append(buf, " AND schema_name="...)
	buf = sqlquote.AppendString(buf, p.Schema)
	buf = append(buf, " AND table_name="...)
	return sqlquote.AppendString(buf, p.Table)
}

// CopyBuilt records that a table's deferred indexes are built: its copy is
// done. It is written outside the stream's transactions (the build cannot
// be part of one: DDL commits by itself), after the build; a crash before
// it leaves the table indexing, and the next run builds what is missing.
func CopyBuilt(ctx context.Context, db *sql.DB, stream, schemaName, table string) error {
	_, err := db.ExecContext(ctx, "UPDATE "+CopyTableName+" SET state = ?, deferred = '' WHERE stream = ? AND schema_name = ? AND table_name = ?",
		CopyDone, stream, schemaName, table)
	if err != nil {
		return fmt.Errorf("record the indexes of %s.%s as built: %w", schemaName, table, err)
	}
	return nil
}
