package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// stmtError names the statement a server error came from.
type stmtError struct {
	info stmtInfo
	err  error
}

func (e *stmtError) Error() string { return describeStmt(e.info) + ": " + e.err.Error() }
func (e *stmtError) Unwrap() error { return e.err }

// describeStmt says which transaction, table and row a statement was for.
func describeStmt(info stmtInfo) string {
	var b strings.Builder
	if info.txn != nil {
		b.WriteString("transaction ")
		b.WriteString(describeTxn(info.txn))
	}
	if info.table != nil {
		fmt.Fprintf(&b, ", table %s", info.table.Name)
	}
	if info.what != "" {
		fmt.Fprintf(&b, ", %s", info.what)
	}
	if info.row != nil && info.table != nil {
		b.WriteString(" of row (")
		cols := info.key
		if cols == nil {
			cols = info.table.Write
			if len(cols) > 4 {
				cols = cols[:4]
			}
		}
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			v := info.row[c]
			fmt.Fprintf(&b, "%s=%s", info.table.Cols[c].Name, abbreviate(v.String(), 64))
		}
		b.WriteString(")")
	}
	return b.String()
}

// diagnose re-runs a failed batch one statement per round trip, in source
// order and without merging rows, to name the transaction, table, row and
// column behind the failure; then rolls it back. The result is the error to
// stop with.
func (w *worker) diagnose(ctx context.Context, b *batch, orig error) error {
	var rc *rowCountError
	if errors.As(orig, &rc) && len(b.works) == 1 {
		return fmt.Errorf("%s: %w", describeStmt(rc.info), rc)
	}
	if err := w.ensureConn(ctx); err != nil {
		return fmt.Errorf("%s: %w", b.describe(), orig)
	}
	w.sw.oneByOne = true
	defer func() { w.sw.oneByOne = false }()
	err := func() error {
		w.sw.reset()
		w.rows = 0
		if err := w.sw.beginTxn(); err != nil {
			return err
		}
		for _, wk := range b.works {
			if err := w.writeBody(ctx, wk.t, &wk.t.Body, wk.plans, false); err != nil {
				return err
			}
			if err := w.w.close(); err != nil {
				return err
			}
		}
		return w.sw.send()
	}()
	w.rollback(ctx)
	var se *stmtError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &rc):
		return fmt.Errorf("%s: %w", describeStmt(rc.info), rc)
	case errors.As(err, &se):
		return err
	}
	return fmt.Errorf("%s: %w", b.describe(), orig)
}
