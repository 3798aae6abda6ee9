package schema

import (
	"strings"

	"github.com/binlane/binlane/internal/keyrange"
)

// KeyColumn returns how binlane compares the values of a column of a
// chunking key, or false when it cannot order them as the server does
// (see keyrange.Kind).
func KeyColumn(c *Column) (keyrange.Column, bool) {
	k := keyrange.Column{Name: c.Name}
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		k.Kind = keyrange.Int
		if c.Unsigned {
			k.Kind = keyrange.Uint
		}
		return k, true
	case "date", "datetime", "timestamp":
		k.Kind = keyrange.Text
		return k, true
	case "binary", "varbinary":
		k.Kind = keyrange.Bytes
		return k, true
	case "char", "varchar":
		// Byte order equals code point order for these charsets' _bin
		// collations; _nopad_bin collations count trailing spaces.
		coll := strings.ToLower(c.Collation)
		for _, cs := range []string{"utf8mb4_", "utf8mb3_", "utf8_", "latin1_", "ascii_"} {
			if strings.HasPrefix(coll, cs) && strings.HasSuffix(coll, "_bin") {
				k.Kind, k.PadSpace, k.Charset = keyrange.Bytes, !strings.Contains(coll, "_nopad_"), c.Charset
				return k, true
			}
		}
	}
	return keyrange.Column{}, false
}

// CopyKey returns the index the copy cuts the table into ranges by: its
// chunking key among the indexes whose columns binlane can order itself
// (KeyColumn; no generated columns); nil: none, the table is copied in one
// pass.
func (t *Table) CopyKey() *Index {
	return t.ChunkKeyBy(func(c *Column) bool {
		_, ok := KeyColumn(c)
		return ok && !c.Generated
	})
}

// CopyKeyColumns returns the chunking key of the table as the index ix
// names it, or why binlane cannot use that index to cut the table into
// ranges.
func (t *Table) CopyKeyColumns(ix *Index) ([]keyrange.Column, string) {
	if ix == nil {
		return nil, "it has no primary or unique key without NULLs, generated columns and types binlane cannot order as the server does (a case-insensitive string, a float, ...)"
	}
	cols := make([]keyrange.Column, len(ix.Columns))
	for i, pos := range ix.Columns {
		c := &t.Columns[pos]
		if c.Generated {
			return nil, "its key holds a generated column"
		}
		k, ok := KeyColumn(c)
		if !ok {
			return nil, "its key is of types binlane cannot order as the server does (a case-insensitive string, a float, ...)"
		}
		cols[i] = k
	}
	return cols, ""
}
