package txn

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
)

// ResolveRollbacks computes what a transaction with ROLLBACK TO SAVEPOINT
// items (or one that ended in ROLLBACK) left behind on the source, as
// plain items: a source binlogs such transactions only because they also
// changed a table that is not transactional, and a rollback undoes the
// changes of transactional tables but not those. transactional reports how
// a table behaves on the source.
//
// The rules are the server's: ROLLBACK TO s undoes the transactional
// changes made after SAVEPOINT s and forgets the savepoints set after s
// (s itself stays); RELEASE SAVEPOINT s forgets s and those after it; a
// final ROLLBACK undoes every transactional change. A later SAVEPOINT with
// an existing name moves it. Names compare case-insensitively, as
// identifiers do.
func ResolveRollbacks(t *Txn, body Body, transactional func(*binlog.TableMap) (bool, error)) ([]Item, error) {
	type mark struct {
		name string
		at   int // len(out) when it was set
	}
	var marks []mark
	out := make([]Item, 0, len(body.Items))
	find := func(name string) int {
		for i := len(marks) - 1; i >= 0; i-- {
			if strings.EqualFold(marks[i].name, name) {
				return i
			}
		}
		return -1
	}
	// undo drops the transactional items of out[from:].
	undo := func(from int) error {
		kept := out[:from]
		for _, it := range out[from:] {
			keep, err := keepOnRollback(it, transactional)
			if err != nil {
				return fmt.Errorf("transaction %s: %w", t.GTID, err)
			}
			if keep {
				kept = append(kept, it)
			}
		}
		out = kept
		return nil
	}
	for _, it := range body.Items {
		switch it.Kind {
		case ItemSavepoint:
			if i := find(it.Savepoint); i >= 0 {
				marks = append(marks[:i], marks[i+1:]...)
			}
			marks = append(marks, mark{name: it.Savepoint, at: len(out)})
		case ItemRollbackTo:
			i := find(it.Savepoint)
			if i < 0 {
				return nil, fmt.Errorf("transaction %s: ROLLBACK TO SAVEPOINT %s without that savepoint", t.GTID, it.Savepoint)
			}
			if err := undo(marks[i].at); err != nil {
				return nil, err
			}
			marks = marks[:i+1]
			// Later items count from here; earlier savepoints keep their place
			// in what remains.
			for j := range marks {
				marks[j].at = min(marks[j].at, len(out))
			}
		case ItemRelease:
			if i := find(it.Savepoint); i >= 0 {
				marks = marks[:i]
			}
		default:
			out = append(out, it)
		}
	}
	if t.RolledBack {
		if err := undo(0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// keepOnRollback reports whether an item survives a rollback on the source:
// statements (DDL commits on its own: the source logs one inside a group
// that rolled back only when it really happened, such as the DROP of a
// failed CREATE OR REPLACE ... SELECT) and row changes of tables that are
// not transactional there.
func keepOnRollback(it Item, transactional func(*binlog.TableMap) (bool, error)) (bool, error) {
	if it.Kind != ItemRows {
		return true, nil
	}
	tx, err := transactional(it.Rows.Table)
	if err != nil {
		return false, fmt.Errorf("table %s: %w", it.Rows.Table.QualifiedName(), err)
	}
	return !tx, nil
}
