package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/schema"
)

// sourceTables answers which source tables are transactional, from the
// source's definitions (package schema; SELECT on the replicated tables is
// enough to see them). It opens its connection only when first asked: only
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
