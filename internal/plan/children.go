package plan

import (
	"context"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Action is what a foreign key does to its child rows when their parent
// row is deleted, or its referenced columns change.
type Action uint8

// The actions (RESTRICT and NO ACTION are one for InnoDB: the change fails
// if child rows exist, so when it succeeded on the source it changed no
// child row).
const (
	NoAction Action = iota
	Cascade
	SetNull
	SetDefault
)

// actions returns what a foreign key does on delete and on update. Rules
// the server hid from binlane's account are taken as the worst, SET
// DEFAULT: child rows nobody can name change (fail closed).
func actions(fk schema.ForeignKey) (onDelete, onUpdate Action) {
	if fk.RulesHidden {
		return SetDefault, SetDefault
	}
	return action(fk.OnDelete), action(fk.OnUpdate)
}

func action(rule string) Action {
	switch strings.ToUpper(rule) {
	case "CASCADE":
		return Cascade
	case "SET NULL":
		return SetNull
	case "SET DEFAULT":
		return SetDefault
	}
	return NoAction
}

// Child is a foreign key in which this table is the parent: what the target
// does by itself to the child's rows when a row here is deleted or its
// referenced columns change. The binlog has the parent's change, never the
// child rows it cascades into (see package writeset for what follows).
type Child struct {
	Table uint64 // the child table's identity (TableSeed)
	Name  string // `schema`.`table` of the child, for messages
	// Cols are this table's source columns the foreign key references.
	Cols               []int
	OnDelete, OnUpdate Action
	// Whole is set when the child's rows an action changes cannot be named
	// by this table's key: the referenced columns are not a unique key here
	// (the child's changes then take this table, not a key of it), or the
	// child has no key that names its own rows.
	Whole bool
	// Deeper are the tables whose rows the child's own foreign keys change
	// in turn, when this action deletes (OnDelete) or updates (OnUpdate) a
	// child row: rows nobody can name, taken whole.
	DeeperDelete, DeeperUpdate []uint64
}

// mapChildren records the foreign keys in which t is the parent.
func (b *Builder) mapChildren(ctx context.Context, p *Table) error {
	t := p.Target
	for _, fk := range t.ReferencedBy {
		c := Child{Table: TableSeed(b.cache.Ident(fk.ChildSchema, fk.ChildTable)),
			Name: sqlquote.Qualified(fk.ChildSchema, fk.ChildTable)}
		c.OnDelete, c.OnUpdate = actions(fk)
		if c.OnDelete == NoAction && c.OnUpdate == NoAction {
			continue // nothing hidden: the parent change changes no child row
		}
		for _, name := range fk.ParentColumns {
			col := -1
			for i := range p.Cols {
				if strings.EqualFold(p.Cols[i].Name, name) {
					col = i
				}
			}
			if col < 0 {
				return fmt.Errorf("table %s: foreign key %s of %s: referenced column %s is not in the source table", p.Name, fk.Name, c.Name, name)
			}
			c.Cols = append(c.Cols, col)
		}
		child, err := b.cache.Get(ctx, fk.ChildSchema, fk.ChildTable)
		if err != nil {
			return fmt.Errorf("table %s: foreign key %s of %s: %w", p.Name, fk.Name, c.Name, err)
		}
		c.Whole = child == nil || child.UsableKey() == nil || matchingUnique(t, fk.ParentColumns) == nil
		if child != nil {
			if c.OnDelete != NoAction {
				// A cascaded delete removes child rows; SET NULL/DEFAULT
				// change their foreign key columns.
				changed := fk.ChildColumns
				if c.OnDelete == Cascade {
					changed = nil
				}
				if c.DeeperDelete, err = b.deeper(ctx, child, changed, map[uint64]bool{p.TableHash: true, c.Table: true}); err != nil {
					return err
				}
			}
			if c.OnUpdate != NoAction {
				if c.DeeperUpdate, err = b.deeper(ctx, child, fk.ChildColumns, map[uint64]bool{p.TableHash: true, c.Table: true}); err != nil {
					return err
				}
			}
		}
		p.Children = append(p.Children, c)
	}
	return nil
}

// deeper lists the tables whose rows the target changes by itself when
// rows of t change without the binlog showing it: deleted (changed nil) or
// with the columns changed updated. Each such table is taken whole, with
// every table its own actions reach in turn.
func (b *Builder) deeper(ctx context.Context, t *schema.Table, changed []string, seen map[uint64]bool) ([]uint64, error) {
	var out []uint64
	for _, fk := range t.ReferencedBy {
		act, onUpdate := actions(fk)
		if changed != nil {
			act = NoAction
			if overlaps(fk.ParentColumns, changed) {
				act = onUpdate
			}
		}
		if act == NoAction {
			continue
		}
		h := TableSeed(b.cache.Ident(fk.ChildSchema, fk.ChildTable))
		if seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, h)
		grandchild, err := b.cache.Get(ctx, fk.ChildSchema, fk.ChildTable)
		if err != nil {
			return nil, err
		}
		if grandchild == nil {
			continue
		}
		// Whatever the grandchild's rows go through, everything its actions
		// reach is taken too (deleted or updated: both, to stay simple).
		for _, cols := range [][]string{nil, fk.ChildColumns} {
			more, err := b.deeper(ctx, grandchild, cols, seen)
			if err != nil {
				return nil, err
			}
			out = append(out, more...)
		}
	}
	return out, nil
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if strings.EqualFold(x, y) {
				return true
			}
		}
	}
	return false
}
