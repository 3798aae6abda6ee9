// Package plan maps a source table (as a binlog table map describes it)
// onto its target table (as the target's information_schema describes it):
// which source column feeds which target column, which columns identify a
// row, the unique and foreign keys conflict detection needs, and whether
// the table's changes may be collapsed when transactions are merged.
//
// A plan is computed once per table-map version and target-table version
// and then only read. The package reads metadata through schema.Cache; it
// must never write to a server.
package plan

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
)

// Table is the plan for one source table map.
type Table struct {
	Source *binlog.TableMap
	Target *schema.Table
	// Name is the quoted target name, `schema`.`table`.
	Name string
	Cols []Col // one per source column
	// Write lists the source columns written by inserts and updates (the
	// target's generated columns are left out).
	Write []int
	// RowKey lists the source columns that identify a row in WHERE clauses:
	// the primary key or a unique key without NULLs. Nil means the table has
	// neither and rows are matched on their whole before image.
	RowKey []int
	// Keys are the unique keys (primary first) for conflict detection.
	Keys []Key
	// Parents are the rows of other tables a change references.
	Parents []Parent
	// Children are the foreign keys in which this table is the parent and
	// that change child rows by themselves (CASCADE, SET NULL, SET
	// DEFAULT).
	Children []Child
	// Referenced: other tables' foreign keys reference this one (any
	// action), so changes of its keys order against changes of the rows
	// that reference them (writeset.RefSeed).
	Referenced bool
	// TableHash identifies the table in coarse (table-level) conflicts.
	TableHash uint64
	// OrderedRows tables reference themselves (directly or through other
	// tables): their rows are written one statement per row in source
	// order, never merged into a multi-row DELETE whose order the server
	// picks.
	OrderedRows bool
	// Collapsible tables have no secondary unique key, no foreign key in
	// either direction and no trigger: when transactions are merged, only
	// the last image of each row needs writing.
	Collapsible bool
	// Upsert tables have a primary key, no trigger, and secondary unique
	// keys (if any) that InnoDB checks in its own indexes (BTREE): a run of
	// their updates that keep the primary key and change no foreign-key
	// column may be written as one multi-row INSERT ... ON DUPLICATE KEY
	// UPDATE (see rowsql).
	Upsert bool
	// WholeRows: a REPLACE can write the table's whole rows: it is a base
	// table (a system-versioned table's REPLACE writes history rows of its
	// own) and every column the target stores is written from a source
	// column (an extra target column would be reset to its default by a
	// REPLACE).
	WholeRows bool
	// Loadable: LOAD DATA can write the table's whole rows exactly: they
	// are WholeRows, and each column's values read as text into its target
	// column as they do as SQL literals (see loadableColumn).
	Loadable bool
	// IntKey: the target table's primary key is one integer column, the
	// row key (RowKey). Rows whose key values (integers: the source's
	// values are checked one by one) follow each other without a gap are
	// then every row the table can hold in their key range (rowsql's range
	// deletes and join updates).
	IntKey bool
	// JoinBytes, when not 0, is what one row of the table takes in a
	// MEMORY table of its written columns: the table is Collapsible and
	// Loadable, its primary key one integer column, and no written column
	// a BLOB or TEXT (which MEMORY cannot hold), so its changed rows may be
	// loaded into a temporary MEMORY table and joined into it (rowsql's
	// join update).
	JoinBytes int
	// Serialize, when set, says why every transaction touching the table
	// must run alone.
	Serialize string
}

// Col is one source column and its target.
type Col struct {
	Name      string
	Quoted    string
	Target    int // position in Target.Columns
	Generated bool
	// OnUpdate columns must always be set by an UPDATE, changed or not, or
	// the target would give them its own clock's value.
	OnUpdate bool
	// ForeignKey columns are in a foreign key of the table or referenced
	// by another table's: changing one makes the target check or cascade.
	ForeignKey bool
	// Unique columns are in a secondary unique key.
	Unique bool
	// Introducer is the charset of the source bytes ("utf8mb4", ...) for
	// character columns; empty for binary and non-character columns.
	Introducer string
	// Coll is the target column's collation (for key normalization).
	Coll schema.Collation
	// StoreBytes: the target column stores the source's string bytes as
	// they are (a character column of the source bytes' charset, one byte
	// at least per character, not ENUM or SET), so a value written into it
	// may be a _binary literal (see rowsql's literal).
	StoreBytes bool
}

// Key is a unique key over source columns.
type Key struct {
	Seed    uint64 // identity of (table, index)
	Cols    []int
	Prefix  []int // prefix lengths in characters; 0 = whole column
	Primary bool
}

// Parent is a foreign key from this table to a parent row.
type Parent struct {
	// Seed is the parent key's identity, so the hash of the child's
	// reference equals the hash the parent row's own change produces.
	Seed uint64
	Cols []int // source columns of this (child) table
	// Colls are the parent columns' collations.
	Colls []schema.Collation
	// TableLevel is set when the referenced columns are not a unique key of
	// the parent: the reference then conflicts with the whole parent table.
	TableLevel bool
	// ParentTable identifies the parent table for table-level conflicts.
	ParentTable uint64
}

// TableSeed returns the identity of a table for table-level conflicts.
func TableSeed(id schema.Ident) uint64 {
	return xxhash.Sum64String(id.Schema + "." + id.Table)
}

// IndexSeed returns the identity of one index of a table (index names
// compare case-insensitively).
func IndexSeed(id schema.Ident, index string) uint64 {
	return xxhash.Sum64String(id.Schema + "." + id.Table + "/" + strings.ToLower(index))
}

// Options change how plans are built.
type Options struct {
	// AllowTriggers lets tables with triggers on the target be replicated
	// (their transactions then run alone); otherwise such a table is an
	// error, because its triggers would apply their effects a second time.
	AllowTriggers bool
}

// Builder computes and caches plans. It is safe for concurrent use.
type Builder struct {
	opts       Options
	cache      *schema.Cache
	collations schema.Collations
	byName     map[string]schema.Collation
	mu         sync.Mutex
	plans      map[*binlog.TableMap]*Table
}

// NewBuilder returns a builder reading target metadata through cache.
func NewBuilder(cache *schema.Cache, collations schema.Collations, opts Options) *Builder {
	b := &Builder{opts: opts, cache: cache, collations: collations, byName: map[string]schema.Collation{},
		plans: map[*binlog.TableMap]*Table{}}
	for _, c := range collations {
		b.byName[strings.ToLower(c.Name)] = c
	}
	return b
}

// Invalidate drops every plan and every cached definition (after DDL).
func (b *Builder) Invalidate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.plans)
	b.cache.InvalidateAll()
}

// Built records that a table's deferred unique keys exist now (a copy
// built them): its definition is read again, and the plans built while
// the keys were pending are dropped, so that later transactions are
// planned, and their failures compared (Reload), against the table as it
// is. Kept, every failure on the table after the build was reported as a
// change of its definition, and the stream restarted once before the real
// error showed.
func (b *Builder) Built(schemaName, table string) {
	b.cache.SetPending(schemaName, table, nil)
	id := b.cache.Ident(schemaName, table)
	b.mu.Lock()
	defer b.mu.Unlock()
	for tm, p := range b.plans {
		if b.cache.Ident(p.Target.Schema, p.Target.Name) == id {
			delete(b.plans, tm)
		}
	}
}

// Reload reads the definitions of the given tables again and reports
// whether any differs from the one its plans were built from; plans built
// from a changed definition are dropped.
func (b *Builder) Reload(ctx context.Context, tables []*Table) (changed bool, err error) {
	for _, p := range tables {
		b.cache.Invalidate(p.Target.Schema, p.Target.Name)
	}
	for _, p := range tables {
		t, err := b.cache.Get(ctx, p.Target.Schema, p.Target.Name)
		if err != nil {
			return false, err
		}
		if t == nil || t.Signature != p.Target.Signature {
			changed = true
		}
	}
	if changed {
		b.mu.Lock()
		clear(b.plans)
		b.mu.Unlock()
	}
	return changed, nil
}

// Collation names a collation id of the target: its name and character
// set.
func (b *Builder) Collation(id uint16) (name, charset string, ok bool) {
	c, ok := b.collations.Lookup(id)
	return c.Name, c.Charset, ok
}

// Schema returns the schema cache.
func (b *Builder) Schema() *schema.Cache { return b.cache }

// Get returns the plan for a table map, building it on first use.
func (b *Builder) Get(ctx context.Context, tm *binlog.TableMap) (*Table, error) {
	b.mu.Lock()
	p, ok := b.plans[tm]
	b.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := b.build(ctx, tm)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if len(b.plans) > 10000 {
		clear(b.plans) // table maps of long-gone table ids
	}
	b.plans[tm] = p
	b.mu.Unlock()
	return p, nil
}

func (b *Builder) build(ctx context.Context, tm *binlog.TableMap) (*Table, error) {
	if !tm.HasNames {
		return nil, fmt.Errorf("table %s: the binlog has no column names: set binlog_row_metadata=FULL on the source", tm.QualifiedName())
	}
	t, err := b.cache.Get(ctx, tm.Schema, tm.Table)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("table %s does not exist on the target", tm.QualifiedName())
	}
	if !t.Transactional {
		return nil, fmt.Errorf("table %s on the target uses the %s engine, which cannot roll back: binlane's retries and "+
			"crash recovery need a transactional engine (ALTER TABLE %s ENGINE=InnoDB on the target)", t.QualifiedName(), t.Engine, t.QualifiedName())
	}
	if t.HasTriggers && !b.opts.AllowTriggers {
		return nil, &TriggerError{Table: t.QualifiedName()}
	}
	p := &Table{Source: tm, Target: t, Name: t.QualifiedName(), TableHash: TableSeed(b.cache.Ident(t.Schema, t.Name))}
	if err := b.mapColumns(p); err != nil {
		return nil, err
	}
	if err := b.mapKeys(p); err != nil {
		return nil, err
	}
	if err := b.mapForeignKeys(ctx, p); err != nil {
		return nil, err
	}
	p.Referenced = len(t.ReferencedBy) > 0
	p.Collapsible = len(t.UniqueKeys) == 0 && t.PrimaryKey != nil && len(t.ForeignKeys) == 0 &&
		len(t.ReferencedBy) == 0 && !t.HasTriggers
	p.Upsert = t.PrimaryKey != nil && !t.HasTriggers
	for _, ix := range t.UniqueKeys {
		// A long unique key (HASH) is checked by the server before the
		// engine sees the row, so an upsert's insert attempt could find
		// another row by it.
		p.Upsert = p.Upsert && strings.EqualFold(ix.Type, "BTREE") && !ix.Functional
	}
	markKeyColumns(p)
	p.WholeRows = wholeRows(p)
	p.Loadable = loadable(p)
	p.IntKey = intKey(p)
	p.JoinBytes = joinBytes(p)
	switch {
	case t.HasTriggers:
		p.Serialize = SerializeTriggers
	case t.Type == "SEQUENCE":
		// A write to a sequence waits for the metadata lock of every open
		// transaction that opened it, such as an INSERT into a table whose
		// DEFAULT calls NEXTVAL on it: a later transaction holding it
		// would wait for the write's commit (ordered commit), and neither
		// would move.
		p.Serialize = SerializeSequence
	}
	return p, nil
}

// markKeyColumns sets Col.ForeignKey for the columns of the table's
// foreign keys and those other tables' foreign keys reference, whatever
// their actions (RESTRICT checks too), and Col.Unique for the columns of
// its secondary unique keys.
func markKeyColumns(p *Table) {
	t := p.Target
	mark := func(names []string) {
		for _, name := range names {
			for i := range p.Cols {
				if strings.EqualFold(p.Cols[i].Name, name) {
					p.Cols[i].ForeignKey = true
				}
			}
		}
	}
	for _, fk := range t.ForeignKeys {
		mark(fk.ChildColumns)
	}
	for _, fk := range t.ReferencedBy {
		mark(fk.ParentColumns)
	}
	for _, ix := range t.UniqueKeys {
		for _, tc := range ix.Columns {
			for i := range p.Cols {
				if p.Cols[i].Target == tc {
					p.Cols[i].Unique = true
				}
			}
		}
	}
}

// Reasons why every transaction touching a table runs alone (short stable
// codes: they label metrics).
const (
	SerializeTriggers          = "triggers"                 // allowed triggers on the target
	SerializeUniqueNotInSource = "unique_key_not_in_source" // a target unique key over a column the source lacks
	SerializeSequence          = "sequence"                 // a sequence's state (MariaDB logs it as a row)
)

// TriggerError refuses a table with triggers on the target.
type TriggerError struct{ Table string }

func (e *TriggerError) Error() string {
	return fmt.Sprintf("table %s has triggers on the target: they would fire for every replicated row and apply their "+
		"effects a second time (the source's trigger effects are already in its binlog as rows). Drop them on the target "+
		"while it is a replica (binlane keeps the trigger DDL it reads from the source for cut-over: see binlane status), "+
		"or pass --allow-target-triggers if they only write outside the replicated tables and may run twice", e.Table)
}

// TableHash is a table's identity for table-level conflicts, as the
// writesets of its row changes carry it.
func (b *Builder) TableHash(schemaName, table string) uint64 {
	return TableSeed(b.cache.Ident(schemaName, table))
}
