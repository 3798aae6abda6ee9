// Package schema reads the target's table definitions from
// information_schema — columns, primary and unique keys, foreign keys in
// both directions, triggers, collations — and caches them per table until a
// DDL statement invalidates them.
//
// The package only reads metadata; it must never change a server.
package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// Table is a target table's definition.
type Table struct {
	// Schema and Name are the server's own spelling of the table's name
	// (information_schema's), whatever spelling it was asked for.
	Schema, Name string
	// Engine is the storage engine; Transactional whether it can roll back.
	Engine        string
	Transactional bool
	Columns       []Column
	// PrimaryKey is nil for tables without one.
	PrimaryKey *Index
	// UniqueKeys are the unique indexes other than the primary key.
	UniqueKeys []Index
	// ForeignKeys are the constraints in which this table is the child.
	ForeignKeys []ForeignKey
	// ReferencedBy are the constraints in which this table is the parent.
	ReferencedBy []ForeignKey
	// HasTriggers is set when any trigger is defined on the table.
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
	// DatetimePrecision is the fsp of temporal columns.
	DatetimePrecision int
	// MaxBytes is the maximum length in bytes of character/binary columns.
	MaxBytes int64
}

// Index is a primary or unique key.
type Index struct {
	Name    string
	Columns []int // positions in Table.Columns
	// Prefix holds the prefix length in characters of each column, 0 when
	// the whole column is indexed.
	Prefix []int
	// Nullable is set when any column can be NULL (such a unique key admits
	// several rows with NULL in it).
	Nullable bool
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
func (t *Table) QualifiedName() string { return QuoteName(t.Schema) + "." + QuoteName(t.Name) }

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

// QuoteName quotes an identifier with backticks.
func QuoteName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

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
}

// NewCache returns a cache reading from db; it asks the server how it
// compares table names.
func NewCache(ctx context.Context, db *sql.DB) (*Cache, error) {
	var lctn int
	if err := db.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lctn); err != nil {
		return nil, fmt.Errorf("read @@lower_case_table_names: %w", err)
	}
	return &Cache{db: db, tables: make(map[string]*Table), lowerCase: lctn != 0}, nil
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
	t, err := load(ctx, c.db, id.Schema, id.Table)
	if err != nil {
		return nil, fmt.Errorf("read definition of %s.%s: %w", QuoteName(schemaName), QuoteName(table), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t != nil {
		c.version++
		t.Version = c.version
	}
	c.tables[id.key()] = t
	return t, nil
}

// Invalidate forgets one table, and the tables whose foreign keys point to
// it or from it (their ReferencedBy / ForeignKeys lists change with it).
func (c *Cache) Invalidate(schemaName, table string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.Ident(schemaName, table).key()
	t := c.tables[k]
	delete(c.tables, k)
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
}
