// Package filter decides which tables a command works on, from the
// --databases, --tables and --exclude options shared by replicate and
// verify. Patterns may use shell wildcards (* ? [...]).
//
// The package is pure logic; it must never talk to a server.
package filter

import (
	"fmt"
	"path"
	"strings"
)

// SystemSchemas are never replicated or verified.
var SystemSchemas = []string{"mysql", "information_schema", "performance_schema", "sys", "binlane"}

// Rules selects tables. An empty Databases and Tables selects every
// non-system table; Exclude always wins.
type Rules struct {
	Databases []string // schema patterns
	Tables    []string // "schema.table" patterns
	Exclude   []string // "schema" or "schema.table" patterns
}

// New validates and builds rules from comma-separated option values.
func New(databases, tables, exclude []string) (Rules, error) {
	r := Rules{Databases: clean(databases), Tables: clean(tables), Exclude: clean(exclude)}
	for _, p := range append(append([]string{}, r.Databases...), r.Exclude...) {
		if _, err := path.Match(p, ""); err != nil {
			return Rules{}, fmt.Errorf("bad pattern %q: %w", p, err)
		}
	}
	for _, p := range r.Tables {
		if !strings.Contains(p, ".") {
			return Rules{}, fmt.Errorf("table pattern %q: want schema.table", p)
		}
		if _, err := path.Match(p, ""); err != nil {
			return Rules{}, fmt.Errorf("bad pattern %q: %w", p, err)
		}
	}
	return r, nil
}

func clean(in []string) []string {
	var out []string
	for _, s := range in {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// IsSystem reports whether schema is one binlane never copies.
func IsSystem(schema string) bool {
	for _, s := range SystemSchemas {
		if strings.EqualFold(s, schema) {
			return true
		}
	}
	return false
}

// Match reports whether the table is selected.
func (r Rules) Match(schema, table string) bool {
	if IsSystem(schema) {
		return false
	}
	full := schema + "." + table
	for _, p := range r.Exclude {
		if match(p, schema) || match(p, full) {
			return false
		}
	}
	if len(r.Databases) == 0 && len(r.Tables) == 0 {
		return true
	}
	for _, p := range r.Databases {
		if match(p, schema) {
			return true
		}
	}
	for _, p := range r.Tables {
		if match(p, full) {
			return true
		}
	}
	return false
}

// MatchSchema reports whether any table of the schema can be selected
// (for statements such as CREATE DATABASE that name no table).
func (r Rules) MatchSchema(schema string) bool {
	if IsSystem(schema) {
		return false
	}
	for _, p := range r.Exclude {
		if match(p, schema) {
			return false
		}
	}
	if len(r.Databases) == 0 && len(r.Tables) == 0 {
		return true
	}
	for _, p := range r.Databases {
		if match(p, schema) {
			return true
		}
	}
	for _, p := range r.Tables {
		if s, _, _ := strings.Cut(p, "."); match(s, schema) {
			return true
		}
	}
	return false
}

// match compares case-sensitively, as schema and table names are on Linux.
func match(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}
