package rowsql

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

// endReplace ends a REPLACE of info.Expect changed rows and writes its
// guard: each row must count 2. The guard is written whatever the
// statement's place in the transaction (end leaves the counts of later row
// statements to the client, which costs Commit a round trip of its own).
func (w *Writer) endReplace(info Stmt) error {
	rows := info.Expect
	info.Expect = -1
	if err := w.end(info); err != nil {
		return err
	}
	w.begin()
	w.buf = appendGuardSet(w.buf, 2*rows)
	return w.end(Stmt{Expect: -1, What: RowCountCheck})
}
