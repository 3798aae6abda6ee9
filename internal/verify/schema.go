package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/filter"
)

// tableID names a table.
type tableID struct{ Schema, Name string }

func (id tableID) String() string { return id.Schema + "." + id.Name }

func (id tableID) quoted() string { return quoteIdent(id.Schema) + "." + quoteIdent(id.Name) }

// index is a unique index of a table.
type index struct {
	Name    string
	Columns []string
	BTree   bool // HASH indexes (MEMORY tables, long UNIQUE) give no order
	Prefix  bool // a column is indexed by a prefix: unique on the prefix only
}

// tableDef is what the catalog says about one table.
type tableDef struct {
	ID      tableID
	Columns []column
	Unique  []index // PRIMARY first, then by name
}

// catalog holds the selected base tables of one server.
type catalog map[tableID]*tableDef

// readCatalog lists the base tables the rules select, with their columns
// and unique indexes. System-versioned tables count as base tables; views
// and sequences do not.
//
// Schemas are listed and filtered first, so the other queries read only
// selected schemas: an unrestricted information_schema.TABLES query also
// scans information_schema itself, which materializes its ~80 tables as
// temporary tables (13 of them on disk) on every call.
func readCatalog(ctx context.Context, conn *sql.Conn, rules filter.Rules) (catalog, error) {
	schemas, err := readSchemas(ctx, conn, rules)
	if err != nil || len(schemas) == 0 {
		return catalog{}, err
	}
	cat := catalog{}
	where, args := inSchemas(schemas)
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
		WHERE `+where+` AND TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED')`, args...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	for rows.Next() {
		var id tableID
		if err := rows.Scan(&id.Schema, &id.Name); err != nil {
			rows.Close()
			return nil, fmt.Errorf("list tables: %w", err)
		}
		if rules.Match(id.Schema, id.Name) {
			cat[id] = &tableDef{ID: id}
		}
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	if len(cat) == 0 {
		return cat, nil
	}
	if err := readColumns(ctx, conn, cat, schemas); err != nil {
		return nil, err
	}
	if err := readIndexes(ctx, conn, cat, schemas); err != nil {
		return nil, err
	}
	return cat, nil
}

// readSchemas returns the schemas that may hold selected tables.
func readSchemas(ctx context.Context, conn *sql.Conn, rules filter.Rules) ([]string, error) {
	rows, err := conn.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("list schemas: %w", err)
		}
		if rules.MatchSchema(s) {
			out = append(out, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	return out, nil
}

// inSchemas returns "TABLE_SCHEMA IN (?, ...)" and its arguments.
func inSchemas(schemas []string) (string, []any) {
	args := make([]any, len(schemas))
	for i, s := range schemas {
		args[i] = s
	}
	return "TABLE_SCHEMA IN (?" + strings.Repeat(", ?", len(schemas)-1) + ")", args
}

func readColumns(ctx context.Context, conn *sql.Conn, cat catalog, schemas []string) error {
	where, args := inSchemas(schemas)
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE,
		IFNULL(CHARACTER_SET_NAME, ''), IFNULL(COLLATION_NAME, ''), IS_NULLABLE,
		IFNULL(NUMERIC_PRECISION, 0), IFNULL(NUMERIC_SCALE, 0)
		FROM information_schema.COLUMNS WHERE `+where+`
		ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`, args...)
	if err != nil {
		return fmt.Errorf("list columns: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id tableID
		var c column
		var nullable string
		if err := rows.Scan(&id.Schema, &id.Name, &c.Name, &c.DataType, &c.Type, &c.Charset, &c.Collation,
			&nullable, &c.Precision, &c.Scale); err != nil {
			return fmt.Errorf("list columns: %w", err)
		}
		if t := cat[id]; t != nil {
			c.DataType = strings.ToLower(c.DataType)
			c.Nullable = nullable == "YES"
			t.Columns = append(t.Columns, c)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list columns: %w", err)
	}
	return nil
}

func readIndexes(ctx context.Context, conn *sql.Conn, cat catalog, schemas []string) error {
	where, args := inSchemas(schemas)
	rows, err := conn.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, IFNULL(COLUMN_NAME, ''),
		SUB_PART IS NOT NULL, INDEX_TYPE
		FROM information_schema.STATISTICS WHERE NON_UNIQUE = 0 AND `+where+`
		ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, SEQ_IN_INDEX`, args...)
	if err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id tableID
		var name, col, typ string
		var prefix bool
		if err := rows.Scan(&id.Schema, &id.Name, &name, &col, &prefix, &typ); err != nil {
			return fmt.Errorf("list indexes: %w", err)
		}
		t := cat[id]
		if t == nil {
			continue
		}
		n := len(t.Unique)
		if n == 0 || t.Unique[n-1].Name != name {
			t.Unique = append(t.Unique, index{Name: name, BTree: true})
			n++
		}
		ix := &t.Unique[n-1]
		ix.Columns = append(ix.Columns, col)
		ix.Prefix = ix.Prefix || prefix
		// Functional key parts (MySQL) have no column name.
		ix.BTree = ix.BTree && typ == "BTREE" && col != ""
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("list indexes: %w", err)
	}
	for _, t := range cat {
		sort.SliceStable(t.Unique, func(i, j int) bool {
			return t.Unique[i].Name == "PRIMARY" && t.Unique[j].Name != "PRIMARY"
		})
	}
	return nil
}

// column returns the named column and its position, or -1.
func (t *tableDef) column(name string) (column, int) {
	for i, c := range t.Columns {
		if c.Name == name {
			return c, i
		}
	}
	return column{}, -1
}

// chunkKey picks the index that chunks the table: the primary key, else the
// unique index with the fewest columns, all NOT NULL (a NULL-able unique
// index admits any number of NULL rows). Only B-tree indexes over whole
// columns of keyable types qualify. nil means the table has no such key and
// is compared as a whole, as a multiset of rows.
func (t *tableDef) chunkKey() *index {
	var best *index
	for i := range t.Unique {
		ix := &t.Unique[i]
		if !ix.BTree || ix.Prefix || !t.usable(ix) {
			continue
		}
		if ix.Name == "PRIMARY" {
			return ix
		}
		if best == nil || len(ix.Columns) < len(best.Columns) {
			best = ix
		}
	}
	return best
}

func (t *tableDef) usable(ix *index) bool {
	for _, name := range ix.Columns {
		c, pos := t.column(name)
		if pos < 0 || c.Nullable || !c.keyable() {
			return false
		}
	}
	return true
}

// hasIndex reports whether the table has a unique index of this name over
// the same columns, so the same index hint applies.
func (t *tableDef) hasIndex(want *index) bool {
	for _, ix := range t.Unique {
		if ix.Name == want.Name && ix.BTree && !ix.Prefix && strings.Join(ix.Columns, "\x00") == strings.Join(want.Columns, "\x00") {
			return true
		}
	}
	return false
}

// compareColumns lists the differences between the column lists of both
// sides: names, types (with charset and collation) and order. Nullability
// and defaults are not compared; the row checksum does not depend on them.
func compareColumns(src, tgt []column) []string {
	var out []string
	n := max(len(src), len(tgt))
	for i := 0; i < n; i++ {
		var s, t string
		if i < len(src) {
			s = describe(src[i])
		}
		if i < len(tgt) {
			t = describe(tgt[i])
		}
		if s == t {
			continue
		}
		if s == "" {
			s = "(none)"
		}
		if t == "" {
			t = "(none)"
		}
		out = append(out, fmt.Sprintf("column %d: source %s, target %s", i+1, s, t))
	}
	return out
}

func describe(c column) string {
	s := quoteIdent(c.Name) + " " + c.Type
	if c.Collation != "" {
		s += " COLLATE " + c.Collation
	}
	return s
}
