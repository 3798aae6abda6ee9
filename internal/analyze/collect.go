package analyze

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Planner returns the plan of a table map, as the applier's plan.Builder
// does (the command wraps one; see TableMapPlan for a binlog read without
// a server).
type Planner func(tm *binlog.TableMap) (*plan.Table, error)

// Collector turns the assembler's parts into the transactions Analyze
// takes, the way the applier's coordinator analyses them: the same
// run-alone reasons and writesets from the same writeset.Builder. It also
// names the keys that conflict, for the report (Namer).
type Collector struct {
	plans  Planner
	ws     writeset.Builder
	txns   []Txn
	cur    *Txn // a transaction arriving in parts
	seen   map[uint64]bool
	tables map[uint64]string    // table hash -> name
	keys   map[uint64][2]string // conflicting key -> table, value
	tmp    scheduler.KeySet
	// skipped counts transactions left empty by the filter.
	skipped int
}

// NewCollector returns a collector that plans tables with plans.
func NewCollector(plans Planner) *Collector {
	return &Collector{plans: plans, seen: map[uint64]bool{}, tables: map[uint64]string{}, keys: map[uint64][2]string{}}
}

// Add takes the next part of the stream (parts of a transaction in order).
func (c *Collector) Add(p txn.Part) error {
	if p.Chunk != nil {
		return nil
	}
	t := p.Txn
	if p.First && p.Last && p.Body.Empty() {
		c.skipped++ // every table filtered out: nothing to apply
		return nil
	}
	if p.First {
		c.cur = &Txn{GTID: t.GTID.String(), Domain: t.GTID.Domain, CommitID: t.CommitID,
			LastCommitted: t.LastCommitted, SequenceNumber: t.SequenceNumber, File: t.File}
		if !p.Last {
			c.cur.Alone = AloneTooLarge
		}
	}
	cur := c.cur
	if cur == nil {
		return fmt.Errorf("transaction %s: a part without its first part", t.GTID)
	}
	cur.Bytes += p.Bytes
	cur.Rows += len(p.Body.Changes)
	for i := range p.Body.Items {
		it := &p.Body.Items[i]
		if it.Kind == txn.ItemRows && it.Rows != nil {
			cur.Tables = addRows(cur.Tables, it.Rows.Table.Schema+"."+it.Rows.Table.Table, it.Last-it.First)
		}
	}
	if cur.Alone == "" {
		switch {
		case t.Savepoints || t.RolledBack:
			cur.Alone = AloneSavepoint
		case hasStatementDML(&p.Body):
			cur.Alone = AloneStatementDML
		case p.Body.HasStatements():
			cur.Alone = AloneDDL
		}
	}
	if cur.Alone == "" || cur.Alone == AloneSavepoint {
		if err := c.analyse(cur, &p.Body); err != nil {
			return fmt.Errorf("transaction %s: %w", t.GTID, err)
		}
		if cur.Set != nil && cur.Set.Barrier != "" && cur.Alone == "" {
			cur.Alone = cur.Set.Barrier
		}
	}
	if !p.Last {
		return nil
	}
	if cur.Alone != "" && cur.Alone != AloneSavepoint && cur.Set != nil && cur.Set.Barrier == "" {
		cur.Set = nil // the applier computes no writeset for it
	}
	c.txns = append(c.txns, *cur)
	c.cur = nil
	return nil
}

// addRows adds rows row changes of table name to list.
func addRows(list []TableRows, name string, rows int) []TableRows {
	for i := range list {
		if list[i].Name == name {
			list[i].Rows += rows
			return list
		}
	}
	return append(list, TableRows{Name: name, Rows: rows})
}

// analyse computes the writeset of a body, and names the keys an earlier
// transaction already held (the conflicts).
func (c *Collector) analyse(t *Txn, b *txn.Body) error {
	if t.Set == nil {
		t.Set = &scheduler.KeySet{}
	}
	from, fromShared := len(t.Set.Keys), len(t.Set.Shared)
	conflict := false
	for i := range b.Items {
		it := &b.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		p, err := c.plans(it.Rows.Table)
		if err != nil {
			return err
		}
		c.tables[p.TableHash] = p.Source.Schema + "." + p.Source.Table
		for j := it.First; j < it.Last; j++ {
			c.ws.AddChange(t.Set, p, &b.Changes[j])
		}
	}
	added := [][]uint64{t.Set.Keys[from:], t.Set.Shared[fromShared:]}
	for _, keys := range added {
		for _, k := range keys {
			if c.seen[k] {
				if _, ok := c.keys[k]; !ok {
					conflict = true
				}
			}
		}
	}
	if conflict {
		c.label(b)
	}
	for _, keys := range added {
		for _, k := range keys {
			c.seen[k] = true
		}
	}
	return nil
}

// label names the keys of a body's changes that were seen before and have
// no name yet: each unique key and parent reference of each change is
// hashed on its own to find which one a key is; a key that is neither
// (one the writeset adds for other reasons) is named by the table of the
// change that took it.
func (c *Collector) label(b *txn.Body) {
	for i := range b.Items {
		it := &b.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		p, err := c.plans(it.Rows.Table)
		if err != nil {
			continue
		}
		name := p.Source.Schema + "." + p.Source.Table
		for j := it.First; j < it.Last; j++ {
			ch := &b.Changes[j]
			for k := range p.Keys {
				q := *p
				q.Keys, q.Parents, q.Children = p.Keys[k:k+1], nil, nil
				what := "unique"
				if p.Keys[k].Primary {
					what = "PRIMARY"
				}
				c.name(&q, ch, name, what, p.Keys[k].Cols)
			}
			for k := range p.Parents {
				q := *p
				q.Keys, q.Parents, q.Children = nil, p.Parents[k:k+1], nil
				parent := c.tables[p.Parents[k].ParentTable]
				if parent == "" {
					parent = "parent of " + name
				}
				c.name(&q, ch, parent, "referenced by "+name, p.Parents[k].Cols)
			}
			// Any other key the writeset takes for the change (one the
			// passes above do not name): the change's table, at least.
			c.name(p, ch, name, "", nil)
		}
	}
}

func (c *Collector) name(q *plan.Table, ch *txn.Change, table, what string, cols []int) {
	c.tmp.Reset()
	c.ws.AddChange(&c.tmp, q, ch)
	for _, keys := range [][]uint64{c.tmp.Keys, c.tmp.Shared} {
		for n, k := range keys {
			if !c.seen[k] {
				continue
			}
			if _, ok := c.keys[k]; ok {
				continue
			}
			row := ch.After
			if row == nil || n == 0 && ch.Before != nil {
				row = ch.Before
			}
			if cols == nil {
				c.keys[k] = [2]string{table, fmt.Sprintf("row key %016x", k)}
				continue
			}
			c.keys[k] = [2]string{table, what + " (" + values(q, row, cols) + ")"}
		}
	}
}

// values renders key columns as name=value, values cut to 40 bytes.
func values(p *plan.Table, row []binlog.Value, cols []int) string {
	var parts []string
	for _, col := range cols {
		v := row[col].String()
		if len(v) > 40 {
			v = v[:40] + "…"
		}
		parts = append(parts, p.Cols[col].Name+"="+v)
	}
	return strings.Join(parts, ", ")
}

// Skipped returns how many transactions had nothing left to apply after
// the filter (they are not in Txns).
func (c *Collector) Skipped() int { return c.skipped }

// Txns returns the transactions collected so far.
func (c *Collector) Txns() []Txn { return c.txns }

// Namer names the tables and the conflicting keys seen.
func (c *Collector) Namer() Namer { return collectorNamer{c} }

type collectorNamer struct{ c *Collector }

func (n collectorNamer) Key(h uint64) (string, string) { k := n.c.keys[h]; return k[0], k[1] }
func (n collectorNamer) Table(h uint64) string         { return n.c.tables[h] }

// TableMapPlan builds a plan from a binlog table map alone, for binlogs
// analysed without a server to read definitions from: the primary key the
// map carries (binlog_row_metadata=FULL) is the only key; unique and
// foreign keys are unknown, and string keys compare as bytes (the
// collation is unknown), so fewer conflicts are found than the applier
// would find. A table without a primary key is taken whole, as the
// applier does.
func TableMapPlan(tm *binlog.TableMap) *plan.Table {
	id := schema.Ident{Schema: tm.Schema, Table: tm.Table}
	p := &plan.Table{Source: tm, Name: tm.QualifiedName(), TableHash: plan.TableSeed(id), Cols: make([]plan.Col, len(tm.Columns))}
	for i := range tm.Columns {
		p.Cols[i].Name = tm.Columns[i].Name
		if p.Cols[i].Name == "" {
			p.Cols[i].Name = fmt.Sprintf("@%d", i+1)
		}
	}
	if len(tm.PrimaryKey) > 0 {
		p.RowKey = tm.PrimaryKey
		p.Keys = []plan.Key{{Seed: plan.IndexSeed(id, "PRIMARY"), Cols: tm.PrimaryKey, Primary: true}}
	}
	return p
}

// hasStatementDML reports a body with row changes logged as statements.
func hasStatementDML(b *txn.Body) bool {
	for i := range b.Items {
		if it := &b.Items[i]; it.Kind == txn.ItemStatement && it.Statement.DML {
			return true
		}
	}
	return false
}
