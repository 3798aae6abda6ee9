package keyrange

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Coverage is the part of a table's key space that has been copied: sorted,
// disjoint ranges. Chunks of one table finish in any order, so it is a set
// of ranges, not a cursor; what it records is what committed, never what
// is being read.
type Coverage struct {
	Cols   []Column
	Ranges []Range
	// All is set once the whole table is copied.
	All bool
}

// Add records a copied range, merging it with its neighbours.
func (c *Coverage) Add(r Range) {
	if c.All {
		return
	}
	if r.Lo == nil && r.Hi == nil {
		c.All, c.Ranges = true, nil
		return
	}
	// Insert in order of Lo (nil first), then merge touching ranges.
	at := sort.Search(len(c.Ranges), func(i int) bool { return c.lessLo(r.Lo, c.Ranges[i].Lo) })
	c.Ranges = append(c.Ranges, Range{})
	copy(c.Ranges[at+1:], c.Ranges[at:])
	c.Ranges[at] = r
	merged := c.Ranges[:1]
	for _, x := range c.Ranges[1:] {
		last := &merged[len(merged)-1]
		if last.Hi == nil || x.Lo != nil && Compare(c.Cols, x.Lo, last.Hi) <= 0 {
			if last.Hi != nil && (x.Hi == nil || Compare(c.Cols, x.Hi, last.Hi) > 0) {
				last.Hi = x.Hi
			}
			continue
		}
		merged = append(merged, x)
	}
	c.Ranges = merged
	if len(c.Ranges) == 1 && c.Ranges[0].Lo == nil && c.Ranges[0].Hi == nil {
		c.All, c.Ranges = true, nil
	}
}

// lessLo orders lower bounds, nil (unbounded) first.
func (c *Coverage) lessLo(a, b Key) bool {
	switch {
	case a == nil:
		return b != nil
	case b == nil:
		return false
	}
	return Compare(c.Cols, a, b) < 0
}

// Contains reports whether a key has been copied.
func (c *Coverage) Contains(k Key) bool {
	if c.All {
		return true
	}
	// The last range whose Lo is below k is the only candidate.
	i := sort.Search(len(c.Ranges), func(i int) bool { return c.Ranges[i].Lo != nil && Compare(c.Cols, c.Ranges[i].Lo, k) >= 0 })
	return i > 0 && c.Ranges[i-1].Contains(c.Cols, k)
}

// Gaps returns the ranges not copied yet, in key order.
func (c *Coverage) Gaps() []Range {
	if c.All {
		return nil
	}
	var out []Range
	var lo Key
	first := true
	for _, r := range c.Ranges {
		if !(first && r.Lo == nil) {
			out = append(out, Range{Lo: lo, Hi: r.Lo})
		}
		first = false
		lo = r.Hi
		if r.Hi == nil {
			return out
		}
	}
	return append(out, Range{Lo: lo})
}

// encoded is the checkpoint form: each key value as a number or as hex
// bytes (kept in JSON in binlane.copy).
type encoded struct {
	All    bool       `json:"all,omitempty"`
	Cols   []Column   `json:"cols,omitempty"`
	Ranges [][2][]any `json:"ranges,omitempty"`
}

// MarshalJSON writes the checkpoint form.
func (c *Coverage) MarshalJSON() ([]byte, error) {
	e := encoded{All: c.All, Cols: c.Cols}
	for _, r := range c.Ranges {
		e.Ranges = append(e.Ranges, [2][]any{encodeKey(r.Lo), encodeKey(r.Hi)})
	}
	return json.Marshal(e)
}

// UnmarshalJSON reads the checkpoint form. When Cols is set (the table's
// key now), the checkpoint's key must be the same.
func (c *Coverage) UnmarshalJSON(b []byte) error {
	var e encoded
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	if c.Cols == nil {
		c.Cols = e.Cols
	} else if e.Cols != nil && !Same(c.Cols, e.Cols) {
		return fmt.Errorf("the checkpoint's key (%s) is not the table's key (%s)", keyNames(e.Cols), keyNames(c.Cols))
	}
	c.All, c.Ranges = e.All, nil
	for _, r := range e.Ranges {
		lo, err := c.decodeKey(r[0])
		if err != nil {
			return err
		}
		hi, err := c.decodeKey(r[1])
		if err != nil {
			return err
		}
		c.Ranges = append(c.Ranges, Range{Lo: lo, Hi: hi})
	}
	return nil
}

func encodeKey(k Key) []any {
	if k == nil {
		return nil
	}
	out := make([]any, len(k))
	for i, v := range k {
		switch x := v.(type) {
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		case uint64:
			out[i] = strconv.FormatUint(x, 10)
		case []byte:
			out[i] = fmt.Sprintf("x%x", x)
		}
	}
	return out
}

func (c *Coverage) decodeKey(vals []any) (Key, error) {
	if vals == nil {
		return nil, nil
	}
	if len(vals) != len(c.Cols) {
		return nil, fmt.Errorf("checkpoint key of %d columns, the table's key has %d", len(vals), len(c.Cols))
	}
	k := make(Key, len(vals))
	for i, v := range vals {
		s, _ := v.(string)
		var err error
		switch c.Cols[i].Kind {
		case Int:
			k[i], err = strconv.ParseInt(s, 10, 64)
		case Uint:
			k[i], err = strconv.ParseUint(s, 10, 64)
		default:
			var b []byte
			if len(s) == 0 || s[0] != 'x' {
				return nil, fmt.Errorf("checkpoint key value %q", s)
			}
			_, err = fmt.Sscanf(s[1:], "%x", &b)
			if s == "x" {
				b, err = []byte{}, nil
			}
			k[i] = b
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint key value %q: %w", s, err)
		}
	}
	return k, nil
}

func keyNames(cols []Column) string {
	names := make([]string, len(cols))
	for i, k := range cols {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}
