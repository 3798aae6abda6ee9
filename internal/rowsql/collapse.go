package rowsql

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// collapser merges the row changes of several transactions applied as one
// target transaction: only the state at its commit is visible, so for
// tables where the statements do exactly what the row images say
// (plan.Table.Collapsible: a primary key, no secondary unique key, no
// foreign key either way, no trigger) the last image of each row is all
// that needs writing. Rows that disappear are deleted in one statement,
// rows that are new are inserted in one, and rows that existed and changed
// are written with one REPLACE that must count 2 per row (replace.go;
// where the table's rows are written whole) or with one INSERT ... ON
// DUPLICATE KEY UPDATE that counts the rows it found (so a row missing on
// the target is an error, as it is for the UPDATE the unmerged path sends):
// see rowForm.
type collapser struct {
	tables []*collapsedTable
	byPlan map[*plan.Table]*collapsedTable
	d      xxhash.Digest
	buf    [8]byte
	// Scratch of load.go, keyrun.go and join.go: the rows of a table that
	// may be loaded, rows by key (range deletes, join runs), and the
	// columns a join writes.
	loads    []int32
	keyed    []keyedRow
	joinCols []int
}

type collapsedTable struct {
	p     *plan.Table
	rows  []collapsedRow
	index map[uint64]int32 // key hash -> first row with that hash
}

type collapsedRow struct {
	key     []binlog.Value // the image whose key columns identify the row
	final   []binlog.Value // nil: deleted
	existed bool           // present before the batch
	written bool           // written already: by a LOAD DATA (load.go, join.go) or a range DELETE (keyrun.go)
	next    int32          // next row with the same hash, -1 at the end
	txn     *txn.Txn       // last transaction that touched it
}

// reset forgets the batch's rows, clearing them: each points into a binlog
// event whose buffer a stale entry would keep alive.
func (c *collapser) reset() {
	for _, t := range c.tables {
		clear(t.rows)
		t.rows = t.rows[:0]
		clear(t.index)
	}
	clear(c.tables)
	c.tables = c.tables[:0]
	clear(c.byPlan)
}

func (c *collapser) table(p *plan.Table) *collapsedTable {
	if c.byPlan == nil {
		c.byPlan = map[*plan.Table]*collapsedTable{}
	}
	t := c.byPlan[p]
	if t == nil {
		t = &collapsedTable{p: p, index: map[uint64]int32{}}
		c.byPlan[p] = t
		c.tables = append(c.tables, t)
	}
	return t
}

// reserveMin is the size of body worth sizing the collapser for at once.
const reserveMin = 1024

// reserve makes room for the collapsible changes of a large body at once:
// grown by doubling, the rows and index of a table a 100,000-row
// transaction updates were copied and faulted in again and again (bulk
// benchmark, 2026-11-29: a seventh of binlane's CPU). One row per change:
// an update that changes its key takes a second, which append finds room
// for.
func (c *collapser) reserve(body *txn.Body, plans []*plan.Table) {
	if len(body.Changes) < reserveMin {
		return
	}
	want := map[*collapsedTable]int{}
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind == txn.ItemRows && plans[i] != nil && plans[i].Collapsible {
			want[c.table(plans[i])] += it.Last - it.First
		}
	}
	for ct, n := range want {
		if n < reserveMin {
			continue
		}
		ct.rows = slices.Grow(ct.rows, n)
		if len(ct.index) == 0 {
			ct.index = make(map[uint64]int32, n)
		}
	}
}

// add records one change.
func (c *collapser) add(t *txn.Txn, p *plan.Table, ch *txn.Change) {
	ct := c.table(p)
	switch ch.Kind {
	case binlog.RowsInsert:
		r := c.row(ct, ch.After, false)
		r.final, r.txn = ch.After, t
	case binlog.RowsDelete:
		r := c.row(ct, ch.Before, true)
		r.final, r.txn = nil, t
	default:
		if !sameKey(p, ch.Before, ch.After) {
			r := c.row(ct, ch.Before, true)
			r.final, r.txn = nil, t
			r = c.row(ct, ch.After, false)
			r.final, r.txn = ch.After, t
			return
		}
		r := c.row(ct, ch.Before, true)
		r.final, r.txn = ch.After, t
	}
}

// row finds or creates the entry for the row whose key is in img. A new
// entry records whether the row existed before the batch.
func (c *collapser) row(ct *collapsedTable, img []binlog.Value, existed bool) *collapsedRow {
	h := c.hash(ct.p, img)
	i, ok := ct.index[h]
	if !ok {
		i = -1
	}
	for j := i; j >= 0; j = ct.rows[j].next {
		if sameKey(ct.p, ct.rows[j].key, img) {
			return &ct.rows[j]
		}
	}
	ct.rows = append(ct.rows, collapsedRow{key: img, existed: existed, next: i})
	ct.index[h] = int32(len(ct.rows) - 1)
	return &ct.rows[len(ct.rows)-1]
}

func (c *collapser) hash(p *plan.Table, row []binlog.Value) uint64 {
	c.d.Reset()
	for _, k := range p.RowKey {
		v := &row[k]
		binary.LittleEndian.PutUint64(c.buf[:], uint64(v.N))
		c.d.Write(c.buf[:])
		c.d.Write(v.B)
	}
	return c.d.Sum64()
}

func sameKey(p *plan.Table, a, b []binlog.Value) bool {
	for _, k := range p.RowKey {
		if !SameValue(&a[k], &b[k]) {
			return false
		}
	}
	return true
}

// write emits the collapsed statements: deletes, then inserts of new rows,
// then upserts of changed rows.
func (c *collapser) write(w *Writer) error {
	for _, ct := range c.tables {
		if err := c.writeCollapsed(w, ct); err != nil {
			return err
		}
	}
	return nil
}

func (c *collapser) writeCollapsed(w *Writer, ct *collapsedTable) error {
	if err := c.writeDeletes(w, ct); err != nil {
		return err
	}
	if err := c.loadRows(w, ct, false); err != nil {
		return err
	}
	if err := c.writeRows(w, ct, insertNew); err != nil {
		return err
	}
	if err := c.loadRows(w, ct, true); err != nil {
		return err
	}
	if ct.p.WholeRows {
		if err := c.writeRows(w, ct, replaceChanged); err != nil {
			return err
		}
	}
	return c.writeRows(w, ct, upsertFound)
}

// holds reports whether rows of p's table wait in the collapser.
func (c *collapser) holds(p *plan.Table) bool {
	ct := c.byPlan[p]
	return ct != nil && len(ct.rows) > 0
}

// writeTable writes what the collapser holds of p's table now and forgets
// it: a change that cannot be collapsed (a partial image) follows it in
// source order. The table's later changes collapse again, written at the
// end; collapsible tables share no key with other tables' changes, so
// writing one earlier than the others keeps what each statement does.
func (c *collapser) writeTable(w *Writer, p *plan.Table) error {
	ct := c.byPlan[p]
	if err := c.writeCollapsed(w, ct); err != nil {
		return err
	}
	clear(ct.rows) // they point into binlog events: let them go
	ct.rows = ct.rows[:0]
	clear(ct.index)
	return nil
}

func (c *collapser) writeDeletes(w *Writer, ct *collapsedTable) error {
	if err := c.rangeDeletes(w, ct); err != nil {
		return err
	}
	for i := range ct.rows {
		r := &ct.rows[i]
		if r.final != nil || !r.existed || r.written {
			continue
		}
		if err := w.delete(r.txn, ct.p, &txn.Change{Kind: binlog.RowsDelete, Before: r.key}); err != nil {
			return err
		}
		if w.openFull() {
			if err := w.closeOpen(); err != nil {
				return err
			}
		}
	}
	return w.closeOpen()
}

// rowForm is a statement the collapser writes the rows of a table with
// that are still there at the end of the batch, in this order, each taking
// the rows that remain unwritten.
type rowForm int

const (
	// insertNew: a plain INSERT of the rows new in the batch, which counts
	// one per row or fails.
	insertNew rowForm = iota
	// replaceChanged: a REPLACE of the rows that existed and changed, which
	// must count 2 per row (replace.go; only where the table's rows are
	// written whole).
	replaceChanged
	// upsertFound: INSERT ... ON DUPLICATE KEY UPDATE of the rows that
	// existed, which counts the rows it found.
	upsertFound
)

// takes reports whether the form writes collapsed row r of p.
func (f rowForm) takes(p *plan.Table, r *collapsedRow) bool {
	if r.final == nil || r.written || r.existed != (f != insertNew) {
		return false
	}
	return f != replaceChanged || !sameImage(p, r.key, r.final)
}

// writeRows writes the rows of ct the form takes, in statements of at
// most MaxStatement bytes, and marks them written.
func (c *collapser) writeRows(w *Writer, ct *collapsedTable, f rowForm) error {
	p := ct.p
	verb := "INSERT INTO "
	if f == replaceChanged {
		verb = "REPLACE INTO "
	}
	var info Stmt
	for i := range ct.rows {
		r := &ct.rows[i]
		if !f.takes(p, r) {
			continue
		}
		if info.Expect == 0 {
			w.begin()
			w.buf = appendInsertHead(w.buf, p, verb)
			info = Stmt{Txn: r.txn, Table: p, Row: r.final, Key: p.RowKey}
		} else {
			w.buf = append(w.buf, ',')
		}
		if err := w.appendRow(p, r.final, p.Write); err != nil {
			return err
		}
		r.written = true
		info.Expect++
		if len(w.buf)-w.start > w.MaxStatement {
			if err := c.endRows(w, p, f, info); err != nil {
				return err
			}
			info.Expect = 0
		}
	}
	if info.Expect == 0 {
		return nil
	}
	return c.endRows(w, p, f, info)
}

// endRows ends a statement of the form whose info counts its rows in
// Expect, with the check of its row count the form has.
func (c *collapser) endRows(w *Writer, p *plan.Table, f rowForm, info Stmt) error {
	switch f {
	case insertNew:
		info.What, info.Exact = "insert", true
		w.grew(p, info.Expect)
		return w.end(info)
	case replaceChanged:
		info.What = "replace of changed rows (2 per row)"
		return w.endReplace(info)
	default:
		info.What = "upsert"
		return w.endUpsert(p, info)
	}
}

func isKeyColumn(p *plan.Table, col int) bool {
	for _, k := range p.RowKey {
		if k == col {
			return true
		}
	}
	return false
}
