package rowsql

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// Partial row images (binlog_row_image MINIMAL or NOBLOB on the source; see
// txn.Change.Partial) are written with the plain statements of source
// order, never in a form that assumes a whole row:
//
//   - an UPDATE finds the row by its key (RowKey: the primary key or a
//     NOT NULL unique key), which must be whole in the before image, and
//     sets the columns the source wrote (those of the after image it
//     changed; an ON UPDATE column the source did not write keeps its
//     value, SET c=c, rather than take the target's clock);
//   - a DELETE finds the row by the same key, and may join a multi-row
//     DELETE ... IN, which reads nothing but the key;
//   - an INSERT lists the columns the image has: the source logged every
//     column it gave a value (explicit, AUTO_INCREMENT, a default computed
//     by an expression or the clock), and the others took their constant
//     defaults, which the target's definition gives them too, or, for a
//     NOT NULL column without one, its implicit default (0, ''), which
//     only a session that is not strict gives: such an INSERT runs without
//     STRICT_ALL_TABLES (a value too wide for the target is then cut with
//     a warning instead of failing; the target's definitions are the
//     source's, copied or replicated);
//   - never an upsert run (it re-sends the whole row as an INSERT), never
//     a collapsed last image (the collapser writes an INSERT of the final
//     image, or an upsert), and never a multi-row INSERT (its rows share
//     one column list). A partial change of a collapsible table first
//     writes what the collapser holds of that table, so the table's
//     changes keep source order.
//
// A change whose image does not name its row on the target (no usable key,
// or a key column the image lacks) is refused before anything is applied
// (Named). Every statement keeps its row-count check: an UPDATE or DELETE
// that finds no row is an error, as for full images.

// Named reports an error when a partial change cannot be applied on the
// target: an update or delete whose before image lacks a column of the
// key that names the row there.
func Named(p *plan.Table, c *txn.Change) error {
	if !c.Partial || c.Kind == binlog.RowsInsert {
		return nil
	}
	if p.RowKey == nil {
		return fmt.Errorf("table %s: the row image is partial (binlog_row_image MINIMAL or NOBLOB on the source) and the "+
			"target table has no primary key or NOT NULL unique key to find the row by: give the target table the "+
			"source's primary key, or set binlog_row_image=FULL on the source", p.Name)
	}
	var missing []string
	for _, k := range p.RowKey {
		if c.Before[k].Kind == binlog.KindAbsent {
			missing = append(missing, "`"+p.Cols[k].Name+"`")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("table %s: the row image is partial (binlog_row_image MINIMAL or NOBLOB on the source) and "+
			"lacks %s of the key that names the row on the target: make the target's primary key the source's, "+
			"or set binlog_row_image=FULL on the source", p.Name, strings.Join(missing, ", "))
	}
	return nil
}

// insertPartial writes an INSERT of the columns a partial image has.
func (w *Writer) insertPartial(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	cols := w.assign[:0]
	for _, col := range p.Write {
		if c.After[col].Kind != binlog.KindAbsent {
			cols = append(cols, col)
		}
	}
	w.assign = cols
	w.begin()
	if omitsNotNull(p, c.After) {
		// A NOT NULL column without a default took its implicit default
		// (0, '') on the source, in a session that was not strict (a
		// strict one refuses the insert); the strict apply session would
		// refuse it here.
		w.buf = append(w.buf, setStatement+laxSQLMode+" FOR "...)
	}
	w.buf = append(w.buf, "INSERT INTO "...)
	w.buf = append(w.buf, p.Name...)
	w.buf = append(w.buf, " ("...)
	for i, col := range cols {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, p.Cols[col].Quoted...)
	}
	w.buf = append(w.buf, ") VALUES "...)
	if err := w.appendRow(p, c.After, cols); err != nil {
		return err
	}
	return w.end(Stmt{Expect: 1, Txn: t, Table: p, What: "insert (partial image)", Row: c.After, Key: p.RowKey, Exact: true})
}

// omitsNotNull reports whether a partial insert's image leaves out a
// column the target keeps NOT NULL (other than AUTO_INCREMENT, which the
// source logs when it generates it).
func omitsNotNull(p *plan.Table, after []binlog.Value) bool {
	for _, col := range p.Write {
		if after[col].Kind != binlog.KindAbsent || p.Target == nil {
			continue
		}
		tc := &p.Target.Columns[p.Cols[col].Target]
		if !tc.Nullable && !tc.AutoIncrement {
			return true
		}
	}
	return false
}

// flushCollapsed writes what the collapser holds of p's table before a
// partial change of it is written in source order. The changes waiting for
// the run planner go first: an earlier partial change of the table may be
// among them.
func (w *Writer) flushCollapsed(p *plan.Table) error {
	if !w.col.holds(p) {
		return nil
	}
	if err := w.writeRuns(); err != nil {
		return err
	}
	if err := w.closeOpen(); err != nil {
		return err
	}
	return w.col.writeTable(w, p)
}
