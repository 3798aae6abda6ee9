// Package keyrange is the key space of a table being copied: the values of
// its chunking key, ordered exactly as the server orders them, ranges of
// them (what a chunk copies), and the set of ranges copied so far
// (Coverage, a table's checkpoint). The copier cuts and reads chunks by it,
// the applier's coverage filter and the scheduler place row changes in it.
//
// The package is pure: it must never talk to a server.
package keyrange

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
)

// Kind says how binlane compares the values of one column of a chunking
// key. Ranges of a table are cut and looked up along its key, so binlane
// must order key values exactly as the server does: only column types whose
// order it can reproduce byte for byte are chunked; a table keyed on
// anything else (a case-insensitive string, a float) is copied in one
// pass.
type Kind uint8

const (
	// Int and Uint are integer columns (YEAR too).
	Int Kind = iota + 1
	Uint
	// Bytes compares bytes: binary strings, and strings in a _bin
	// collation whose charset sorts by code point in byte order
	// (PadSpace: trailing spaces do not count).
	Bytes
	// Text compares canonical text: DATE, DATETIME and TIMESTAMP, whose
	// text at a fixed precision sorts like the values.
	Text
)

// Column is one column of a chunking key.
type Column struct {
	Name     string
	Kind     Kind
	PadSpace bool // Bytes: trailing spaces are ignored in comparisons
	// Charset is a character column's character set (Bytes); "" for
	// binary strings and every other type. A bound is written as a string
	// in it (see AppendLiteral).
	Charset string `json:",omitempty"`
}

// KindOf returns how a column can be compared, or false when binlane
// cannot order its values as the server does.
func KindOf(c *schema.Column) (Column, bool) {
	k := Column{Name: c.Name}
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		k.Kind = Int
		if c.Unsigned {
			k.Kind = Uint
		}
		return k, true
	case "date", "datetime", "timestamp":
		k.Kind = Text
		return k, true
	case "binary", "varbinary":
		k.Kind = Bytes
		return k, true
	case "char", "varchar":
		// Byte order equals code point order for these charsets' _bin
		// collations; _nopad_bin collations count trailing spaces.
		coll := strings.ToLower(c.Collation)
		for _, cs := range []string{"utf8mb4_", "utf8mb3_", "utf8_", "latin1_", "ascii_"} {
			if strings.HasPrefix(coll, cs) && strings.HasSuffix(coll, "_bin") {
				k.Kind, k.PadSpace, k.Charset = Bytes, !strings.Contains(coll, "_nopad_"), c.Charset
				return k, true
			}
		}
	}
	return Column{}, false
}

// ChunkKey returns the index the copy cuts a table into ranges by: the
// table's chunking key among the indexes whose columns binlane can order
// itself (KindOf; no generated columns); nil: none, the table is copied in
// one pass.
func ChunkKey(t *schema.Table) *schema.Index {
	return t.ChunkKeyBy(func(c *schema.Column) bool {
		_, ok := KindOf(c)
		return ok && !c.Generated
	})
}

// Columns returns the chunking key of a table as an index of it names it,
// or why binlane cannot use that index to cut the table into ranges.
func Columns(t *schema.Table, ix *schema.Index) ([]Column, string) {
	if ix == nil {
		return nil, "it has no primary or unique key without NULLs, generated columns and types binlane cannot order as the server does (a case-insensitive string, a float, ...)"
	}
	cols := make([]Column, len(ix.Columns))
	for i, pos := range ix.Columns {
		c := &t.Columns[pos]
		if c.Generated {
			return nil, "its key holds a generated column"
		}
		k, ok := KindOf(c)
		if !ok {
			return nil, "its key is of types binlane cannot order as the server does (a case-insensitive string, a float, ...)"
		}
		cols[i] = k
	}
	return cols, ""
}

// Key is a value of a chunking key: one entry per column, int64 (Int),
// uint64 (Uint) or []byte (Bytes, Text).
type Key []any

// FromText converts a key value read as text (the values of a chunk's
// rows: character_set_results binary, so a string is its stored bytes).
func FromText(cols []Column, vals [][]byte) (Key, error) {
	k := make(Key, len(cols))
	for i, c := range cols {
		if vals[i] == nil {
			return nil, fmt.Errorf("key column %s is NULL", c.Name)
		}
		v, err := textValue(c, vals[i])
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", c.Name, err)
		}
		k[i] = v
	}
	return k, nil
}

// AppendLiteral appends the i-th value of k as an SQL literal that the
// server compares with the key column as it compares two values of the
// column: a number; a date as its text; a string of a character column as
// hex bytes with the column's character set (_utf8mb4 X'...'): a literal
// is coercible, so the column's own collation decides the comparison,
// PAD SPACE included, as it does for a bound parameter; a binary string as
// hex bytes.
func AppendLiteral(buf []byte, c Column, v any) []byte {
	switch x := v.(type) {
	case int64:
		return strconv.AppendInt(buf, x, 10)
	case uint64:
		return strconv.AppendUint(buf, x, 10)
	case []byte:
		if c.Kind == Text {
			// Digits, '-', ':', '.' and ' ' only (the server's own text).
			buf = append(buf, '\'')
			buf = append(buf, x...)
			return append(buf, '\'')
		}
		if c.Charset != "" {
			buf = append(buf, '_')
			buf = append(buf, c.Charset...)
			buf = append(buf, ' ')
		}
		buf = append(buf, "X'"...)
		buf = hex.AppendEncode(buf, x)
		return append(buf, '\'')
	}
	panic(fmt.Sprintf("keyrange: a %T key value", v))
}

// textValue converts one key value read as text.
func textValue(c Column, x []byte) (any, error) {
	switch c.Kind {
	case Int:
		return strconv.ParseInt(string(x), 10, 64)
	case Uint:
		return strconv.ParseUint(string(x), 10, 64)
	case Bytes, Text:
		return bytes.Clone(x), nil
	}
	return nil, fmt.Errorf("a key column of kind %v", c.Kind)
}

// FromRow extracts the key of a row image (cols are the key's positions in
// the row).
func FromRow(cols []Column, row []binlog.Value, pos []int) (Key, bool) {
	k := make(Key, len(cols))
	for i, c := range cols {
		v := &row[pos[i]]
		switch {
		case v.Kind == binlog.KindNull:
			return nil, false // a key without NULLs never holds one
		case c.Kind == Int:
			k[i] = v.N
		case c.Kind == Uint:
			k[i] = uint64(v.N)
		case c.Kind == Text:
			k[i] = v.AppendText(nil)
		default:
			k[i] = v.B
		}
	}
	return k, true
}

// Compare orders two keys as the server does: -1, 0 or 1.
func Compare(cols []Column, a, b Key) int {
	for i, c := range cols {
		if r := compareOne(c, a[i], b[i]); r != 0 {
			return r
		}
	}
	return 0
}

func compareOne(c Column, a, b any) int {
	switch c.Kind {
	case Int:
		return cmp3(a.(int64) < b.(int64), a.(int64) > b.(int64))
	case Uint:
		return cmp3(a.(uint64) < b.(uint64), a.(uint64) > b.(uint64))
	}
	x, y := a.([]byte), b.([]byte)
	if c.PadSpace {
		x, y = bytes.TrimRight(x, " "), bytes.TrimRight(y, " ")
	}
	return bytes.Compare(x, y)
}

func cmp3(less, more bool) int {
	switch {
	case less:
		return -1
	case more:
		return 1
	}
	return 0
}

// Range is the keys k with Lo < k <= Hi; a nil Lo is unbounded below, a nil
// Hi above.
type Range struct {
	Lo, Hi Key
}

// Contains reports whether k falls in r.
func (r Range) Contains(cols []Column, k Key) bool {
	return (r.Lo == nil || Compare(cols, r.Lo, k) < 0) && (r.Hi == nil || Compare(cols, k, r.Hi) <= 0)
}

// Same reports whether two chunking keys are the same columns, compared
// the same way.
func Same(a, b []Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !strings.EqualFold(a[i].Name, b[i].Name) || a[i].Kind != b[i].Kind || a[i].PadSpace != b[i].PadSpace {
			return false
		}
	}
	return true
}
