package rowsql

import (
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// A run of updates of one table is written as one multi-row INSERT ... ON
// DUPLICATE KEY UPDATE when every update in it keeps the row's primary key
// and changes no foreign-key column, and the table has no trigger and
// InnoDB checks its unique keys (plan.Table.Upsert). The server
// parses and plans one statement for the run instead of one per row (an
// UPDATE by key goes through the range optimizer; the upsert finds each
// row by its primary key directly).
//
// Why it does what the UPDATEs would have done, row by row and in order:
//   - The rows of the VALUES list are processed one after another, so a row
//     updated twice in a run ends as its last image, as with two UPDATEs.
//   - The insert attempt of an after image whose primary key exists fails
//     on the clustered index, which InnoDB inserts into before any
//     secondary index: the row updated is always the row the UPDATE would
//     have found, never one a secondary unique key names (a long unique
//     key, HASH, is checked by the server before the engine: such tables
//     are not Upsert). The update then checks the secondary unique keys
//     whose columns it changes, for that row, as the UPDATE did: a value
//     another row holds fails it with the same duplicate-key error. InnoDB
//     checks a unique key when it writes each row, never at the end of a
//     statement, and the rows are written in VALUES order: a value handed
//     from one row to another inside a run (freed by one update, taken by
//     a later one, or two rows exchanging values through a third) is free
//     when it is taken, as it was on the source, and is never held by two
//     rows. The run planner keeps every change holding that value in
//     source order (the value is a conflict key of both). The slots
//     benchmark's reservations: 50% of its changes are such updates, one
//     statement each before.
//   - No BEFORE INSERT trigger could fire on the attempt (no triggers).
//   - InnoDB checks or cascades foreign keys on an update only when it
//     changes a foreign-key column, in either role; these updates change
//     none, so the source's UPDATE did no foreign-key work. The insert
//     attempt would check the child's references (and fail on a row the
//     source wrote with the checks off), so the statement runs with
//     foreign_key_checks=0: it then does no foreign-key work either.
//   - A row missing on the target would be inserted: the first assignment
//     counts the rows found, and the guard fails the commit unless every
//     row was found (as the UPDATE's row count would).
//   - The upsert assigns every column the target stores, ON UPDATE columns
//     included, with the after image: what the UPDATE sets.

// upsertable reports whether an update may go into an upsert run.
func upsertable(p *plan.Table, c *txn.Change) bool {
	if !p.Upsert || c.Partial {
		return false
	}
	full := 0
	for _, col := range p.Write {
		pc := &p.Cols[col]
		if (pc.ForeignKey || isKeyColumn(p, col)) && !SameValue(&c.Before[col], &c.After[col]) {
			return false
		}
		full += len(c.After[col].B) + 8
	}
	if full < wideRow {
		return true
	}
	changed := 0
	for _, col := range p.Write {
		if !SameValue(&c.Before[col], &c.After[col]) {
			changed += len(c.After[col].B) + 8
		}
	}
	// An upsert re-sends the whole row: for a wide row of which little
	// changed, an UPDATE of the changed columns costs binlane and the
	// target far less than what a run saves (the benchmark's documents:
	// 60 columns, 2-4 KB, 3 changed; as upserts in runs across the merged
	// commit they cost the target 1.3x and binlane 1.6x per transaction
	// what the build before the runs spent; with this rule, the same).
	return full < wideRatio*changed
}

// changesUnique reports whether an update changes a column of a secondary
// unique key. Such an update may join an upsert run, but no other update
// merges into it (the package doc's net effect argues for updates that
// move no unique value).
func changesUnique(p *plan.Table, c *txn.Change) bool {
	for _, col := range p.Write {
		if p.Cols[col].Unique && !SameValue(&c.Before[col], &c.After[col]) {
			return true
		}
	}
	return false
}

// A row of at least wideRow bytes whose changed columns are less than
// 1/wideRatio of it is updated by an UPDATE of the changed columns.
const (
	wideRow   = 1024
	wideRatio = 4
)

// upsert adds an update to the open upsert run. The first update of a run
// is held: a run of one is written as an UPDATE, which costs the server
// less than a one-row upsert (apply.BenchmarkUpsertRuns, target CPU per
// row of a table with two foreign keys: guarded UPDATEs 21-30 µs; upserts
// 32-36 µs for one row, 20-25 in runs of 2, 18-19 in runs of 3, 10-11 in
// runs of 10).
func (w *Writer) upsert(t *txn.Txn, p *plan.Table, c *txn.Change) error {
	o := w.open
	if o == nil {
		w.o = openStmt{p: p, kind: binlog.RowsUpdate, held: c,
			info: Stmt{Expect: 1, Txn: t, Table: p, What: "update (upsert)", Row: c.Before, Key: p.RowKey}}
		w.open = &w.o
		return nil
	}
	if held := o.held; held != nil {
		o.held = nil
		w.begin()
		if len(p.Parents) > 0 && !w.fkOff {
			w.buf = append(w.buf, setStatement+fkChecksOff+" FOR "...)
		}
		w.buf = appendInsertHead(w.buf, p, "INSERT INTO ")
		if err := w.appendRow(p, held.After, p.Write); err != nil {
			return err
		}
	}
	w.buf = append(w.buf, ',')
	o.info.Expect++
	return w.appendRow(p, c.After, p.Write)
}

const (
	setStatement = "SET STATEMENT "
	fkChecksOff  = "foreign_key_checks=0"
	// laxSQLMode is the apply session's sql_mode (package dsn) without
	// STRICT_ALL_TABLES: for a value only a non-strict mode stores (the
	// ENUM error value 0), and for a partial insert that leaves out a NOT
	// NULL column (it then takes its default, or its implicit one, as on
	// the source). It keeps ALLOW_INVALID_DATES: without it a non-strict
	// mode would store an invalid date of the same row as a zero date,
	// with only a warning.
	laxSQLMode = "sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION'"
)

// endUpsert ends an INSERT of rows that must all exist with its ON
// DUPLICATE KEY UPDATE clause and the guard that checks they did. The
// upsert cannot be checked by its row count (with found-rows counting, a
// row inserted because it was missing counts 1, like a row found
// unchanged), so its first assignment counts the rows it found in
// countVar, evaluated once per row that was there; a row missing on the
// target leaves the count short and the guard fails the commit.
func (w *Writer) endUpsert(p *plan.Table, info Stmt) error {
	w.buf = append(w.buf, " ON DUPLICATE KEY UPDATE "...)
	cols := w.assign[:0]
	for _, col := range p.Write {
		if !isKeyColumn(p, col) {
			cols = append(cols, col)
		}
	}
	if len(cols) == 0 {
		cols = append(cols, p.RowKey[0]) // all columns are key columns: k=k
	}
	w.assign = cols
	for i, col := range cols {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		q := p.Cols[col].Quoted
		w.buf = append(w.buf, q...)
		if i == 0 {
			w.buf = append(w.buf, "=IF(("+countVar+":="+countVar+"+1)>0,VALUES("...)
			w.buf = append(w.buf, q...)
			w.buf = append(w.buf, "),NULL)"...)
			continue
		}
		w.buf = append(w.buf, "=VALUES("...)
		w.buf = append(w.buf, q...)
		w.buf = append(w.buf, ')')
	}
	expect := info.Expect
	info.Expect = -1
	if err := w.end(info); err != nil {
		return err
	}
	// The row-count guard for the upsert: every row must have been found.
	w.begin()
	w.buf = append(w.buf, "SET "+guardVar+"="+guardVar+"+("+countVar+"<>"...)
	w.buf = strconv.AppendInt(w.buf, expect, 10)
	w.buf = append(w.buf, "),"+countVar+"=0"...)
	return w.end(Stmt{Expect: -1, What: RowCountCheck, Txn: nil})
}

// setStatementAt gives the statement starting at offset at the session
// setting assign for its duration, joining a SET STATEMENT it already has.
func (w *Writer) setStatementAt(at int, assign string) {
	if string(w.buf[at:min(len(w.buf), at+len(setStatement))]) == setStatement {
		w.insertAt(at+len(setStatement), assign+",")
		return
	}
	w.insertAt(at, setStatement+assign+" FOR ")
}
