package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
)

// sourceTables answers which source tables are transactional, from the
// source's information_schema (SELECT on the replicated tables is enough to
// see them). It opens its connection only when first asked: only
// transactions that roll back to a savepoint over non-transactional
// changes need it.
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
	if s.db == nil {
		db, err := s.d.OpenDB("")
		if err != nil {
			return false, err
		}
		s.db = db
		s.db.SetMaxOpenConns(1)
	}
	var engine, tx sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT t.ENGINE, e.TRANSACTIONS FROM information_schema.TABLES t
		LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
		WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?`, tm.Schema, tm.Table).Scan(&engine, &tx)
	if errors.Is(err, sql.ErrNoRows) {
		// The stream is behind the source, which has dropped the table
		// since: the DROP will reach the target too and remove whatever
		// this transaction leaves in it. Take it as the usual kind.
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read the engine of %s on the source %s (the source user needs SELECT on it): %w",
			tm.QualifiedName(), s.d, err)
	}
	transactional := strings.EqualFold(tx.String, "YES")
	s.seen[key] = transactional
	return transactional, nil
}

func (s *sourceTables) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db != nil {
		s.db.Close()
	}
}
