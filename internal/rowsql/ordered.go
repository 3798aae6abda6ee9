package rowsql

import (
	"fmt"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// openStmt is a multi-row INSERT or DELETE still taking rows.
type openStmt struct {
	p    *plan.Table
	kind binlog.RowsKind
	info Stmt
	// composite keys use OR-ed conditions instead of an IN list
	composite bool
	// held is the first update of an upsert run, not written yet: a run of
	// one is written as an UPDATE (see upsert).
	held *txn.Change
}

// change writes one row change in source order, merging runs of inserts,
// deletes or upsertable updates of one table into one statement.
func (w *Writer) change(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	if c.Partial {
		// The applier checks this before it schedules a transaction; a
		// transaction that runs alone or in parts is checked here.
		if err := Named(p, c); err != nil {
			return fmt.Errorf("transaction %s: %w", t.Describe(), err)
		}
	}
	sameSession := (c.Flags&binlog.RowsFlagNoForeignKeyChecks != 0) == w.fkOff
	f := formOf(p, c, w.OneByOne)
	// Diagnosis (OneByOne) shares no statement: a failed statement then
	// names the row that failed it.
	if o := w.open; o != nil && (w.OneByOne || o.p != p || o.kind != c.Kind || !f.shares() || !sameSession || w.openFull() ||
		p.OrderedRows && c.Kind == binlog.RowsDelete) {
		if err := w.closeOpen(); err != nil {
			return err
		}
	}
	if !sameSession {
		if err := w.session(c.Flags); err != nil {
			return err
		}
	}
	switch f {
	case formInsertPartial:
		return w.insertPartial(t, p, c)
	case formInsert:
		return w.insert(t, p, c)
	case formDelete:
		return w.delete(t, p, c)
	case formUpsert:
		return w.upsert(t, p, c)
	}
	return w.update(t, p, c)
}

// form is the statement a row change is written as: the one choice, per
// change, that decides how it is rendered and which changes it may share a
// statement with (a run: see runs.go).
type form uint8

const (
	// formInsert: a multi-row INSERT with the inserts of its table.
	formInsert form = iota
	// formInsertPartial: an INSERT of the columns a partial image has,
	// alone (see partial.go).
	formInsertPartial
	// formDelete: a DELETE ... IN with the deletes of its table (a partial
	// image's too: a delete reads only the key).
	formDelete
	// formUpsert: an update that keeps its primary key and its foreign-key
	// columns, in an upsert run of its table (upsert.go; a run of one is an
	// UPDATE). It may move a unique value.
	formUpsert
	// formUpdate: an UPDATE of one row, alone: it changes its primary key
	// or a foreign-key column, it
	// is a wide row's small change, a partial image, or diagnosis (which
	// writes UPDATEs so that a missing row fails its own statement, which
	// names it).
	formUpdate
)

// formOf chooses a change's form; oneByOne is diagnosis.
func formOf(p *plan.Table, c *txn.Change, oneByOne bool) form {
	switch {
	case c.Kind == binlog.RowsDelete:
		return formDelete
	case c.Kind == binlog.RowsInsert && c.Partial:
		return formInsertPartial
	case c.Kind == binlog.RowsInsert:
		return formInsert
	case !c.Partial && !oneByOne && upsertable(p, c):
		return formUpsert
	}
	return formUpdate
}

// shares reports whether a change of this form may share its statement
// with others of its table and form.
func (f form) shares() bool { return f == formInsert || f == formDelete || f == formUpsert }

// maxDeleteRows bounds the rows of one DELETE: MariaDB turns an IN list of
// in_predicate_conversion_threshold (1000) values or more into a subquery
// that may scan the table, and the OR-ed conditions of composite keys each
// cost the range optimizer memory.
const maxDeleteRows = 500

// statsRowsPerKey: a DELETE of k keys takes at most TABLE_ROWS/statsRowsPerKey
// of them (see deleteRows).
const statsRowsPerKey = 16

// deleteRows is how many rows one DELETE of p's table may take. The
// optimizer weighs a lookup of k keys against a scan of the rows its
// statistics count, and those can be stale: a table loaded after its
// statistics were computed and restarted before InnoDB recalculated them
// counts 0 rows, and MariaDB 10.11 then scans the whole table for every
// DELETE of 3 keys or more (EXPLAIN: range up to about TABLE_ROWS/10
// keys, a full scan beyond; bulk benchmark, 2026-11-29: 30 million rows
// examined by the deletes of 100,000). MariaDB's replica finds rows
// through the handler, without the optimizer. So the IN list stays
// within what the optimizer's count allows, down to one key (a lookup
// whatever the statistics). That count is the target's TABLE_ROWS when
// the table was planned plus the rows this writer inserted since, which
// InnoDB adds to it as they come (a table that starts empty and fills,
// as slots' parent and child do, gets longer lists as it grows).
func (w *Writer) deleteRows(p *plan.Table) int64 {
	if statsAmple(p) {
		return maxDeleteRows
	}
	return min(maxDeleteRows, max(1, (p.Target.Rows+w.grown[p])/statsRowsPerKey))
}

// statsAmple reports a table whose statistics allow the longest lists
// already (or that has none to go by): its inserts need no counting.
func statsAmple(p *plan.Table) bool {
	return p.Target == nil || p.Target.Rows >= maxDeleteRows*statsRowsPerKey
}

// grew records rows inserted into p's table.
func (w *Writer) grew(p *plan.Table, rows int64) {
	if statsAmple(p) {
		return
	}
	if w.grown == nil || len(w.grown) > 10000 {
		w.grown = map[*plan.Table]int64{} // tables planned again leave theirs behind
	}
	w.grown[p] += rows
}

// openFull reports whether the open multi-row statement takes no more rows.
func (w *Writer) openFull() bool {
	o := w.open
	return len(w.buf)-w.start > w.MaxStatement || o.kind == binlog.RowsDelete && o.info.Expect >= w.deleteRows(o.p)
}

func (w *Writer) insert(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	if w.open != nil {
		w.buf = append(w.buf, ',')
		w.open.info.Expect++
		return w.appendRow(p, c.After, p.Write)
	}
	w.begin()
	w.buf = appendInsertHead(w.buf, p, "INSERT INTO ")
	w.o = openStmt{p: p, kind: binlog.RowsInsert, info: Stmt{Expect: 1, Txn: t, Table: p, What: "insert", Row: c.After, Key: p.RowKey, Exact: true}}
	w.open = &w.o
	return w.appendRow(p, c.After, p.Write)
}

func appendInsertHead(buf []byte, p *plan.Table, verb string) []byte {
	buf = append(buf, verb...)
	buf = append(buf, p.Name...)
	buf = append(buf, " ("...)
	for i, c := range p.Write {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, p.Cols[c].Quoted...)
	}
	return append(buf, ") VALUES "...)
}

func (w *Writer) delete(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	info := Stmt{Expect: 1, Txn: t, Table: p, What: "delete", Row: c.Before, Key: p.RowKey}
	if p.RowKey == nil {
		// No key: one row at a time, matched on its whole image.
		w.begin()
		w.buf = append(w.buf, "DELETE FROM "...)
		w.buf = append(w.buf, p.Name...)
		w.buf = append(w.buf, " WHERE "...)
		if err := w.appendMatch(p, c.Before); err != nil {
			return err
		}
		w.buf = append(w.buf, " LIMIT 1"...)
		return w.end(info)
	}
	if w.open != nil {
		w.open.info.Expect++
		if w.open.composite {
			w.buf = append(w.buf, ") OR ("...)
			return w.appendMatch(p, c.Before)
		}
		w.buf = append(w.buf, ',')
		return w.appendKeyValue(p, c.Before)
	}
	w.begin()
	w.buf = append(w.buf, "DELETE FROM "...)
	w.buf = append(w.buf, p.Name...)
	w.o = openStmt{p: p, kind: binlog.RowsDelete, info: info, composite: len(p.RowKey) > 1}
	w.open = &w.o
	if w.o.composite {
		w.buf = append(w.buf, " WHERE ("...)
		return w.appendMatch(p, c.Before)
	}
	w.buf = append(w.buf, " WHERE "...)
	w.buf = append(w.buf, p.Cols[p.RowKey[0]].Quoted...)
	w.buf = append(w.buf, " IN ("...)
	return w.appendKeyValue(p, c.Before)
}

func (w *Writer) appendKeyValue(p *plan.Table, row []binlog.Value) error {
	k := p.RowKey[0]
	var err error
	if w.buf, err = w.lit.append(w.buf, &row[k], &p.Source.Columns[k], &p.Cols[k]); err != nil {
		return columnError(p, k, err)
	}
	return nil
}

// update writes one UPDATE that finds the row by its before image's key. An
// update that changes nothing the target stores still checks the row is
// there (a SET of a column to itself, which counts as found), so a row
// missing on the target is an error whatever the change.
func (w *Writer) update(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	w.begin()
	w.buf = append(w.buf, "UPDATE "...)
	w.buf = append(w.buf, p.Name...)
	w.buf = append(w.buf, " SET "...)
	what := "update"
	if anyChanged(p, c) {
		n := 0
		for _, col := range p.Write {
			if SameValue(&c.Before[col], &c.After[col]) && !p.Cols[col].OnUpdate {
				continue
			}
			if n > 0 {
				w.buf = append(w.buf, ',')
			}
			n++
			w.buf = append(w.buf, p.Cols[col].Quoted...)
			w.buf = append(w.buf, '=')
			if c.After[col].Kind == binlog.KindAbsent {
				// An ON UPDATE column a partial image leaves out: the
				// source did not write it, so it keeps its value.
				w.buf = append(w.buf, p.Cols[col].Quoted...)
				continue
			}
			var err error
			if w.buf, err = w.lit.value(w.buf, &c.After[col], &p.Source.Columns[col], &p.Cols[col]); err != nil {
				return columnError(p, col, err)
			}
		}
	} else {
		// Nothing the target stores changes: only check the row is there
		// (an ON UPDATE column does not fire when no value changes).
		q := p.Cols[p.Write[0]].Quoted
		w.buf = append(w.buf, q...)
		w.buf = append(w.buf, '=')
		w.buf = append(w.buf, q...)
		what = "update (no change)"
	}
	w.buf = append(w.buf, " WHERE "...)
	if err := w.appendMatch(p, c.Before); err != nil {
		return err
	}
	if p.RowKey == nil {
		w.buf = append(w.buf, " LIMIT 1"...)
	}
	return w.end(Stmt{Expect: 1, Txn: t, Table: p, What: what, Row: c.Before, Key: p.RowKey})
}

func anyChanged(p *plan.Table, c *txn.Change) bool {
	for _, col := range p.Write {
		if c.After[col].Kind != binlog.KindAbsent && !SameValue(&c.Before[col], &c.After[col]) {
			return true
		}
	}
	return false
}

// closeOpen finishes the open multi-row statement.
func (w *Writer) closeOpen() error {
	o := w.open
	if o == nil {
		return nil
	}
	w.open = nil
	if o.kind == binlog.RowsDelete {
		w.buf = append(w.buf, ')')
	}
	info, kind, p, held := o.info, o.kind, o.p, o.held
	w.o = openStmt{} // holds a row: let it go (see reset)
	if kind == binlog.RowsInsert {
		w.grew(p, info.Expect)
	}
	switch {
	case held != nil:
		return w.update(info.Txn, p, held)
	case kind == binlog.RowsUpdate:
		return w.endUpsert(p, info)
	}
	return w.end(info)
}
