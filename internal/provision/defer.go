package provision

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/schema"
)

// Index is a secondary index a copy deferred: created after the table's
// rows are in.
type Index struct {
	Name   string `json:"name"`
	Unique bool   `json:"unique,omitempty"`
	// Columns and Prefix are the key parts (Prefix 0: the whole column).
	Columns []string `json:"columns"`
	Prefix  []int    `json:"prefix"`
	// Definition is the index as SHOW CREATE TABLE writes it ("KEY `k`
	// (`c`)"), which ALTER TABLE ... ADD takes back as it is.
	Definition string `json:"definition"`
}

// Split returns a table's CREATE TABLE statement (as SHOW CREATE TABLE
// writes it) without the secondary indexes a copy can build after the
// rows are in, and those indexes, in the order the statement lists them.
//
// Built that way, the table's definition ends exactly as the source's:
// the server keeps a table's indexes in the order SHOW CREATE TABLE shows
// (the primary key, unique keys without NULLs, other unique keys, plain
// keys, full-text keys; the order of definition within each class), and
// an ALTER TABLE that adds keys puts them after the existing ones before
// it sorts them the same way. So only a tail of that list is deferred: the
// indexes after the last one that must stay. Those that must stay:
//   - the primary key, the key that names rows when there is none (a
//     unique key without NULLs) and the key that chunks the copy (keys
//     the copy's reads and the applier's lookups use);
//   - an index a foreign key needs, on either side (InnoDB would create
//     its own for a child, and refuses to drop one a constraint uses);
//   - the index that holds the AUTO_INCREMENT column first (a table cannot
//     be created without it);
//   - indexes that are not plain B-trees over columns (full-text, spatial,
//     MariaDB's long unique keys USING HASH, expressions, periods
//     WITHOUT OVERLAPS): their builds are not worth the special cases.
//
// t is the table's definition from the same server (package schema).
func Split(create string, t *schema.Table) (string, []Index) {
	lines := strings.Split(create, "\n")
	type keyLine struct {
		at    int
		index *schema.Index
		later bool
	}
	var keys []keyLine
	for i, l := range lines {
		name, ok := keyName(l)
		if !ok {
			continue
		}
		ix := t.IndexByName(name)
		keys = append(keys, keyLine{at: i, index: ix, later: ix != nil && deferrable(t, ix, l)})
	}
	// The deferred tail: after the last index that stays.
	first := len(keys)
	for first > 0 && keys[first-1].later {
		first--
	}
	if first == len(keys) {
		return create, nil
	}
	// The deferred keys are consecutive lines (SHOW CREATE TABLE lists all
	// keys together), followed by constraints or by the closing
	// parenthesis; before that one, the line left last loses its comma.
	var out []Index
	from, to := keys[first].at, keys[len(keys)-1].at
	for _, k := range keys[first:] {
		def := strings.TrimSuffix(strings.TrimSpace(lines[k.at]), ",")
		out = append(out, Index{Name: k.index.Name, Unique: k.index.Unique, Columns: t.ColumnNames(k.index),
			Prefix: slices.Clone(k.index.Prefix), Definition: def})
	}
	kept := append(slices.Clone(lines[:from]), lines[to+1:]...)
	if to+1 < len(lines) && strings.HasPrefix(lines[to+1], ")") && from > 0 {
		kept[from-1] = strings.TrimSuffix(kept[from-1], ",")
	}
	return strings.Join(kept, "\n"), out
}

// keyName returns the name of the index a line of SHOW CREATE TABLE
// defines, if it defines one.
func keyName(line string) (string, bool) {
	if strings.HasPrefix(line, "  PRIMARY KEY ") {
		return "PRIMARY", true
	}
	var rest string
	ok := false
	for _, p := range []string{"  UNIQUE KEY `", "  KEY `", "  FULLTEXT KEY `", "  SPATIAL KEY `"} {
		if rest, ok = strings.CutPrefix(line, p); ok {
			break
		}
	}
	if !ok {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(rest); i++ {
		if rest[i] != '`' {
			b.WriteByte(rest[i])
			continue
		}
		if i+1 < len(rest) && rest[i+1] == '`' { // a doubled backtick
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), true
	}
	return "", false
}

// deferrable reports whether an index may be built after the copy (see
// Split); line is its SHOW CREATE TABLE line.
func deferrable(t *schema.Table, ix *schema.Index, line string) bool {
	if ix.Name == "PRIMARY" || ix.Functional || strings.HasPrefix(line, "  FULLTEXT") || strings.HasPrefix(line, "  SPATIAL") || !strings.EqualFold(ix.Type, "BTREE") || len(ix.Columns) == 0 ||
		strings.Contains(line, " WITHOUT OVERLAPS") || strings.Contains(line, " USING HASH") {
		return false
	}
	if k := t.UsableKey(); k != nil && k.Name == ix.Name {
		return false
	}
	if k := t.CopyKey(); k != nil && k.Name == ix.Name { // the copy's ranges
		return false
	}
	if t.Columns[ix.Columns[0]].AutoIncrement {
		return false
	}
	names := t.ColumnNames(ix)
	for _, fk := range t.ForeignKeys {
		if leads(names, fk.ChildColumns) {
			return false
		}
	}
	for _, fk := range t.ReferencedBy {
		if leads(names, fk.ParentColumns) {
			return false
		}
	}
	return true
}

// leads reports whether cols are the first columns of an index (in any
// order: InnoDB's own rule is stricter, so this keeps at least the index it
// uses).
func leads(index, cols []string) bool {
	if len(cols) > len(index) {
		return false
	}
	for _, c := range cols {
		found := false
		for _, n := range index[:len(cols)] {
			found = found || strings.EqualFold(n, c)
		}
		if !found {
			return false
		}
	}
	return true
}

// Encode is the checkpoint form of a table's deferred indexes (kept in
// binlane.copy until they are built); "" for none.
func Encode(ixs []Index) string {
	if len(ixs) == 0 {
		return ""
	}
	b, _ := json.Marshal(ixs) // strings and ints: cannot fail
	return string(b)
}

// Decode reads Encode's form.
func Decode(s string) ([]Index, error) {
	if s == "" {
		return nil, nil
	}
	var ixs []Index
	if err := json.Unmarshal([]byte(s), &ixs); err != nil {
		return nil, fmt.Errorf("the deferred indexes %q: %w", s, err)
	}
	return ixs, nil
}

// PendingKeys returns the unique ones among deferred indexes, as the
// target's schema cache lists them until they are built
// (schema.Cache.SetPending).
func PendingKeys(ixs []Index) []schema.PendingKey {
	var out []schema.PendingKey
	for _, ix := range ixs {
		if ix.Unique {
			out = append(out, schema.PendingKey{Name: ix.Name, Columns: ix.Columns, Prefix: ix.Prefix})
		}
	}
	return out
}
