// Package schema is binlane's one reader of table metadata: columns,
// indexes (primary, unique and plain, with their types and prefixes),
// foreign keys in both directions, triggers, engines, collations and the
// key that chunks a table. Everything that needs to know a table's
// definition asks it: the applier's plans (a Cache of the target's tables,
// kept per table until a DDL statement invalidates it), the copy and
// verify (a Catalog of the selected tables of a server, read at once).
//
// The package only reads metadata; it must never change a server.
package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Table is a target table's definition.
type Table struct {
	// Schema and Name are the server's own spelling of the table's name
	// (information_schema's), whatever spelling it was asked for.
	Schema, Name string
	// Type is information_schema's TABLE_TYPE: BASE TABLE, SYSTEM
	// VERSIONED, VIEW, SEQUENCE.
	Type string
	// Engine is the storage engine; Transactional whether it can roll back.
	Engine        string
	Transactional bool
	// Rows is the server's estimate of the table's rows (TABLE_ROWS).
	Rows    int64
	Columns []Column
	// Indexes are all of the table's indexes, unique or not: the primary
	// key first, then by name.
	Indexes []Index
	// PrimaryKey is nil for tables without one.
	PrimaryKey *Index
	// UniqueKeys are the unique indexes other than the primary key, those
	// a copy has deferred (Index.Deferred, see Cache.SetPending) included.
	UniqueKeys []Index
	// ForeignKeys are the constraints in which this table is the child.
	ForeignKeys []ForeignKey
	// ReferencedBy are the constraints in which this table is the parent.
	ReferencedBy []ForeignKey
	// HasTriggers is set when any trigger is defined on the table (read
	// by the Cache, and by ReadCatalog when asked).
	HasTriggers bool
	// Version changes whenever the definition is reloaded.
	Version uint64
	// Signature digests the definition: equal signatures, equal tables.
	Signature string
	byName    map[string]int
}

// Column is one column of a target table.
type Column struct {
	Name       string
	DataType   string // lower case: int, varchar, datetime, ...
	ColumnType string // full type: "int(10) unsigned", "enum('a','b')"
	Nullable   bool
	Unsigned   bool
	Charset    string // empty for non-character columns
	Collation  string
	// Generated columns are computed by the target and must not be written.
	Generated bool
	// OnUpdate columns change by themselves on UPDATE (ON UPDATE
	// CURRENT_TIMESTAMP) unless the statement sets them.
	OnUpdate bool
	// AutoIncrement is the table's AUTO_INCREMENT column.
	AutoIncrement bool
	// DatetimePrecision is the fsp of temporal columns.
	DatetimePrecision int
	// MaxBytes is the maximum length in bytes of character/binary columns.
	MaxBytes int64
	// Precision and Scale are DECIMAL's (NUMERIC_PRECISION and _SCALE).
	Precision, Scale int64
}

// Index is one index of a table.
type Index struct {
	Name    string
	Columns []int // positions in Table.Columns
	// Prefix holds the prefix length in characters of each column, 0 when
	// the whole column is indexed.
	Prefix []int
	// Nullable is set when any column can be NULL (such a unique key admits
	// several rows with NULL in it).
	Nullable bool
	// Unique is set for the primary key and unique keys.
	Unique bool
	// Type is INDEX_TYPE: BTREE, HASH (MEMORY tables, MariaDB's long
	// unique keys), FULLTEXT, SPATIAL.
	Type string
	// Functional is set when a key part is an expression, not a column.
	Functional bool
	// Deferred is set for a unique key the target does not have yet: a copy
	// builds it once the table's rows are in (see Cache.SetPending).
	Deferred bool
}

// ForeignKey is one constraint.
type ForeignKey struct {
	Name                      string
	ChildSchema, ChildTable   string
	ChildColumns              []string
	ParentSchema, ParentTable string
	ParentColumns             []string
	OnDelete, OnUpdate        string // CASCADE, SET NULL, RESTRICT, NO ACTION, SET DEFAULT
	// RulesHidden is set when the server hid the rules from this account
	// (information_schema.REFERENTIAL_CONSTRAINTS shows a constraint only
	// with a privilege beyond SELECT on the table): OnDelete and OnUpdate
	// are then empty and must be taken as acting on child rows.
	RulesHidden bool
}

// Cascades reports whether a change of the parent changes child rows (or
// may: rules hidden from the account).
func (f *ForeignKey) Cascades() bool {
	return f.RulesHidden || isAction(f.OnDelete) || isAction(f.OnUpdate)
}

func isAction(rule string) bool {
	return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
}

// QualifiedName returns `schema`.`table`.
func (t *Table) QualifiedName() string { return sqlquote.Qualified(t.Schema, t.Name) }

// Column returns the position of a column by name (case-insensitive, as
// MariaDB compares column names).
func (t *Table) Column(name string) (int, bool) {
	i, ok := t.byName[strings.ToLower(name)]
	return i, ok
}

// UsableKey returns the key that identifies rows: the primary key, or the
// first unique key whose columns are all NOT NULL; nil if there is none.
func (t *Table) UsableKey() *Index {
	if t.PrimaryKey != nil {
		return t.PrimaryKey
	}
	for i := range t.UniqueKeys {
		if !t.UniqueKeys[i].Nullable && !hasPrefix(t.UniqueKeys[i]) {
			return &t.UniqueKeys[i]
		}
	}
	return nil
}

func hasPrefix(ix Index) bool {
	for _, p := range ix.Prefix {
		if p != 0 {
			return true
		}
	}
	return false
}

// Cache loads table definitions on first use and keeps them until
// invalidated. It is safe for concurrent use.
type Cache struct {
	db      *sql.DB
	mu      sync.Mutex
	tables  map[string]*Table
	version uint64
	// lowerCase is set when the server stores or compares table names in
	// lower case (lower_case_table_names 1 or 2): names that differ only in
	// case are then one table.
	lowerCase bool
	// pending are the unique keys a copy deferred, by table (SetPending).
	pending map[string][]PendingKey
	// fetched are the schemas read whole on a first miss (see prefetch);
	// gen counts invalidations, so that a read that overlapped one does
	// not store what it read.
	fetched map[string]bool
	gen     uint64
}

// prefetchTables bounds the schemas Get reads whole: a larger one is read
// a table at a time, as the stream meets its tables.
const prefetchTables = 64

// NewCache returns a cache reading from db; it asks the server how it
// compares table names.
func NewCache(ctx context.Context, db *sql.DB) (*Cache, error) {
	var lctn int
	if err := db.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lctn); err != nil {
		return nil, fmt.Errorf("read @@lower_case_table_names: %w", err)
	}
	return &Cache{db: db, tables: make(map[string]*Table), lowerCase: lctn != 0, pending: map[string][]PendingKey{},
		fetched: map[string]bool{}}, nil
}

// Ident is a table's identity: its schema and name as the server compares
// them. Every identity of a table binlane derives (conflict keys, foreign
// key references, caches) comes from Ident, so that the spellings of a
// binlog table map, a foreign key definition and information_schema always
// agree.
type Ident struct{ Schema, Table string }

// Ident normalizes a table name the way the server compares names.
func (c *Cache) Ident(schemaName, table string) Ident {
	if c.lowerCase {
		return Ident{strings.ToLower(schemaName), strings.ToLower(table)}
	}
	return Ident{schemaName, table}
}

func (id Ident) key() string { return id.Schema + "\x00" + id.Table }

// Get returns the definition of a table, loading it if needed. A table that
// does not exist yields (nil, nil).
func (c *Cache) Get(ctx context.Context, schemaName, table string) (*Table, error) {
	id := c.Ident(schemaName, table)
	c.mu.Lock()
	t, ok := c.tables[id.key()]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	if err := c.prefetch(ctx, id.Schema); err != nil {
		return nil, err
	}
	c.mu.Lock()
	t, ok = c.tables[id.key()]
	c.mu.Unlock()
	if ok {
		return t, nil
	}
	t, err := ReadTable(ctx, c.db, id.Schema, id.Table) // nil: dropped meanwhile
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(id, t)
	return t, nil
}

// prefetch reads every table of a schema the first time one of its tables
// is missed (again after InvalidateAll), when it has at most
// prefetchTables: the foreign keys referencing a table are found by a scan
// of every schema's tables (24-32 ms each on a sandbox, more on a server
// with many tables), once per schema instead of once per table. What it
// stores is what Get would have read at that moment for each table.
func (c *Cache) prefetch(ctx context.Context, schemaName string) error {
	c.mu.Lock()
	done, gen := c.fetched[schemaName], c.gen
	c.fetched[schemaName] = true
	c.mu.Unlock()
	if done {
		return nil
	}
	var n int
	if err := c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", schemaName).Scan(&n); err != nil {
		return fmt.Errorf("count the tables of schema %s: %w", sqlquote.Name(schemaName), err)
	}
	if n == 0 || n > prefetchTables {
		return nil
	}
	tables, err := readSchema(ctx, c.db, schemaName)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return nil // invalidated meanwhile: read again table by table
	}
	for _, t := range tables {
		id := c.Ident(t.Schema, t.Name)
		if _, ok := c.tables[id.key()]; !ok {
			c.store(id, t)
		}
	}
	return nil
}

// Warm reads every table of the schemas rules selects into the cache, as
// a first miss in each schema with tables would (prefetch, at any size),
// and returns the tables rules selects, as ReadCatalog with triggers does.
// One load serves the start's check of the tables and the first
// transactions: read at the first miss instead, the definitions cost the
// first batch seven more queries, while the stream was already decoding
// beside it.
func (c *Cache) Warm(ctx context.Context, rules filter.Rules) ([]*Table, error) {
	schemas, err := selectedSchemas(ctx, c.db, rules)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	gen := c.gen
	c.mu.Unlock()
	l, err := load(ctx, c.db, scope{schemas: schemas, triggers: true, anywhere: true})
	if err != nil {
		return nil, err
	}
	var out []*Table
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range l.order {
		if len(t.Columns) == 0 {
			continue
		}
		if rules.Match(t.Schema, t.Name) {
			out = append(out, t)
		}
		if id := c.Ident(t.Schema, t.Name); c.gen == gen {
			if _, ok := c.tables[id.key()]; !ok {
				c.store(id, t)
			}
		}
	}
	if c.gen == gen {
		// A schema without tables yet (a copy is to create them) is read
		// whole at its first miss, as before Warm.
		for _, t := range l.order {
			c.fetched[c.Ident(t.Schema, "").Schema] = true
		}
	}
	return out, nil
}

// store caches a table's definition just read (nil: it does not exist);
// the caller holds mu.
func (c *Cache) store(id Ident, t *Table) {
	if t != nil {
		c.version++
		t.Version = c.version
		if p := c.pending[id.key()]; len(p) > 0 {
			t.addPending(p)
		}
	}
	c.tables[id.key()] = t
}

// PendingKey is a unique key a table is to have that the target has not
// built yet: a copy creates its tables without their secondary indexes and
// adds them once the rows are in (package provision).
type PendingKey struct {
	Name    string
	Columns []string
	Prefix  []int
}

// SetPending records the unique keys of a table that a copy deferred (nil
// once they are built). Until then the table's definition lists them among
// its UniqueKeys (Deferred set): the applier detects conflicts on them and
// writes the table's rows as it will once they exist, so that the build
// changes nothing it relies on.
func (c *Cache) SetPending(schemaName, table string, keys []PendingKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.Ident(schemaName, table).key()
	c.gen++
	if len(keys) == 0 {
		delete(c.pending, k)
	} else {
		c.pending[k] = keys
	}
	delete(c.tables, k)
}

// addPending lists deferred unique keys the target does not have (yet).
func (t *Table) addPending(keys []PendingKey) {
	for _, pk := range keys {
		have := false
		for _, ix := range t.Indexes {
			have = have || strings.EqualFold(ix.Name, pk.Name)
		}
		if have {
			continue
		}
		ix := Index{Name: pk.Name, Unique: true, Type: "BTREE", Deferred: true, Prefix: pk.Prefix}
		ok := true
		for _, name := range pk.Columns {
			pos, found := t.Column(name)
			if !found {
				ok = false // cannot be: DDL on the table builds its keys first
				break
			}
			ix.Columns = append(ix.Columns, pos)
			ix.Nullable = ix.Nullable || t.Columns[pos].Nullable
		}
		if ok {
			t.UniqueKeys = append(t.UniqueKeys, ix)
		}
	}
	t.digest()
}

// Invalidate forgets one table, and the tables whose foreign keys point to
// it or from it (their ReferencedBy / ForeignKeys lists change with it).
func (c *Cache) Invalidate(schemaName, table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.Ident(schemaName, table).key()
	t := c.tables[k]
	delete(c.tables, k)
	c.gen++
	if t == nil {
		return
	}
	for _, fk := range t.ForeignKeys {
		delete(c.tables, c.Ident(fk.ParentSchema, fk.ParentTable).key())
	}
	for _, fk := range t.ReferencedBy {
		delete(c.tables, c.Ident(fk.ChildSchema, fk.ChildTable).key())
	}
}

// InvalidateAll forgets every table (after a DDL statement whose tables we
// cannot name with certainty).
func (c *Cache) InvalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.tables)
	clear(c.fetched)
	c.gen++
}
