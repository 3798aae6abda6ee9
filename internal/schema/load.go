package schema

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/filter"
)

// scope says which tables a load reads: one table, or every table of some
// schemas. Each query of a load reads the whole scope at once, so that a
// catalog of hundreds of tables costs as many queries as one table.
type scope struct {
	schemas []string
	table   string // with exactly one schema
	// triggers: read them (a catalog may not need them: the query makes the
	// server write a temporary table to disk).
	triggers bool
	// anywhere: list the foreign keys that reference the tables from any
	// schema, as for one table (see loadForeignKeys).
	anywhere bool
}

// where returns the condition selecting the scope's rows of an
// information_schema table whose schema and table name columns are given.
func (s scope) where(schemaCol, tableCol string) (string, []any) {
	if s.table != "" {
		return schemaCol + " = ? AND " + tableCol + " = ?", []any{s.schemas[0], s.table}
	}
	return inList(schemaCol, "IN", s.schemas)
}

// inList returns "col op (?, ?, ...)" with a placeholder for each value,
// and the values as arguments (op: IN or NOT IN; vals not empty).
func inList(col, op string, vals []string) (string, []any) {
	args := make([]any, len(vals))
	for i, v := range vals {
		args[i] = v
	}
	return col + " " + op + " (?" + strings.Repeat(", ?", len(vals)-1) + ")", args
}

// tableKey identifies a table within one load: the server's own spelling.
type tableKey struct{ schema, name string }

// loaded is the tables one load found, by their spelling in
// information_schema, in name order.
type loaded struct {
	byKey map[tableKey]*Table
	order []*Table
}

func (l *loaded) get(schemaName, name string) *Table { return l.byKey[tableKey{schemaName, name}] }

// load reads the definitions of the tables in scope: base tables,
// system-versioned tables, views and sequences alike (a view has no
// engine, no keys and no columns of its own that matter here).
func load(ctx context.Context, q Querier, sc scope) (*loaded, error) {
	l := &loaded{byKey: map[tableKey]*Table{}}
	if len(sc.schemas) == 0 {
		return l, nil
	}
	if err := loadTables(ctx, q, sc, l); err != nil {
		return nil, fmt.Errorf("read tables: %w", err)
	}
	if len(l.order) == 0 {
		return l, nil
	}
	if err := loadColumns(ctx, q, sc, l); err != nil {
		return nil, fmt.Errorf("read columns: %w", err)
	}
	if err := loadIndexes(ctx, q, sc, l); err != nil {
		return nil, fmt.Errorf("read indexes: %w", err)
	}
	if err := loadForeignKeys(ctx, q, sc, l); err != nil {
		return nil, fmt.Errorf("read foreign keys: %w", err)
	}
	if sc.triggers {
		if err := loadTriggers(ctx, q, sc, l); err != nil {
			return nil, fmt.Errorf("read triggers: %w", err)
		}
	}
	for _, t := range l.order {
		t.digest()
	}
	return l, nil
}

func loadTables(ctx context.Context, q Querier, sc scope, l *loaded) error {
	where, args := sc.where("t.TABLE_SCHEMA", "t.TABLE_NAME")
	rows, err := q.QueryContext(ctx, `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.TABLE_TYPE, COALESCE(t.ENGINE, ''),
			e.TRANSACTIONS IS NULL OR e.TRANSACTIONS = 'YES', t.ENGINE IS NULL, COALESCE(t.TABLE_ROWS, 0)
		FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
		WHERE `+where+` ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		t := &Table{byName: map[string]int{}}
		var noEngine bool
		if err := rows.Scan(&t.Schema, &t.Name, &t.Type, &t.Engine, &t.Transactional, &noEngine, &t.Rows); err != nil {
			return err
		}
		// Views have no engine: writes go through to their base table, which
		// decides. (ENGINES lists an engine's TRANSACTIONS; SEQUENCE tables
		// report their underlying engine.)
		t.Transactional = t.Transactional || noEngine
		l.byKey[tableKey{t.Schema, t.Name}] = t
		l.order = append(l.order, t)
	}
	return rows.Err()
}

func loadColumns(ctx context.Context, q Querier, sc scope, l *loaded) error {
	where, args := sc.where("TABLE_SCHEMA", "TABLE_NAME")
	rows, err := q.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
			COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, ''), EXTRA,
			COALESCE(DATETIME_PRECISION, 0), COALESCE(CHARACTER_OCTET_LENGTH, 0),
			COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0)
		FROM information_schema.COLUMNS WHERE `+where+`
		ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s, n string
		var c Column
		var nullable, extra string
		if err := rows.Scan(&s, &n, &c.Name, &c.DataType, &c.ColumnType, &nullable, &c.Charset, &c.Collation, &extra,
			&c.DatetimePrecision, &c.MaxBytes, &c.Precision, &c.Scale); err != nil {
			return err
		}
		t := l.get(s, n)
		if t == nil {
			continue // created after the table list was read
		}
		c.DataType = strings.ToLower(c.DataType)
		c.Nullable = nullable == "YES"
		c.Unsigned = strings.Contains(strings.ToLower(c.ColumnType), "unsigned")
		ex := strings.ToUpper(extra)
		c.Generated = strings.Contains(ex, "VIRTUAL") || strings.Contains(ex, "STORED") || strings.Contains(ex, "PERSISTENT")
		c.OnUpdate = strings.Contains(ex, "ON UPDATE")
		c.AutoIncrement = strings.Contains(ex, "AUTO_INCREMENT")
		t.byName[strings.ToLower(c.Name)] = len(t.Columns)
		t.Columns = append(t.Columns, c)
	}
	return rows.Err()
}

func loadIndexes(ctx context.Context, q Querier, sc scope, l *loaded) error {
	where, args := sc.where("TABLE_SCHEMA", "TABLE_NAME")
	rows, err := q.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, INDEX_NAME, NON_UNIQUE = 0, COALESCE(COLUMN_NAME, ''),
			COALESCE(SUB_PART, 0), INDEX_TYPE
		FROM information_schema.STATISTICS WHERE `+where+`
		ORDER BY TABLE_SCHEMA, TABLE_NAME, INDEX_NAME = 'PRIMARY' DESC, INDEX_NAME, SEQ_IN_INDEX`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cur *Index
	var curTable *Table
	for rows.Next() {
		var s, n, name, col, typ string
		var unique bool
		var sub int
		if err := rows.Scan(&s, &n, &name, &unique, &col, &sub, &typ); err != nil {
			return err
		}
		t := l.get(s, n)
		if t == nil {
			continue
		}
		if cur == nil || curTable != t || cur.Name != name {
			t.Indexes = append(t.Indexes, Index{Name: name, Unique: unique, Type: typ})
			cur, curTable = &t.Indexes[len(t.Indexes)-1], t
		}
		pos, ok := t.Column(col)
		if !ok {
			// A functional key part (MySQL), not a column: the index is unique
			// over its column parts and the expression together, so conflict
			// keys over the column parts alone are coarser, never finer; but
			// it cannot order or name rows by columns (see ChunkKey).
			cur.Functional = true
			continue
		}
		cur.Columns = append(cur.Columns, pos)
		cur.Prefix = append(cur.Prefix, sub)
		cur.Nullable = cur.Nullable || t.Columns[pos].Nullable
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range l.order {
		t.indexKeys()
	}
	return nil
}

// indexKeys derives PrimaryKey and UniqueKeys from Indexes.
func (t *Table) indexKeys() {
	t.PrimaryKey, t.UniqueKeys = nil, nil
	for i := range t.Indexes {
		ix := &t.Indexes[i]
		switch {
		case !ix.Unique:
		case ix.Name == "PRIMARY":
			p := *ix
			t.PrimaryKey = &p
		default:
			t.UniqueKeys = append(t.UniqueKeys, *ix)
		}
	}
}

// loadForeignKeys reads the foreign keys of the tables in scope, and those
// that reference them: for one table or under anywhere, from anywhere (a
// cascade into a table of another schema must be known); for a catalog,
// from the tables in scope only (the condition on the referenced schema
// cannot use information_schema's lookup by schema: the server scans every
// schema's tables, information_schema's own included, once per query).
func loadForeignKeys(ctx context.Context, q Querier, sc scope, l *loaded) error {
	where, args := sc.where("k.TABLE_SCHEMA", "k.TABLE_NAME")
	all, err := foreignKeys(ctx, q, where, args)
	if err != nil {
		return err
	}
	for _, f := range all {
		if t := l.get(f.ChildSchema, f.ChildTable); t != nil {
			t.ForeignKeys = append(t.ForeignKeys, f)
		}
	}
	if sc.table != "" || sc.anywhere {
		// The system schemas (the server's own and binlane's) hold no
		// foreign keys into users' tables; leaving them out spares the
		// scan of their ~100 tables (a condition on the child's schema is
		// checked before a table is opened): 9 ms -> 0.3 ms on an idle
		// sandbox, 31 ms during a start.
		where, args := sc.where("k.REFERENCED_TABLE_SCHEMA", "k.REFERENCED_TABLE_NAME")
		notSys, sysArgs := inList("k.TABLE_SCHEMA", "NOT IN", filter.SystemSchemas)
		where, args = where+" AND "+notSys, append(args, sysArgs...)
		if all, err = foreignKeys(ctx, q, where, args); err != nil {
			return err
		}
	}
	for _, f := range all {
		if t := l.get(f.ParentSchema, f.ParentTable); t != nil {
			t.ReferencedBy = append(t.ReferencedBy, f)
		}
	}
	for _, t := range l.order {
		// In a stable order whatever the query's (the signature digests it).
		sort.SliceStable(t.ReferencedBy, func(i, j int) bool {
			a, b := &t.ReferencedBy[i], &t.ReferencedBy[j]
			if a.ChildSchema != b.ChildSchema {
				return a.ChildSchema < b.ChildSchema
			}
			if a.ChildTable != b.ChildTable {
				return a.ChildTable < b.ChildTable
			}
			return a.Name < b.Name
		})
	}
	return nil
}

// foreignKeys reads the foreign keys where selects (their child or their
// parent in scope).
// Their rules come from a second query instead of a join: each of the two
// information_schema tables is then read by its own lookup fields, where
// the join made the server materialize every schema's constraints.
func foreignKeys(ctx context.Context, q Querier, where string, args []any) ([]ForeignKey, error) {
	rows, err := q.QueryContext(ctx, `SELECT k.CONSTRAINT_SCHEMA, k.CONSTRAINT_NAME, k.TABLE_SCHEMA, k.TABLE_NAME, k.COLUMN_NAME,
			k.REFERENCED_TABLE_SCHEMA, k.REFERENCED_TABLE_NAME, k.REFERENCED_COLUMN_NAME
		FROM information_schema.KEY_COLUMN_USAGE k
		WHERE k.REFERENCED_TABLE_NAME IS NOT NULL AND `+where+`
		ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`, args...)
	if err != nil {
		return nil, err
	}
	var all []ForeignKey
	var inSchemas []string // the constraints' schemas, for their rules
	for rows.Next() {
		var f ForeignKey
		var cs, col, pcol string
		if err := rows.Scan(&cs, &f.Name, &f.ChildSchema, &f.ChildTable, &col, &f.ParentSchema, &f.ParentTable, &pcol); err != nil {
			rows.Close()
			return nil, err
		}
		if n := len(all); n > 0 && all[n-1].Name == f.Name && all[n-1].ChildTable == f.ChildTable && all[n-1].ChildSchema == f.ChildSchema {
			all[n-1].ChildColumns = append(all[n-1].ChildColumns, col)
			all[n-1].ParentColumns = append(all[n-1].ParentColumns, pcol)
			continue
		}
		f.ChildColumns, f.ParentColumns = []string{col}, []string{pcol}
		all = append(all, f)
		if !slices.Contains(inSchemas, cs) {
			inSchemas = append(inSchemas, cs)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(all) == 0 {
		return nil, err
	}
	type ruleKey struct{ schema, table, name string }
	rules := map[ruleKey][2]string{}
	where, args = scope{schemas: inSchemas}.where("CONSTRAINT_SCHEMA", "TABLE_NAME")
	rows, err = q.QueryContext(ctx, `SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, UPDATE_RULE, DELETE_RULE
		FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE `+where, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var k ruleKey
		var upd, del string
		if err := rows.Scan(&k.schema, &k.table, &k.name, &upd, &del); err != nil {
			return nil, err
		}
		rules[k] = [2]string{upd, del}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range all {
		// A constraint lives in its child table's schema.
		// REFERENTIAL_CONSTRAINTS hides a constraint from an account with no
		// privilege beyond SELECT on the table, KEY_COLUMN_USAGE does not: the
		// key is known, its rules are not.
		r, ok := rules[ruleKey{all[i].ChildSchema, all[i].ChildTable, all[i].Name}]
		all[i].OnUpdate, all[i].OnDelete, all[i].RulesHidden = r[0], r[1], !ok
	}
	return all, nil
}

func loadTriggers(ctx context.Context, q Querier, sc scope, l *loaded) error {
	where, args := sc.where("EVENT_OBJECT_SCHEMA", "EVENT_OBJECT_TABLE")
	// No DISTINCT: its temporary table would hold the materialized rows'
	// long text columns, on disk.
	rows, err := q.QueryContext(ctx, `SELECT EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE
		FROM information_schema.TRIGGERS WHERE `+where, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var s, n string
		if err := rows.Scan(&s, &n); err != nil {
			return err
		}
		if t := l.get(s, n); t != nil {
			t.HasTriggers = true
		}
	}
	return rows.Err()
}

// digest sets the table's Signature: what plans are built from.
func (t *Table) digest() {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%v|%v|%v|%v|%v|%v", t.Engine, t.Columns, t.PrimaryKey, t.UniqueKeys,
		t.ForeignKeys, t.ReferencedBy, t.HasTriggers))
	t.Signature = hex.EncodeToString(sum[:])
}
