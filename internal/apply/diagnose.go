package apply

import (
	"context"
	"errors"
	"fmt"

	"github.com/binlane/binlane/internal/rowsql"
)

// diagnose applies a failed batch again, first in line, one statement per
// round trip, in source order and without merging rows. Either that
// commits — then the batch is done (a merged statement can fail where the
// source's order of statements succeeds, e.g. on a unique key the plan did
// not know) and nil is returned — or the failing statement names the
// transaction, table and row, and that is the error to stop with.
//
// A transaction sent in parts (they are gone once written) or one with
// statements (they ran outside the transaction) cannot be applied again
// from here: its error is the one to stop with. A chunk of copied rows is
// written again as a chunk, never as a transaction body (which would
// commit its checkpoint without its rows).
func (w *worker) diagnose(ctx context.Context, b *batch, orig error) error {
	var rc *rowsql.RowCountError
	if errors.As(orig, &rc) && len(b.works) == 1 {
		return rc
	}
	wk := b.works[0]
	if wk.parts != nil || wk.statements {
		return fmt.Errorf("%s: %w", b.describe(), orig)
	}
	if err := w.ensureConn(ctx); err != nil {
		return fmt.Errorf("%s: %w", b.describe(), orig)
	}
	w.sql.Collapse, w.sql.OneByOne = false, true
	defer func() { w.sql.OneByOne = false }()
	var err error
	if wk.chunk != nil {
		err = w.runChunk(ctx, b)
	} else {
		err = w.write(ctx, b)
	}
	if err == nil {
		w.stats.RedoneOneByOne.Add(1)
		w.log.Info("batch applied one statement at a time after a merged attempt failed", "batch", b.describe(), "error", orig)
		return nil
	}
	w.rollback(ctx)
	var se *rowsql.StmtError
	switch {
	case errors.As(err, &rc), errors.As(err, &se):
		return err
	}
	return fmt.Errorf("%s: %w", b.describe(), orig)
}
