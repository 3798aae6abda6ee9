package rowsql

import (
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Join updates: the changed rows of a bulk update of a collapsible table
// with an integer primary key (plan.Table.JoinBytes) are loaded into a
// temporary MEMORY table made like the target's written columns, and
// written into the target by one UPDATE joined from it:
//
//	CREATE OR REPLACE TEMPORARY TABLE `s`.`_binlane_rows` (PRIMARY KEY (`id`))
//	  ENGINE=MEMORY SELECT `id`,`a`,`b` FROM `s`.`t` LIMIT 0;
//	LOAD DATA LOCAL INFILE '...' INTO TABLE `s`.`_binlane_rows` ... (`id`,`a`,`b`);
//	UPDATE `s`.`t` `binlane_t` STRAIGHT_JOIN `s`.`_binlane_rows` `binlane_v`
//	  ON `binlane_t`.`id`=`binlane_v`.`id`
//	  SET `binlane_t`.`a`=`binlane_v`.`a`,`binlane_t`.`b`=`binlane_v`.`b`
//	  WHERE `binlane_t`.`id` BETWEEN 1001 AND 11000;
//	DROP TEMPORARY TABLE IF EXISTS `s`.`_binlane_rows`
//
// The target table first (STRAIGHT_JOIN) over the key range of the rows
// lets MariaDB update each row as its range scan reads it
// (safe_update_on_fly): the key is not assigned. LOAD DATA ... REPLACE
// into the table itself first tries to insert every row, fails on its
// key, reads it and updates it; the join costs the target half
// (apply.BenchmarkBulkForms: 3.1-5.7 against 7.4-11.4 target-CPU-µs per
// row of a 100,000-row update).
//
// Why it writes what the upsert would. The temporary table's columns are
// the target's (CREATE ... SELECT keeps each column's type, length,
// charset and nullability), so the load stores in it what a load into the
// target would (loadableColumn; its warning guard follows it), and the
// assignment copies each value between columns of one type unchanged.
// The columns a row of the chunk changed and every ON UPDATE column are
// assigned, with the last image (joinColumns); a column no row of the
// chunk changed holds on the target what it held before the batch, as
// the UPDATE of changed columns that source order sends would leave it,
// and is neither loaded nor assigned (a bulk update of two of five
// columns reads and writes two). The table has no trigger, no foreign key either way and no
// secondary unique key (Collapsible), so the UPDATE does nothing else. The
// rows' keys are unique in the temporary table (its primary key), and the
// join matches a target row to at most one of them. The UPDATE counts
// the rows it found (the session's found-rows flag): exactly the loaded
// rows when each is on the target; a missing row leaves the count short
// and the guard fails the commit, as for the upsert.
//
// Only for runs of consecutive keys (every key from lo to hi changed): the
// UPDATE's range scan takes a lock on every row it reads until the commit,
// also one the join then skips (apply.TestJoinRangeLocks), and a row the
// batch does not change may be another worker's (the scheduler orders
// transactions by the keys they change, not by ranges). Over a run, every
// row the target holds in the range is one of the batch's, and READ
// COMMITTED takes no gap locks: the join locks what the upsert would.
// Only where the target's binlog leaves temporary tables out (the session
// does not log, or logs rows: JoinBudget) — in statement format the
// target's binlog would carry the temporary table — and in chunks whose
// MEMORY table stays within half the session's max_heap_table_size.
// Shorter runs are left to the load.
const (
	joinTable   = "_binlane_rows"
	joinMaxRows = 10000
)

// joinRows writes the changed rows of ct listed in rows (rowLoads) that
// form runs of consecutive keys, loadMinRows at least, as join updates,
// and returns the rest of rows for loadRows.
func (c *collapser) joinRows(w *Writer, ct *collapsedTable, rows []int32) ([]int32, error) {
	p := ct.p
	if w.JoinBudget == 0 || p.JoinBytes == 0 || len(p.Write) < 2 {
		return rows, nil
	}
	maxRows := int(min(joinMaxRows, w.JoinBudget/int64(p.JoinBytes)))
	if maxRows < loadMinRows {
		return rows, nil
	}
	keys := c.keyed[:0]
	pk := p.RowKey[0]
	for _, i := range rows {
		if k, ok := orderKey(&ct.rows[i].final[pk]); ok {
			keys = append(keys, keyedRow{row: i, key: k})
		}
	}
	c.keyed = keys[:0]
	if len(keys) < loadMinRows {
		return rows, nil
	}
	err := keyRuns(keys, loadMinRows, maxRows, func(run []keyedRow) (int, error) { return c.joinChunk(w, ct, run) })
	if err != nil {
		return nil, err
	}
	rest := rows[:0] // the rows not joined, in their order
	for _, i := range rows {
		if !ct.rows[i].written {
			rest = append(rest, i)
		}
	}
	return rest, nil
}

// joinChunk writes one join update of the rows of keys (consecutive), as
// many as a round trip's file holds, and returns how many of keys it took.
func (c *collapser) joinChunk(w *Writer, ct *collapsedTable, keys []keyedRow) (int, error) {
	p := ct.p
	tmp := sqlquote.Qualified(p.Target.Schema, joinTable)
	cols := c.joinColumns(ct, keys)
	if err := w.Raw(joinCreate(p, tmp, cols)); err != nil {
		return 0, err
	}
	first := &ct.rows[keys[0].row]
	st := Stmt{Txn: first.txn, Table: p, What: "load of changed rows into a temporary table (1 per row)", Row: first.final,
		Key: p.RowKey, FileName: w.InfilePrefix + strconv.Itoa(w.files)}
	w.files++
	from := len(w.file)
	taken := 0
	for _, k := range keys {
		taken++
		r := &ct.rows[k.row]
		at := len(w.file)
		var ok bool
		if w.file, ok = appendLoadLine(w.file, cols, r.final); !ok {
			w.file = w.file[:at] // left to the load or the upsert
			continue
		}
		r.written = true
		st.Expect++
		if len(w.file)-from >= w.MaxRoundTrip {
			break
		}
	}
	if err := w.endLoadInto(p, tmp, cols, st, from, false); err != nil {
		return taken, err
	}
	pk := p.RowKey[0]
	w.begin()
	w.buf = appendJoinUpdate(w.buf, p, tmp, cols, &first.final[pk], &ct.rows[keys[taken-1].row].final[pk])
	if err := w.end(Stmt{Expect: st.Expect, Txn: st.Txn, Table: p, What: "update joined from the temporary table", Row: first.final,
		Key: p.RowKey}); err != nil {
		return taken, err
	}
	return taken, w.Raw("DROP TEMPORARY TABLE IF EXISTS " + tmp)
}

// joinColumns returns the columns a join of the rows of keys writes: the
// key, every column one of the rows changed (its image before the batch,
// the key image of a row that existed, against its last), and every ON
// UPDATE column (assigned, it keeps the source's value; left out, the
// target's clock would set it). The other columns hold on the target what
// they held before the batch, and the join leaves them: a bulk update of
// two of five columns loads and assigns two.
func (c *collapser) joinColumns(ct *collapsedTable, keys []keyedRow) []int {
	p := ct.p
	pk := p.RowKey[0]
	cols := append(c.joinCols[:0], pk)
	for _, col := range p.Write {
		if col == pk {
			continue
		}
		changed := p.Cols[col].OnUpdate
		for i := 0; i < len(keys) && !changed; i++ {
			r := &ct.rows[keys[i].row]
			changed = !SameValue(&r.key[col], &r.final[col])
		}
		if changed {
			cols = append(cols, col)
		}
	}
	c.joinCols = cols
	return cols
}

// joinCreate is the statement that makes the temporary table of p's
// columns cols, keyed like p.
func joinCreate(p *plan.Table, tmp string, cols []int) string {
	b := []byte("CREATE OR REPLACE TEMPORARY TABLE " + tmp + " (PRIMARY KEY (" + p.Cols[p.RowKey[0]].Quoted + ")) ENGINE=MEMORY SELECT ")
	for i, col := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.Cols[col].Quoted...)
	}
	b = append(b, " FROM "...)
	b = append(b, p.Name...)
	return string(append(b, " LIMIT 0"...))
}

// appendJoinUpdate writes the UPDATE that copies the columns cols but
// the key from the temporary table, over the key range lo..hi.
func appendJoinUpdate(dst []byte, p *plan.Table, tmp string, cols []int, lo, hi *binlog.Value) []byte {
	pk := p.Cols[p.RowKey[0]].Quoted
	dst = append(dst, "UPDATE "...)
	dst = append(dst, p.Name...)
	dst = append(dst, " `binlane_t` STRAIGHT_JOIN "...)
	dst = append(dst, tmp...)
	dst = append(dst, " `binlane_v` ON `binlane_t`."...)
	dst = append(dst, pk...)
	dst = append(dst, "=`binlane_v`."...)
	dst = append(dst, pk...)
	dst = append(dst, " SET "...)
	for i, col := range cols[1:] {
		if i > 0 {
			dst = append(dst, ',')
		}
		q := p.Cols[col].Quoted
		dst = append(dst, "`binlane_t`."...)
		dst = append(dst, q...)
		dst = append(dst, "=`binlane_v`."...)
		dst = append(dst, q...)
	}
	dst = append(dst, " WHERE `binlane_t`."...)
	return appendKeyRange(dst, pk, lo, hi)
}
