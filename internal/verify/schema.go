package verify

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// tableID names a table.
type tableID struct{ Schema, Name string }

func (id tableID) String() string { return id.Schema + "." + id.Name }

func (id tableID) quoted() string { return sqlquote.Name(id.Schema) + "." + sqlquote.Name(id.Name) }

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
	// key is the index that chunks the table (schema.Table.ChunkKey): nil
	// compares it whole, as a multiset of rows.
	key *index
}

// catalog holds the selected base tables of one server.
type catalog map[tableID]*tableDef

// readCatalog reads the base tables the rules select, with their columns
// and unique indexes, from package schema (system-versioned tables count as
// base tables; views and sequences do not).
func readCatalog(ctx context.Context, conn *sql.Conn, rules filter.Rules) (catalog, error) {
	tables, err := schema.ReadCatalog(ctx, conn, rules, false)
	if err != nil {
		return nil, err
	}
	cat := catalog{}
	for _, t := range tables {
		if !t.IsBase() {
			continue
		}
		d := &tableDef{ID: tableID{t.Schema, t.Name}}
		for _, c := range t.Columns {
			d.Columns = append(d.Columns, column{Name: c.Name, DataType: c.DataType, Type: c.ColumnType, Charset: c.Charset,
				Collation: c.Collation, Nullable: c.Nullable, Precision: c.Precision, Scale: c.Scale})
		}
		key := t.ChunkKey()
		for i := range t.Indexes {
			ix := &t.Indexes[i]
			if !ix.Unique {
				continue
			}
			prefix := false
			for _, p := range ix.Prefix {
				prefix = prefix || p != 0
			}
			d.Unique = append(d.Unique, index{Name: ix.Name, Columns: t.ColumnNames(ix), Prefix: prefix,
				BTree: strings.EqualFold(ix.Type, "BTREE") && !ix.Functional})
			if ix == key {
				d.key = &d.Unique[len(d.Unique)-1]
			}
		}
		cat[d.ID] = d
	}
	return cat, nil
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
	s := sqlquote.Name(c.Name) + " " + c.Type
	if c.Collation != "" {
		s += " COLLATE " + c.Collation
	}
	return s
}
