package copier

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Table is one table to copy, as the source defines it.
type Table struct {
	Schema, Name string
	// Def is the source's definition when the copy was listed (nil for a
	// table a resumed copy no longer finds on the source: its DROP is ahead
	// in the stream).
	Def *schema.Table
	// Key is the chunking key (schema.Table.CopyKey) when binlane can
	// order its values as the server does; nil means the table is copied in
	// one pass (no usable key, a key binlane cannot order, or a foreign key
	// to itself or through a cycle).
	Key []keyrange.Column
	// OnePass says why the table is copied in one pass ("" when chunked).
	OnePass string
	// Parents are the selected tables this one references by foreign key:
	// their copy completes before this one's starts, so that every row a
	// chunk references is on the target when the chunk commits.
	Parents []string
	// Rows is the source's estimate (information_schema), for progress.
	Rows int64
	// Create is SHOW CREATE TABLE on the source (a new copy's tables only).
	Create string
	// Build adds the indexes the target's table was created without, once
	// its rows are in (nil: none deferred).
	Build *txn.IndexBuild
	// Pending are the unique keys among Build's, which the target does not
	// enforce until they are built (schema.Cache.SetPending).
	Pending []schema.PendingKey
}

// ID is the table's "schema.table".
func (t *Table) ID() string { return t.Schema + "." + t.Name }

// Quoted is `schema`.`table`.
func (t *Table) Quoted() string { return sqlquote.Qualified(t.Schema, t.Name) }

// ListTables reads the selected base tables of the source (from package
// schema's catalog) with what the copy needs to know of each; with
// definitions, their CREATE TABLE statements too.
func ListTables(ctx context.Context, src schema.Querier, rules filter.Rules, definitions bool) ([]*Table, error) {
	defs, err := schema.ReadCatalog(ctx, src, rules, false)
	if err != nil {
		return nil, fmt.Errorf("read the source's tables: %w", err)
	}
	var out []*Table
	var versioned []string
	for _, d := range defs {
		if d.Type == "SYSTEM VERSIONED" {
			versioned = append(versioned, d.QualifiedName())
			continue
		}
		if d.Type != "BASE TABLE" {
			continue
		}
		t := FromDefinition(d, rules)
		if definitions {
			t.Create, err = schema.ShowCreateTable(ctx, src, d.Schema, d.Name)
			if sqlerr.Is(err, sqlerr.NoSuchTable) {
				continue // dropped since it was listed
			}
			if err != nil {
				return nil, err
			}
		}
		out = append(out, t)
	}
	if len(versioned) > 0 {
		return nil, fmt.Errorf("%w: %s", txn.ErrVersioned, strings.Join(versioned, ", "))
	}
	return out, nil
}

// FromDefinition describes the copy of a table the rules select.
func FromDefinition(d *schema.Table, rules filter.Rules) *Table {
	t := &Table{Schema: d.Schema, Name: d.Name, Def: d, Rows: d.Rows}
	self := false
	for _, fk := range d.ForeignKeys {
		switch p := fk.ParentSchema + "." + fk.ParentTable; {
		case fk.ParentSchema == d.Schema && fk.ParentTable == d.Name:
			self = true
		case rules.Match(fk.ParentSchema, fk.ParentTable) && !containsString(t.Parents, p):
			t.Parents = append(t.Parents, p)
		}
	}
	if self {
		t.OnePass = "it references itself by foreign key"
		return t
	}
	t.Key, t.OnePass = d.CopyKeyColumns(d.CopyKey())
	return t
}

// Neighbours are the tables linked to a table by foreign keys, either way.
func Neighbours(d *schema.Table) []txn.TableName {
	var out []txn.TableName
	add := func(s, t string) {
		n := txn.TableName{Schema: s, Table: t}
		if (s != d.Schema || t != d.Name) && !containsName(out, n) {
			out = append(out, n)
		}
	}
	for _, fk := range d.ForeignKeys {
		add(fk.ParentSchema, fk.ParentTable)
	}
	for _, fk := range d.ReferencedBy {
		add(fk.ChildSchema, fk.ChildTable)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsName(list []txn.TableName, n txn.TableName) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}

// Levels orders tables so that every table comes after the tables it
// references: level 0 references nothing selected, level n only tables of
// lower levels. Tables in a cycle of foreign keys are put together in the
// last level (and copied with foreign key checks off, in one pass).
func Levels(tables []*Table) [][]*Table {
	byID := map[string]*Table{}
	for _, t := range tables {
		byID[t.ID()] = t
	}
	level := map[string]int{}
	var out [][]*Table
	remaining := append([]*Table(nil), tables...)
	for len(remaining) > 0 {
		var next, rest []*Table
		for _, t := range remaining {
			ready := true
			for _, p := range t.Parents {
				if _, done := level[p]; !done && byID[p] != nil {
					ready = false
				}
			}
			if ready {
				next = append(next, t)
			} else {
				rest = append(rest, t)
			}
		}
		if len(next) == 0 { // a cycle
			for _, t := range rest {
				t.OnePass = "it is in a cycle of foreign keys"
				t.Key = nil
			}
			next, rest = rest, nil
		}
		for _, t := range next {
			level[t.ID()] = len(out)
		}
		sort.Slice(next, func(i, j int) bool { return next[i].ID() < next[j].ID() })
		out = append(out, next)
		remaining = rest
	}
	return out
}
