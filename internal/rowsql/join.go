package rowsql

import (
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Join runs: a long upsert run (JoinRows updates or more) is written as
// the columns it sets, loaded into a temporary table, and one multi-table
// UPDATE of the table from it (see the package doc, "Long runs of
// updates"). An upsert re-sends every column of every row, which the
// server must parse, convert and store; most bulk updates change a few.
// Measured (apply.BenchmarkBulkForms, a 100,000-row UPDATE of two of five
// columns): 5.3-8.5 target-CPU-µs per row against the upsert's 8.6-9.6
// when the block is the whole table, but 6.0-8.0 against 6.2-8.4 when it
// is a quarter of it (the UPDATE then updates from a list of row ids),
// and no gain in a bulk drain.

// DefaultJoinRows is the length from which an upsert run becomes a join
// run. Below it the temporary table's creation and removal, and the
// statement that fills it, cost more than the columns the run saves.
const DefaultJoinRows = 1000

// joinTable is the temporary table of a join run, in the schema of the
// table it updates (where the worker may create temporary tables). It
// exists only from its run's CREATE to its DROP, in the worker's session:
// a failed round trip in between costs the connection, and with it the
// table; a later run replaces a leftover (CREATE OR REPLACE).
const joinTable = "_binlane_rows"

// joinState is an open join run's: the columns its UPDATE sets (set, by
// source column) and the keys of its rows.
type joinState struct {
	set   []bool
	cols  []int // the temporary table's columns (joinColumns)
	keys  map[string]struct{}
	first *txn.Change
	t     *txn.Txn
}

// joinable reports whether a table's upsert runs may become join runs:
// the key that finds a row is stored (a generated key column would not be
// in the temporary table) and the target's schema is known.
func (w *Writer) joinable(p *plan.Table) bool {
	if w.JoinRows <= 0 || p.Target == nil || len(p.RowKey) == 0 {
		return false
	}
	for _, k := range p.RowKey {
		if p.Cols[k].Generated {
			return false
		}
	}
	return true
}

// sets marks in set the columns an UPDATE of c sets, as update does: the
// non-key columns it changes and the ON UPDATE ones. It reports whether
// set already held them all.
func sets(p *plan.Table, c *txn.Change, set []bool, mark bool) bool {
	held := true
	for _, col := range p.Write {
		if isKeyColumn(p, col) || set[col] || SameValue(&c.Before[col], &c.After[col]) && !p.Cols[col].OnUpdate {
			continue
		}
		held = false
		if mark {
			set[col] = true
		}
	}
	return held
}

// bufferUpsert holds an update of an open upsert run that may become a
// join run, and starts the statement when the run is decided: a join run
// at JoinRows rows, an upsert once what it holds reaches MaxStatement.
func (w *Writer) bufferUpsert(p *plan.Table, c *txn.Change) error {
	o := w.open
	o.run = append(o.run, c)
	o.runBytes += imageBytes(c.After)
	switch {
	case len(o.run) >= w.JoinRows:
		return w.startJoin(p)
	case o.runBytes >= w.MaxStatement:
		return w.startUpsert(p)
	}
	return nil
}

// startUpsert writes the updates an open run holds as the start of an
// upsert.
func (w *Writer) startUpsert(p *plan.Table) error {
	o := w.open
	run := o.run
	o.run, o.runBytes = nil, 0
	w.begin()
	if len(p.Parents) > 0 && !w.fkOff {
		w.buf = append(w.buf, setStatement+fkChecksOff+" FOR "...)
	}
	w.buf = appendInsertHead(w.buf, p, "INSERT INTO ")
	for i, c := range run {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if err := w.appendRow(p, c.After, p.Write); err != nil {
			return err
		}
	}
	o.info.Expect = int64(len(run))
	clear(run) // they point into binlog events (see reset)
	return nil
}

// startJoin turns the open run into a join run of the columns its held
// updates set, and writes them.
func (w *Writer) startJoin(p *plan.Table) error {
	o := w.open
	info := o.info
	run := o.run
	o.run, o.runBytes = nil, 0
	set := make([]bool, len(p.Cols))
	for _, c := range run {
		sets(p, c, set, true)
	}
	// The open statement is replaced: nothing may close it meanwhile (a
	// full round trip is flushed by openJoin's first statement).
	w.open, w.o = nil, openStmt{}
	if err := w.openJoin(info.Txn, p, run[0], set); err != nil {
		return err
	}
	for _, c := range run {
		if err := w.joinRow(p, c); err != nil {
			return err
		}
	}
	clear(run) // they point into binlog events (see reset)
	return nil
}

// openJoin opens a join run: the temporary table and the INSERT that
// fills it, which takes rows from joinRow.
func (w *Writer) openJoin(t *txn.Txn, p *plan.Table, first *txn.Change, set []bool) error {
	tmp := sqlquote.Qualified(p.Target.Schema, joinTable)
	cols := joinColumns(p, set)
	w.begin()
	w.buf = append(w.buf, "CREATE OR REPLACE TEMPORARY TABLE "...)
	w.buf = append(w.buf, tmp...)
	w.buf = append(w.buf, " (PRIMARY KEY ("...)
	w.buf = appendColumns(w.buf, p, p.RowKey)
	// The columns as the table has them (type, charset, collation): a
	// value goes through the same conversion into either.
	w.buf = append(w.buf, ")) SELECT "...)
	w.buf = appendColumns(w.buf, p, cols)
	w.buf = append(w.buf, " FROM "...)
	w.buf = append(w.buf, p.Name...)
	w.buf = append(w.buf, " LIMIT 0"...)
	if err := w.end(Stmt{Expect: -1, What: "create the temporary table of a join run"}); err != nil {
		return err
	}
	w.begin()
	w.buf = append(w.buf, "INSERT INTO "...)
	w.buf = append(w.buf, tmp...)
	w.buf = append(w.buf, " ("...)
	w.buf = appendColumns(w.buf, p, cols)
	w.buf = append(w.buf, ") VALUES "...)
	if w.joinKeys == nil {
		w.joinKeys = map[string]struct{}{}
	}
	clear(w.joinKeys)
	w.o = openStmt{p: p, kind: binlog.RowsUpdate, join: &joinState{set: set, cols: cols, keys: w.joinKeys, first: first, t: t},
		info: Stmt{Expect: 0, What: "fill the temporary table of a join run", Exact: true,
			Subject: "the temporary table of a join run on " + p.Name}}
	w.open = &w.o
	return nil
}

// joinColumns lists the temporary table's columns: the key, then the
// columns the UPDATE sets.
func joinColumns(p *plan.Table, set []bool) []int {
	cols := append([]int(nil), p.RowKey...)
	for _, col := range p.Write {
		if set[col] {
			cols = append(cols, col)
		}
	}
	return cols
}

// joinRow adds an update to the open join run. One that sets a column the
// run does not, or updates a row the run already holds (the temporary
// table has one row per key, and the UPDATE visits each row once), ends
// the run and opens the next.
func (w *Writer) joinRow(p *plan.Table, c *txn.Change) error {
	j := w.open.join
	start := len(w.buf)
	key, err := w.appendKey(p, c.After)
	if err != nil {
		return err
	}
	_, dup := j.keys[string(key)]
	w.buf = w.buf[:start]
	fits := sets(p, c, j.set, false)
	if dup || !fits {
		set := j.set
		if !fits {
			set = append([]bool(nil), set...)
			sets(p, c, set, true)
		}
		t := j.t
		if err := w.closeOpen(); err != nil {
			return err
		}
		if err := w.openJoin(t, p, c, set); err != nil {
			return err
		}
		return w.joinRow(p, c)
	}
	j.keys[string(key)] = struct{}{}
	if w.open.info.Expect > 0 {
		w.buf = append(w.buf, ',')
	}
	w.open.info.Expect++
	return w.appendRow(p, c.After, j.cols)
}

// appendKey writes a row's key values (the run's duplicate check) at the
// end of the buffer and returns them.
func (w *Writer) appendKey(p *plan.Table, row []binlog.Value) ([]byte, error) {
	start := len(w.buf)
	for _, k := range p.RowKey {
		var err error
		if w.buf, err = w.lit.append(w.buf, &row[k], &p.Source.Columns[k], &p.Cols[k]); err != nil {
			return nil, columnError(p, k, err)
		}
		w.buf = append(w.buf, 0)
	}
	return w.buf[start:], nil
}

// endJoin ends a join run: the INSERT that filled the temporary table,
// the UPDATE that must find every one of its rows, and the table's DROP.
func (w *Writer) endJoin(p *plan.Table, info Stmt, j *joinState) error {
	n := info.Expect
	if err := w.end(info); err != nil {
		return err
	}
	tmp := sqlquote.Qualified(p.Target.Schema, joinTable)
	w.begin()
	w.buf = append(w.buf, "UPDATE "...)
	w.buf = append(w.buf, p.Name...)
	w.buf = append(w.buf, " `binlane_t` JOIN "...)
	w.buf = append(w.buf, tmp...)
	w.buf = append(w.buf, " `binlane_v` USING ("...)
	w.buf = appendColumns(w.buf, p, p.RowKey)
	w.buf = append(w.buf, ") SET "...)
	n0 := len(w.buf)
	for _, col := range p.Write {
		if !j.set[col] {
			continue
		}
		if len(w.buf) > n0 {
			w.buf = append(w.buf, ',')
		}
		q := p.Cols[col].Quoted
		w.buf = append(append(append(append(w.buf, "`binlane_t`."...), q...), "=`binlane_v`."...), q...)
	}
	if len(w.buf) == n0 {
		// Nothing changes: the UPDATE only finds the rows.
		q := p.Cols[p.Write[0]].Quoted
		w.buf = append(append(append(append(w.buf, "`binlane_t`."...), q...), "=`binlane_t`."...), q...)
	}
	st := Stmt{Expect: n, Txn: j.t, Table: p, What: "update (join run)", Row: j.first.Before, Key: p.RowKey}
	if err := w.end(st); err != nil {
		return err
	}
	return w.Raw("DROP TEMPORARY TABLE " + tmp)
}

// appendColumns writes a column list, each column quoted.
func appendColumns(dst []byte, p *plan.Table, cols []int) []byte {
	for i, col := range cols {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, p.Cols[col].Quoted...)
	}
	return dst
}
