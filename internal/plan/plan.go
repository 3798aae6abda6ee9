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
	// CascadeTables are the tables a change of this table's rows can change
	// on the target through ON DELETE/UPDATE actions (transitively).
	CascadeTables []uint64
	// TableHash identifies the table in coarse (table-level) conflicts.
	TableHash uint64
	// Collapsible tables have no secondary unique key, no foreign key in
	// either direction and no trigger: when transactions are merged, only
	// the last image of each row needs writing.
	Collapsible bool
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
	// Introducer is the charset of the source bytes ("utf8mb4", ...) for
	// character columns; empty for binary and non-character columns.
	Introducer string
	// Coll is the target column's collation (for key normalization).
	Coll schema.Collation
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
func TableSeed(schemaName, table string) uint64 {
	return xxhash.Sum64String(schemaName + "." + table)
}

// IndexSeed returns the identity of one index of a table.
func IndexSeed(schemaName, table, index string) uint64 {
	return xxhash.Sum64String(schemaName + "." + table + "/" + strings.ToLower(index))
}

// Builder computes and caches plans. It is safe for concurrent use.
type Builder struct {
	cache      *schema.Cache
	collations schema.Collations
	byName     map[string]schema.Collation
	mu         sync.Mutex
	plans      map[*binlog.TableMap]*Table
}

// NewBuilder returns a builder reading target metadata through cache.
func NewBuilder(cache *schema.Cache, collations schema.Collations) *Builder {
	b := &Builder{cache: cache, collations: collations, byName: map[string]schema.Collation{},
		plans: map[*binlog.TableMap]*Table{}}
	for _, c := range collations {
		b.byName[strings.ToLower(c.Name)] = c
	}
	return b
}

// Invalidate drops every plan (after DDL) and the schema cache entries of
// the named tables.
func (b *Builder) Invalidate() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.plans)
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
	p := &Table{Source: tm, Target: t, Name: t.QualifiedName(), TableHash: TableSeed(t.Schema, t.Name)}
	if err := b.mapColumns(p); err != nil {
		return nil, err
	}
	if err := b.mapKeys(p); err != nil {
		return nil, err
	}
	if err := b.mapForeignKeys(ctx, p); err != nil {
		return nil, err
	}
	p.Collapsible = len(t.UniqueKeys) == 0 && t.PrimaryKey != nil && len(t.ForeignKeys) == 0 &&
		len(t.ReferencedBy) == 0 && !t.HasTriggers
	if t.HasTriggers {
		p.Serialize = "table has triggers on the target"
	}
	return p, nil
}
