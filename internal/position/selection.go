package position

import (
	"context"
	"database/sql"
	"fmt"
)

// Several streams may write into one target (from several sources), each
// its own tables. Each records its selection of tables (its filter
// options, encoded by the caller) in its row, so that a stream starting
// later can be refused before it writes a table another stream writes:
// two streams applying changes to one table would overwrite each other's
// rows, and each one's position would cover rows the other wrote.

// ClaimSelection records the stream's selection, unless check refuses it
// against another stream's recorded one (check gets the other stream's
// name and selection, and its error is returned as it is). Streams that
// were cut over never write again and are not checked; nor are streams
// whose selection is not known (rows of an older binlane, or never run).
//
// Every stream's row is locked while it checks, in key order: two streams
// starting at the same moment take turns, so the second sees the first's
// claim.
func ClaimSelection(ctx context.Context, db *sql.DB, name, owner, selection string, check func(other, otherSelection string) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("claim the tables of stream %q: %w", name, err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, "SELECT name, selection, state FROM "+Table+" ORDER BY name FOR UPDATE")
	if err != nil {
		return fmt.Errorf("claim the tables of stream %q: read the other streams: %w", name, err)
	}
	type other struct{ name, selection string }
	var others []other
	for rows.Next() {
		var o other
		var state string
		if err := rows.Scan(&o.name, &o.selection, &state); err != nil {
			rows.Close()
			return fmt.Errorf("claim the tables of stream %q: %w", name, err)
		}
		if o.name != name && o.selection != "" && state != StateCutOver {
			others = append(others, o)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("claim the tables of stream %q: %w", name, err)
	}
	for _, o := range others {
		if err := check(o.name, o.selection); err != nil {
			return err
		}
	}
	if err := ownedUpdate(ctx, tx, name, owner, "UPDATE "+Table+" SET selection = ? WHERE name = ? AND owner = ?", selection); err != nil {
		return fmt.Errorf("claim the tables of stream %q: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("claim the tables of stream %q: %w", name, err)
	}
	return nil
}
