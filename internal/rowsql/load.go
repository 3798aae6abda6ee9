package rowsql

import (
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Loading rows. When the collapser holds many changed rows of a table (a
// bulk UPDATE: 100,000 rows in one source transaction), their last images
// go as LOAD DATA LOCAL INFILE ... REPLACE of an in-memory file instead of
// upserts; many new rows go as a plain LOAD DATA instead of an INSERT (see
// loadRows). apply.BenchmarkBulkForms, target CPU per row of
// a 100,000-row update, the purge included: 10.6-12.8 µs against the
// upsert's 14.4-18.1 (2026-11-29; 1 MiB and 4 MiB files alike).
//
// Why it stores what the upsert stores, row by row:
//   - The table is collapsible: its only unique key is the primary key, it
//     has no foreign key either way and no trigger. The server's REPLACE
//     of a row whose primary key exists then updates that row in place
//     (write_record: the duplicate is on the last unique key and nothing
//     references the table), never deleting it or any other row, and
//     fires nothing.
//   - The table is loadable (plan.Table.Loadable): every column the target
//     stores is in the file, so the row ends as the after image, as the
//     upsert's assignments leave it, and each value's text reads into its
//     column as its literal does (appendLoadValue writes what literal writes,
//     without quotes or introducers; the file is read as CHARACTER SET
//     binary into columns that store the bytes as they are).
//   - The REPLACE counts 2 for each row it found and changed, 1 for a row
//     it inserted (missing on the target) or found already equal. Only rows
//     whose after image differs from their image before the batch go into
//     the file (the rest stay upserts), so the statement must count
//     exactly twice its rows: a row missing on the target leaves it short,
//     as the upsert's own count of rows found does.
//   - New rows: a plain LOAD DATA inserts the rows a multi-row INSERT of
//     the same values would, and counts one per row. A row whose key is
//     already on the target is skipped with a warning (LOCAL: the server
//     cannot stop the client's file) where the INSERT fails: the count
//     comes out short and the warning guard fails too.
//   - A value the column cannot store as it is fails the load in apply's
//     strict session, as it fails a literal (apply.TestLoadWarningGuard);
//     apply's diagnosis then applies the batch again one statement at a
//     time, without collapsing. In case a value is stored with a warning
//     all the same, the statement after the load fails the commit when
//     the load warned.
//
// Below loadMinRows rows the upsert stays: a LOAD DATA costs a round of
// its own between server and client, and at 50 rows it measured no gain.
const loadMinRows = 1000

// loadWarnings is the statement after a REPLACE load that fails the
// commit if the load warned. A SET that reads no table leaves the warnings
// of the statement before it in place (the row-count guard's included, and
// across round trips: it may start the next one).
const loadWarnings = "SET " + guardVar + "=" + guardVar + "+(@@warning_count<>0)"

// loadRows writes the rows of ct that can be loaded, when there are enough
// of them, and marks them written: with existed, the changed rows as LOAD
// DATA ... REPLACE files (the rest are left to the upsert); without, the
// new rows as plain LOAD DATA files, which count one per row (a row
// already on the target is skipped with a warning: both guards fail) and
// cost the target a quarter less than the INSERT (BenchmarkChunkShapes).
func (c *collapser) loadRows(w *Writer, ct *collapsedTable, existed bool) error {
	p := ct.p
	if w.InfilePrefix == "" || !p.Loadable || w.OneByOne || len(ct.rows) < loadMinRows {
		return nil // the common case, a merged batch of small transactions: no pass over its rows
	}
	rows := c.loads[:0] // the rows that may be loaded, by index: rowLoads once per row
	for i := range ct.rows {
		if rowLoads(p, &ct.rows[i], existed) {
			rows = append(rows, int32(i))
		}
	}
	c.loads = rows[:0]
	if len(rows) < loadMinRows {
		return nil
	}
	if existed {
		var err error
		if rows, err = c.joinRows(w, ct, rows); err != nil || len(rows) < loadMinRows {
			return err
		}
	}
	per, what := int64(1), "load of new rows (1 per row)"
	if existed {
		per, what = 2, "load of changed rows (REPLACE, 2 per row)"
	}
	var st Stmt
	from := 0 // where st's file starts in w.file
	for _, i := range rows {
		r := &ct.rows[i]
		if st.Expect == 0 {
			st = Stmt{Txn: r.txn, Table: p, What: what, Row: r.final, Key: p.RowKey,
				FileName: w.InfilePrefix + strconv.Itoa(w.files)}
			w.files++
			from = len(w.file)
		}
		at := len(w.file)
		var ok bool
		if w.file, ok = appendLoadLine(w.file, p.Write, r.final); !ok {
			w.file = w.file[:at] // a value only a literal can carry: left to the statements
			continue
		}
		r.written = true
		st.Expect += per
		if len(w.file)+len(w.buf) >= w.MaxRoundTrip {
			if err := w.endLoad(p, st, from, existed); err != nil {
				return err
			}
			st = Stmt{}
		}
	}
	if st.Expect == 0 {
		return nil
	}
	return w.endLoad(p, st, from, existed)
}

// endLoad writes the load into p's table of changed rows (REPLACE:
// replace) or of new rows, which the writer counts in the table (grew).
func (w *Writer) endLoad(p *plan.Table, st Stmt, from int, replace bool) error {
	if !replace {
		w.grew(p, st.Expect)
	}
	return w.endLoadInto(p, p.Name, p.Write, st, from, replace)
}

// endLoadInto writes the LOAD DATA statement (REPLACE: replace) of the
// file that starts at from in w.file, of p's columns cols, into the table
// named into, and its warning guard.
func (w *Writer) endLoadInto(p *plan.Table, into string, cols []int, st Stmt, from int, replace bool) error {
	st.File = w.file[from:]
	w.begin()
	w.buf = append(w.buf, "LOAD DATA LOCAL INFILE "...)
	w.buf = sqlquote.AppendEscaped(w.buf, "", st.FileName)
	if replace {
		w.buf = append(w.buf, " REPLACE"...)
	}
	w.buf = append(w.buf, " INTO TABLE "...)
	w.buf = append(w.buf, into...)
	w.buf = append(w.buf, loadFormat+" ("...)
	for i, col := range cols {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		w.buf = append(w.buf, p.Cols[col].Quoted...)
	}
	w.buf = append(w.buf, ')')
	if err := w.end(st); err != nil {
		return err
	}
	w.begin()
	w.buf = append(w.buf, loadWarnings...)
	return w.end(Stmt{Expect: -1, What: RowCountCheck})
}

// appendLoadLine writes a row's line of a load file: the values of its
// columns cols, tab-separated. ok is false for a value the file cannot
// carry exactly.
func appendLoadLine(dst []byte, cols []int, row []binlog.Value) (_ []byte, ok bool) {
	for i, col := range cols {
		if i > 0 {
			dst = append(dst, '\t')
		}
		if dst, ok = appendLoadValue(dst, &row[col]); !ok {
			return dst, false
		}
	}
	return append(dst, '\n'), true
}

// appendLoadValue writes a value as LOAD DATA reads it: what literal
// writes for it without quotes or introducer (appendText), \N for NULL, a
// string's tab, newline and backslash escaped.
func appendLoadValue(dst []byte, v *binlog.Value) ([]byte, bool) {
	switch v.Kind {
	case binlog.KindNull:
		return append(dst, '\\', 'N'), true
	case binlog.KindString:
		return appendLoadField(dst, v.B), true
	}
	out, err := appendText(dst, v)
	return out, err == nil
}

// rowLoads reports whether a collapsed row goes into a file of rows that
// existed (REPLACE: it is still there and changed) or of new rows, and
// every value has a text form.
func rowLoads(p *plan.Table, r *collapsedRow, existed bool) bool {
	if r.final == nil || r.written || r.existed != existed || existed && sameImage(p, r.key, r.final) {
		return false
	}
	for _, col := range p.Write {
		switch r.final[col].Kind {
		case binlog.KindNull, binlog.KindInt, binlog.KindYear, binlog.KindUint, binlog.KindFloat, binlog.KindDouble,
			binlog.KindDecimal, binlog.KindDate, binlog.KindTime, binlog.KindDateTime, binlog.KindTimestamp, binlog.KindString:
		default:
			return false
		}
	}
	return true
}

// sameImage reports whether two full images of a row hold the same value
// in every written column.
func sameImage(p *plan.Table, a, b []binlog.Value) bool {
	for _, col := range p.Write {
		if !SameValue(&a[col], &b[col]) {
			return false
		}
	}
	return true
}
