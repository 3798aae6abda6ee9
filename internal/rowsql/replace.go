package rowsql

import (
	"strconv"
)

// Replaced rows. The collapser writes the last image of each row of a
// collapsible table that existed before the batch and changed (its last
// image differs from its image before the batch) with one multi-row
// REPLACE instead of the upsert, when the table's rows are written whole
// (plan.Table.WholeRows):
//
//	REPLACE INTO `s`.`t` (`id`,`a`,`b`) VALUES (1,..),(2,..);
//	SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>4)
//
// The upsert evaluates an assignment per column and row (c=VALUES(c)) after
// its failed insert attempt; the REPLACE stores the row it built: the
// target's CPU per row on the documents' 60-column profiles, the
// documents themselves and order entry's stock rows is in
// apply.BenchmarkReplaceRuns.
//
// Why it stores what the upsert stores, row by row (the argument of the
// LOAD DATA ... REPLACE in load.go, for statements):
//   - The table is collapsible: its only unique key is the primary key, it
//     has no foreign key either way and no trigger. The server's REPLACE
//     of a row whose primary key exists then updates that row in place
//     (write_record: the duplicate is on the last unique key and nothing
//     references the table), never deleting it or any other row, and
//     fires nothing.
//   - Every column the target stores is listed (WholeRows), with the
//     literals the upsert assigns, so the row ends as the after image, as
//     the upsert's assignments leave it; a generated column is computed
//     from them in both. A system-versioned table is not WholeRows.
//   - The REPLACE counts 2 for each row it found and changed, 1 for a row
//     it inserted (missing on the target) or found already equal. Only
//     rows whose last image differs from their image before the batch are
//     replaced, so the statement must count exactly twice its rows: the
//     guard after it fails the commit otherwise, as the upsert's own count
//     of the rows it found does (a row missing on the target, or one that
//     already held the last image: apply's diagnosis then applies the
//     batch again one statement at a time, without collapsing).
//   - Rows that end as they began (updated and updated back) stay upserts:
//     a REPLACE would count 1 for them, as for a missing row.

// replaceRows writes the collapsed rows of ct that existed before the
// batch and changed as REPLACE statements, when its rows are written whole,
// and marks them written: the rest stay upserts (writeRows).
func (c *collapser) replaceRows(w *Writer, ct *collapsedTable) error {
	p := ct.p
	if !p.WholeRows {
		return nil
	}
	n := 0
	var info Stmt
	for i := range ct.rows {
		r := &ct.rows[i]
		if r.final == nil || !r.existed || r.written || sameImage(p, r.key, r.final) {
			continue
		}
		if n == 0 {
			w.begin()
			w.buf = appendInsertHead(w.buf, p, "REPLACE INTO ")
			info = Stmt{Expect: -1, Txn: r.txn, Table: p, What: "replace of changed rows (2 per row)", Row: r.final, Key: p.RowKey}
		} else {
			w.buf = append(w.buf, ',')
		}
		if err := w.appendRow(p, r.final, p.Write); err != nil {
			return err
		}
		r.written = true
		n++
		if len(w.buf)-w.start > w.MaxStatement {
			if err := w.endReplace(info, n); err != nil {
				return err
			}
			n = 0
		}
	}
	if n == 0 {
		return nil
	}
	return w.endReplace(info, n)
}

// endReplace ends a REPLACE of the given number of changed rows and writes
// its guard: each row must count 2.
func (w *Writer) endReplace(info Stmt, rows int) error {
	if err := w.end(info); err != nil {
		return err
	}
	w.begin()
	w.buf = append(w.buf, "SET "+guardVar+"="+guardVar+"+(ROW_COUNT()<>"...)
	w.buf = strconv.AppendInt(w.buf, 2*int64(rows), 10)
	w.buf = append(w.buf, ')')
	return w.end(Stmt{Expect: -1, What: RowCountCheck})
}
