package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/schema"
)

// mapKeys translates the target's unique keys into source column positions
// and picks the key that identifies rows.
func (b *Builder) mapKeys(p *Table) error {
	t := p.Target
	src := make(map[int]int, len(p.Cols)) // target column -> source column
	for i, c := range p.Cols {
		src[c.Target] = i
	}
	toSource := func(ix *schema.Index) ([]int, bool) {
		cols := make([]int, len(ix.Columns))
		for i, tc := range ix.Columns {
			s, ok := src[tc]
			if !ok {
				return nil, false
			}
			cols[i] = s
		}
		return cols, true
	}
	if t.PrimaryKey != nil {
		cols, ok := toSource(t.PrimaryKey)
		if !ok {
			return fmt.Errorf("table %s: a primary key column of the target is not in the source table", p.Name)
		}
		p.Keys = append(p.Keys, Key{Seed: IndexSeed(b.cache.Ident(t.Schema, t.Name), "PRIMARY"), Cols: cols, Prefix: t.PrimaryKey.Prefix, Primary: true})
	}
	for i := range t.UniqueKeys {
		ix := &t.UniqueKeys[i]
		cols, ok := toSource(ix)
		if !ok {
			// A unique key over a column the source does not send: nothing to
			// hash, so serialize the table instead of guessing.
			p.Serialize = SerializeUniqueNotInSource
			continue
		}
		p.Keys = append(p.Keys, Key{Seed: IndexSeed(b.cache.Ident(t.Schema, t.Name), ix.Name), Cols: cols, Prefix: ix.Prefix})
	}
	if rk := t.UsableKey(); rk != nil {
		p.RowKey, _ = toSource(rk)
	}
	return nil
}

// mapForeignKeys records the parent rows a change references and the
// tables a change can cascade into.
func (b *Builder) mapForeignKeys(ctx context.Context, p *Table) error {
	t := p.Target
	for _, fk := range t.ForeignKeys {
		parent, err := b.cache.Get(ctx, fk.ParentSchema, fk.ParentTable)
		if err != nil {
			return fmt.Errorf("table %s: foreign key %s: %w", p.Name, fk.Name, err)
		}
		ref := Parent{ParentTable: TableSeed(b.cache.Ident(fk.ParentSchema, fk.ParentTable))}
		for _, name := range fk.ChildColumns {
			c := -1
			for i := range p.Cols {
				if strings.EqualFold(p.Cols[i].Name, name) {
					c = i
				}
			}
			if c < 0 {
				return fmt.Errorf("table %s: foreign key %s: column %s is not in the source table", p.Name, fk.Name, name)
			}
			ref.Cols = append(ref.Cols, c)
		}
		if parent == nil {
			ref.TableLevel = true
		} else if ix := matchingUnique(parent, fk.ParentColumns); ix == nil {
			ref.TableLevel = true
		} else {
			ref.Seed = IndexSeed(b.cache.Ident(parent.Schema, parent.Name), ix.Name)
			// Order the child columns as the parent index lists them, so the
			// hashes agree.
			ref.Cols = reorder(ref.Cols, fk.ParentColumns, parent, ix)
			// The parent's collations, so the hashes agree; the same lookup
			// as for the parent's own columns (a name missing from byName
			// must not fall back to raw bytes on one side only).
			for i, pc := range ix.Columns {
				pcol := &parent.Columns[pc]
				ref.Colls = append(ref.Colls,
					sourceBytes(b.targetColl(pcol.Collation, pcol.Charset), p.Cols[ref.Cols[i]].Introducer))
			}
		}
		p.Parents = append(p.Parents, ref)
	}
	if err := b.mapChildren(ctx, p); err != nil {
		return err
	}
	cycle, err := b.inCycle(ctx, t, p.TableHash, map[uint64]bool{})
	p.OrderedRows = cycle
	return err
}

// inCycle reports whether the table self (hash) is a child of itself,
// directly or through other tables, by foreign keys of any action. Then
// the order of its rows within one statement matters: InnoDB checks (and
// cascades) row by row, so deleting a parent row before the child row that
// the source deleted first fails with error 1451, or cascades into a row
// the statement deletes next.
func (b *Builder) inCycle(ctx context.Context, t *schema.Table, self uint64, seen map[uint64]bool) (bool, error) {
	for _, fk := range t.ReferencedBy {
		h := TableSeed(b.cache.Ident(fk.ChildSchema, fk.ChildTable))
		if h == self {
			return true, nil
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		child, err := b.cache.Get(ctx, fk.ChildSchema, fk.ChildTable)
		if err != nil {
			return false, err
		}
		if child == nil {
			continue
		}
		if found, err := b.inCycle(ctx, child, self, seen); found || err != nil {
			return found, err
		}
	}
	return false, nil
}

// matchingUnique finds the parent's primary or unique key made of exactly
// the referenced columns (in any order), without prefixes.
func matchingUnique(t *schema.Table, cols []string) *schema.Index {
	try := func(ix *schema.Index) bool {
		if ix == nil || len(ix.Columns) != len(cols) || hasPrefixPart(ix) {
			return false
		}
		for _, c := range ix.Columns {
			found := false
			for _, name := range cols {
				if strings.EqualFold(t.Columns[c].Name, name) {
					found = true
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	if try(t.PrimaryKey) {
		return t.PrimaryKey
	}
	for i := range t.UniqueKeys {
		if try(&t.UniqueKeys[i]) {
			return &t.UniqueKeys[i]
		}
	}
	return nil
}

func hasPrefixPart(ix *schema.Index) bool {
	for _, p := range ix.Prefix {
		if p != 0 {
			return true
		}
	}
	return false
}

// reorder arranges child columns (paired with parentCols) in the order of
// the parent index's columns.
func reorder(child []int, parentCols []string, parent *schema.Table, ix *schema.Index) []int {
	out := make([]int, 0, len(child))
	for _, pc := range ix.Columns {
		for j, name := range parentCols {
			if strings.EqualFold(parent.Columns[pc].Name, name) {
				out = append(out, child[j])
			}
		}
	}
	return out
}
