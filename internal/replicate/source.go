package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// sourceTables answers which source tables are transactional, from the
// source's definitions (package schema; SELECT on the replicated tables is
// enough to see them), and which have triggers or are stored functions
// (statement-logged DML). It opens its connection only when first asked:
// only transactions that roll back to a savepoint over non-transactional
// changes, and statement-logged DML, need it.
type sourceTables struct {
	d    dsn.DSN
	mu   sync.Mutex
	db   *sql.DB
	seen map[string]bool
}

func newSourceTables(d dsn.DSN) (*sourceTables, error) {
	return &sourceTables{d: d, seen: map[string]bool{}}, nil
}

func (s *sourceTables) Transactional(ctx context.Context, tm *binlog.TableMap) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := tm.Schema + "\x00" + tm.Table
	if tx, ok := s.seen[key]; ok {
		return tx, nil
	}
	if err := s.open(); err != nil {
		return false, err
	}
	t, err := schema.ReadTable(ctx, s.db, tm.Schema, tm.Table)
	if err != nil {
		return false, fmt.Errorf("read the engine of %s on the source %s (the source user needs SELECT on it): %w",
			tm.QualifiedName(), s.d, err)
	}
	if t == nil {
		// The stream is behind the source, which has dropped the table
		// since: the DROP will reach the target too and remove whatever
		// this transaction leaves in it. Take it as the usual kind.
		return true, nil
	}
	s.seen[key] = t.Transactional
	return t.Transactional, nil
}

func (s *sourceTables) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		s.db.Close()
	}
}

// open opens the connection on first use (s.mu held).
func (s *sourceTables) open() error {
	if s.db != nil {
		return nil
	}
	db, err := s.d.OpenDB("")
	if err != nil {
		return err
	}
	s.db = db
	s.db.SetMaxOpenConns(1)
	return nil
}

// HasTriggers reports whether a table has triggers on the source. The
// server hides triggers from an account without the TRIGGER privilege, so
// an answer without it would say "none" for any table: the privilege is
// checked first (fail closed).
func (s *sourceTables) HasTriggers(ctx context.Context, schemaName, table string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return false, err
	}
	var granted int
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT COUNT(*) FROM information_schema.USER_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER') +
		(SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND ? LIKE TABLE_SCHEMA) +
		(SELECT COUNT(*) FROM information_schema.TABLE_PRIVILEGES WHERE PRIVILEGE_TYPE = 'TRIGGER' AND TABLE_SCHEMA = ? AND TABLE_NAME = ?)`,
		schemaName, schemaName, table).Scan(&granted)
	if err != nil {
		return false, fmt.Errorf("read the source account's privileges on %s.%s: %w", sqlquote.Name(schemaName), sqlquote.Name(table), err)
	}
	if granted == 0 {
		return false, fmt.Errorf("the source account lacks the TRIGGER privilege on %s, without which the source hides the triggers "+
			"binlane must look for before it runs a statement-logged DML statement (see the README's Privileges)", sqlquote.Name(schemaName))
	}
	var n int
	err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.TRIGGERS
		WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ?`, schemaName, table).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read the triggers of %s.%s on the source %s: %w", sqlquote.Name(schemaName), sqlquote.Name(table), s.d, err)
	}
	return n > 0, nil
}

// StoredFunction reports whether a name is a stored function on the source
// (function names are not case-sensitive).
func (s *sourceTables) StoredFunction(ctx context.Context, schemaName, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return false, err
	}
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.proc WHERE db = ? AND name = ? AND type = 'FUNCTION'",
		schemaName, name).Scan(&n)
	if sqlerr.Is(err, sqlerr.NoSuchTable) {
		// MySQL 8 has no mysql.proc: information_schema shows the routines
		// the account may see.
		err = s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.ROUTINES
			WHERE ROUTINE_SCHEMA = ? AND ROUTINE_NAME = ? AND ROUTINE_TYPE = 'FUNCTION'`, schemaName, name).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("read the stored functions of %s on the source %s (the source account needs SELECT on mysql.proc): %w",
			sqlquote.Name(schemaName), s.d, err)
	}
	return n > 0, nil
}

// formatNotice says once per connection that a source which lets sessions
// log statements has its statement-logged row changes applied serially.
func formatNotice(log *slog.Logger, src replica.SourceInfo) {
	if src.BinlogFormat != "" && src.BinlogFormat != "ROW" {
		log.Info("the source's binlog_format is "+src.BinlogFormat+": row changes its sessions log as statements run one at a time, "+
			"in source order, on the target (ROW keeps them parallel); `binlane status` counts them among the transactions that ran alone",
			"binlog_format", src.BinlogFormat)
	}
}

// UnsafeDefault names a column of a source table whose DEFAULT expression
// the target would evaluate as its own (txn.UnsafeDefault).
func (s *sourceTables) UnsafeDefault(ctx context.Context, schemaName, table string) (column, call string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.open(); err != nil {
		return "", "", err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT COLUMN_NAME, COLUMN_DEFAULT FROM information_schema.COLUMNS
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_DEFAULT IS NOT NULL`, schemaName, table)
	if err != nil {
		return "", "", fmt.Errorf("read the column defaults of %s.%s on the source %s: %w", sqlquote.Name(schemaName), sqlquote.Name(table), s.d, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return "", "", err
		}
		if c := txn.UnsafeDefault(def); c != "" {
			return name, c, nil
		}
	}
	return "", "", rows.Err()
}
