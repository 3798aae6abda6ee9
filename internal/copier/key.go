package copier

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
)

// KeyKind says how binlane compares the values of one column of a chunking
// key. Ranges of a table are cut and looked up along its key, so binlane
// must order key values exactly as the server does: only column types whose
// order it can reproduce byte for byte are chunked; a table keyed on
// anything else (a case-insensitive string, a float) is copied in one
// pass.
type KeyKind uint8

const (
	// KeyInt and KeyUint are integer columns (YEAR too).
	KeyInt KeyKind = iota + 1
	KeyUint
	// KeyBytes compares bytes: binary strings, and strings in a _bin
	// collation whose charset sorts by code point in byte order
	// (PadSpace: trailing spaces do not count).
	KeyBytes
	// KeyText compares canonical text: DATE, DATETIME and TIMESTAMP, whose
	// text at a fixed precision sorts like the values.
	KeyText
)

// KeyColumn is one column of a chunking key.
type KeyColumn struct {
	Name     string
	Kind     KeyKind
	PadSpace bool // KeyBytes: trailing spaces are ignored in comparisons
}

// KeyKindOf returns how a column can be compared, or false when binlane
// cannot order its values as the server does. dataType, columnType and
// collation are information_schema's (lower-case type name, full type,
// collation name or "").
func KeyKindOf(dataType, columnType, collation string) (KeyColumn, bool) {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "year":
		if strings.Contains(columnType, "unsigned") {
			return KeyColumn{Kind: KeyUint}, true
		}
		return KeyColumn{Kind: KeyInt}, true
	case "date", "datetime", "timestamp":
		return KeyColumn{Kind: KeyText}, true
	case "binary", "varbinary":
		return KeyColumn{Kind: KeyBytes}, true
	case "char", "varchar":
		// Byte order equals code point order for these charsets' _bin
		// collations; _nopad_bin collations count trailing spaces.
		for _, cs := range []string{"utf8mb4_", "utf8mb3_", "utf8_", "latin1_", "ascii_"} {
			if strings.HasPrefix(collation, cs) && strings.HasSuffix(collation, "_bin") {
				return KeyColumn{Kind: KeyBytes, PadSpace: !strings.Contains(collation, "_nopad_")}, true
			}
		}
	}
	return KeyColumn{}, false
}

// Key is a value of a chunking key: one entry per column, int64 (KeyInt),
// uint64 (KeyUint) or []byte (KeyBytes, KeyText).
type Key []any

// FromSQL converts a key value read through the binary protocol.
func FromSQL(cols []KeyColumn, vals []any) (Key, error) {
	k := make(Key, len(cols))
	for i, c := range cols {
		v, err := sqlValue(c, vals[i])
		if err != nil {
			return nil, fmt.Errorf("key column %s: %w", c.Name, err)
		}
		k[i] = v
	}
	return k, nil
}

func sqlValue(c KeyColumn, v any) (any, error) {
	switch c.Kind {
	case KeyInt, KeyUint:
		switch x := v.(type) {
		case int64:
			if c.Kind == KeyUint {
				return uint64(x), nil
			}
			return x, nil
		case uint64:
			if c.Kind == KeyInt {
				return int64(x), nil
			}
			return x, nil
		case []byte:
			if c.Kind == KeyUint {
				return strconv.ParseUint(string(x), 10, 64)
			}
			return strconv.ParseInt(string(x), 10, 64)
		}
	case KeyBytes, KeyText:
		switch x := v.(type) {
		case []byte:
			return bytes.Clone(x), nil
		case string:
			return []byte(x), nil
		}
	}
	return nil, fmt.Errorf("unexpected %T value", v)
}

// FromRow extracts the key of a row image (cols are the key's positions in
// the row).
func FromRow(cols []KeyColumn, row []binlog.Value, pos []int) (Key, bool) {
	k := make(Key, len(cols))
	for i, c := range cols {
		v := &row[pos[i]]
		switch {
		case v.Kind == binlog.KindNull:
			return nil, false // a key without NULLs never holds one
		case c.Kind == KeyInt:
			k[i] = v.N
		case c.Kind == KeyUint:
			k[i] = uint64(v.N)
		case c.Kind == KeyText:
			k[i] = v.AppendText(nil)
		default:
			k[i] = v.B
		}
	}
	return k, true
}

// Compare orders two keys as the server does: -1, 0 or 1.
func Compare(cols []KeyColumn, a, b Key) int {
	for i, c := range cols {
		if r := compareOne(c, a[i], b[i]); r != 0 {
			return r
		}
	}
	return 0
}

func compareOne(c KeyColumn, a, b any) int {
	switch c.Kind {
	case KeyInt:
		return cmp3(a.(int64) < b.(int64), a.(int64) > b.(int64))
	case KeyUint:
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
func (r Range) Contains(cols []KeyColumn, k Key) bool {
	return (r.Lo == nil || Compare(cols, r.Lo, k) < 0) && (r.Hi == nil || Compare(cols, k, r.Hi) <= 0)
}

// SameKey reports whether two chunking keys are the same columns, compared
// the same way.
func SameKey(a, b []KeyColumn) bool {
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
