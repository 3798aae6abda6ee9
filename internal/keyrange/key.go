// Package keyrange is the key space of a table being copied: the values of
// its chunking key, ordered exactly as the server orders them, ranges of
// them (what a chunk copies), and the set of ranges copied so far
// (Coverage, a table's checkpoint). The copier cuts and reads chunks by it,
// the applier's coverage filter and the scheduler place row changes in it.
//
// The package is pure: it must never talk to a server. It knows no table
// definition and no row image (package schema maps a table's columns to
// Columns, the copier a row image to a Key), so that the scheduler, which
// places row changes in key ranges, stays free of them.
package keyrange

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
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
