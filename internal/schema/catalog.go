package schema

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sqlquote"
)

// ReadCatalog reads the definitions of the tables the rules select on a
// server (of every type: callers keep the base tables they work on), in
// name order; their triggers only withTriggers. A table's ReferencedBy
// lists the foreign keys of the selected tables only.
//
// Schemas are listed and filtered first, so the other queries read only
// selected schemas: an unrestricted information_schema.TABLES query also
// scans information_schema itself, which materializes its ~80 tables as
// temporary tables (13 of them on disk) on every call.
func ReadCatalog(ctx context.Context, q Querier, rules filter.Rules, withTriggers bool) ([]*Table, error) {
	schemas, err := selectedSchemas(ctx, q, rules)
	if err != nil {
		return nil, err
	}
	l, err := load(ctx, q, scope{schemas: schemas, triggers: withTriggers})
	if err != nil {
		return nil, err
	}
	var out []*Table
	for _, t := range l.order {
		if rules.Match(t.Schema, t.Name) && len(t.Columns) > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// SelectedTables lists the base tables the rules select on a server
// (schema, table), of those the account can see, in name order. As in
// ReadCatalog, schemas are listed and filtered first: a scan of every
// schema's tables took 36 ms of each start on a sandbox (the server's own
// schemas are most of its tables), and grows with the server.
func SelectedTables(ctx context.Context, q Querier, rules filter.Rules) ([][2]string, error) {
	schemas, err := selectedSchemas(ctx, q, rules)
	if err != nil || len(schemas) == 0 {
		return nil, err
	}
	where, args := scope{schemas: schemas}.where("TABLE_SCHEMA", "TABLE_NAME")
	rows, err := q.QueryContext(ctx, "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' AND "+
		where+" ORDER BY TABLE_SCHEMA, TABLE_NAME", args...)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var sc, t string
		if err := rows.Scan(&sc, &t); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		if rules.Match(sc, t) {
			out = append(out, [2]string{sc, t})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	return out, nil
}

// selectedSchemas lists the schemas that may hold selected tables, in name
// order.
func selectedSchemas(ctx context.Context, q Querier, rules filter.Rules) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	defer rows.Close()
	var schemas []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, fmt.Errorf("list schemas: %w", err)
		}
		if rules.MatchSchema(s) {
			schemas = append(schemas, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	return schemas, nil
}

// ReadTable reads one table's definition without caching it; nil when it
// does not exist.
func ReadTable(ctx context.Context, q Querier, schemaName, table string) (*Table, error) {
	l, err := load(ctx, q, scope{schemas: []string{schemaName}, table: table, triggers: true})
	if err != nil {
		return nil, fmt.Errorf("read definition of %s.%s: %w", sqlquote.Name(schemaName), sqlquote.Name(table), err)
	}
	if len(l.order) == 0 || len(l.order[0].Columns) == 0 {
		return nil, nil
	}
	return l.order[0], nil
}

// readSchema reads the definitions of every table of a schema as
// ReadTable reads one (foreign keys that reference them from anywhere,
// triggers), in one load: the scan for the referencing foreign keys, the
// dearest query of a table's load, then runs once for them all.
func readSchema(ctx context.Context, q Querier, schemaName string) ([]*Table, error) {
	l, err := load(ctx, q, scope{schemas: []string{schemaName}, triggers: true, anywhere: true})
	if err != nil {
		return nil, fmt.Errorf("read the definitions of schema %s: %w", sqlquote.Name(schemaName), err)
	}
	var out []*Table
	for _, t := range l.order {
		if len(t.Columns) > 0 {
			out = append(out, t)
		}
	}
	return out, nil
}

// IsBase reports whether the table holds rows of its own: a base table or
// a system-versioned one (not a view or a sequence).
func (t *Table) IsBase() bool { return t.Type == "BASE TABLE" || t.Type == "SYSTEM VERSIONED" }

// ChunkKey returns the index that cuts the table into ranges, for the copy
// and for verify alike: the primary key, else the unique key with the
// fewest columns (the first by name among equals), of those that can: a
// B-tree over whole columns (no prefix, no expression), every one NOT NULL
// (a unique key with a NULL admits any number of rows with it) and of a
// type whose values come back as text that converts back to the same value
// and orders as the index does. nil: the table has none, and is copied in
// one pass and compared as a multiset of rows.
func (t *Table) ChunkKey() *Index {
	return t.ChunkKeyBy(func(c *Column) bool { return orderedAsText(c.DataType) })
}

// ChunkKeyBy is ChunkKey among the indexes whose every column usable
// accepts (the copy orders key values itself, and accepts fewer types
// than the server's comparisons verify relies on: CopyKey).
func (t *Table) ChunkKeyBy(usable func(*Column) bool) *Index {
	var best *Index
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		if !ix.Unique || !t.chunkable(ix, usable) {
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

func (t *Table) chunkable(ix *Index, usable func(*Column) bool) bool {
	if ix.Functional || ix.Deferred || !strings.EqualFold(ix.Type, "BTREE") || len(ix.Columns) == 0 {
		return false
	}
	for i, pos := range ix.Columns {
		c := &t.Columns[pos]
		if ix.Prefix[i] != 0 || c.Nullable || !usable(c) {
			return false
		}
	}
	return true
}

// orderedAsText reports whether a column type can bound a chunk: its values
// come back from the server as text that converts back to the same value
// and compares in index order.
func orderedAsText(dataType string) bool {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year",
		"decimal", "numeric", "date", "time", "datetime", "timestamp",
		"char", "varchar", "binary", "varbinary":
		return true
	}
	return false
}

// IndexByName returns the named index (names compare without case), or nil.
func (t *Table) IndexByName(name string) *Index {
	for i := range t.Indexes {
		if strings.EqualFold(t.Indexes[i].Name, name) {
			return &t.Indexes[i]
		}
	}
	return nil
}

// ColumnNames returns the names of an index's columns.
func (t *Table) ColumnNames(ix *Index) []string {
	out := make([]string, len(ix.Columns))
	for i, pos := range ix.Columns {
		out[i] = t.Columns[pos].Name
	}
	return out
}

// ShowCreateTable returns a table's CREATE TABLE statement as the server
// writes it, without its AUTO_INCREMENT counter (which moves with every
// insert and is not part of the definition).
func ShowCreateTable(ctx context.Context, q Querier, schemaName, table string) (string, error) {
	var name, create string
	err := q.QueryRowContext(ctx, "SHOW CREATE TABLE "+sqlquote.Qualified(schemaName, table)).Scan(&name, &create)
	if err != nil {
		return "", fmt.Errorf("read the definition of %s.%s: %w", sqlquote.Name(schemaName), sqlquote.Name(table), err)
	}
	return autoIncrement.ReplaceAllString(create, ""), nil
}

// ColumnsStatement is the statement whose result ScanColumns reads: a
// table's columns as the server sees them at that moment (SHOW FULL
// COLUMNS: it names the table by identifiers, so it can run inside a batch
// of statements without parameters).
func ColumnsStatement(schemaName, table string) string {
	return "SHOW FULL COLUMNS FROM " + sqlquote.Qualified(schemaName, table)
}

// ScanColumns reads ColumnsStatement's result: each column's name, data
// type (lower case, without length or attributes), character set (from
// its collation: "" for binary and non-character columns), and whether it
// is generated.
func ScanColumns(rows *sql.Rows) ([]Column, error) {
	names, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	at := map[string]int{}
	for i, n := range names {
		at[strings.ToLower(n)] = i
	}
	for _, need := range []string{"field", "type", "collation", "extra"} {
		if _, ok := at[need]; !ok {
			return nil, fmt.Errorf("SHOW FULL COLUMNS without %s", need)
		}
	}
	vals := make([]sql.NullString, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []Column
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		typ := strings.ToLower(vals[at["type"]].String)
		c := Column{Name: vals[at["field"]].String, ColumnType: typ, DataType: typ}
		if i := strings.IndexAny(typ, "( "); i >= 0 {
			c.DataType = typ[:i]
		}
		c.Unsigned = strings.Contains(typ, "unsigned")
		if coll := vals[at["collation"]]; coll.Valid {
			c.Collation = coll.String
			c.Charset, _, _ = strings.Cut(coll.String, "_")
		}
		ex := strings.ToUpper(vals[at["extra"]].String)
		c.Generated = strings.Contains(ex, "VIRTUAL") || strings.Contains(ex, "STORED") || strings.Contains(ex, "PERSISTENT")
		out = append(out, c)
	}
	return out, rows.Err()
}

// TriggeredTable returns a table the rules select that has a trigger
// (`schema`.`table`), or "": a cheap check to repeat while replicating.
func TriggeredTable(ctx context.Context, q Querier, rules filter.Rules) (string, error) {
	rows, err := q.QueryContext(ctx, `SELECT DISTINCT EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE FROM information_schema.TRIGGERS`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	for rows.Next() {
		var sc, t string
		if err := rows.Scan(&sc, &t); err != nil {
			return "", err
		}
		if rules.Match(sc, t) {
			return sqlquote.Qualified(sc, t), nil
		}
	}
	return "", rows.Err()
}
