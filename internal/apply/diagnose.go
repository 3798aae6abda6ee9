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
func (w *worker) diagnose(ctx context.Context, b *batch, orig error) error {
	var rc *rowsql.RowCountError
	if errors.As(orig, &rc) && len(b.works) == 1 {
		return rc
	}
	if err := w.ensureConn(ctx); err != nil {
		return fmt.Errorf("%s: %w", b.describe(), orig)
	}
	w.sql.Collapse, w.sql.OneByOne = false, true
	defer func() { w.sql.OneByOne = false }()
	err := w.write(ctx, b)
	if err == nil {
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
