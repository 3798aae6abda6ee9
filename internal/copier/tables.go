package copier

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// Table is one table to copy, as the source defines it.
type Table struct {
	Schema, Name string
	// Key is the chunking key (primary key, or a unique key without NULLs)
	// when binlane can order its values as the server does; nil means the
	// table is copied in one pass (no usable key, a key binlane cannot
	// order, or a foreign key to itself or through a cycle).
	Key []KeyColumn
	// OnePass says why the table is copied in one pass ("" when chunked).
	OnePass string
	// Parents are the selected tables this one references by foreign key:
	// their copy completes before this one's starts, so that every row a
	// chunk references is on the target when the chunk commits.
	Parents []string
	// Rows is the source's estimate (information_schema), for progress.
	Rows int64
	// Create is SHOW CREATE TABLE on the source.
	Create string
}

// ID is the table's "schema.table".
func (t *Table) ID() string { return t.Schema + "." + t.Name }

// Quoted is `schema`.`table`.
func (t *Table) Quoted() string { return schema.QuoteName(t.Schema) + "." + schema.QuoteName(t.Name) }

// ListTables reads the selected base tables of the source with what the
// copy needs to know of each.
func ListTables(ctx context.Context, src *sql.DB, rules filter.Rules) ([]*Table, error) {
	rows, err := src.QueryContext(ctx, `SELECT TABLE_SCHEMA, TABLE_NAME, COALESCE(TABLE_ROWS, 0), TABLE_TYPE FROM information_schema.TABLES
		WHERE TABLE_TYPE IN ('BASE TABLE', 'SYSTEM VERSIONED') ORDER BY TABLE_SCHEMA, TABLE_NAME`)
	if err != nil {
		return nil, fmt.Errorf("list the source's tables: %w", err)
	}
	var tables []*Table
	var versioned []string
	for rows.Next() {
		t := &Table{}
		var kind string
		if err := rows.Scan(&t.Schema, &t.Name, &t.Rows, &kind); err != nil {
			rows.Close()
			return nil, err
		}
		switch {
		case !rules.Match(t.Schema, t.Name):
		case kind == "SYSTEM VERSIONED":
			versioned = append(versioned, t.Quoted())
		default:
			tables = append(tables, t)
		}
	}
	if len(versioned) > 0 {
		rows.Close()
		return nil, fmt.Errorf("%w: %s", txn.ErrVersioned, strings.Join(versioned, ", "))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := tables[:0]
	for _, t := range tables {
		err := inspect(ctx, src, t, rules)
		if sqlerr.Is(err, sqlerr.NoSuchTable) {
			continue // dropped since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// inspect reads a table's definition, chunking key and foreign keys.
func inspect(ctx context.Context, src *sql.DB, t *Table, rules filter.Rules) error {
	if err := src.QueryRowContext(ctx, "SHOW CREATE TABLE "+t.Quoted()).Scan(new(string), &t.Create); err != nil {
		return fmt.Errorf("read the definition of %s: %w", t.Quoted(), err)
	}
	t.Create = stripAutoIncrement.ReplaceAllString(t.Create, "")
	self := false
	rows, err := src.QueryContext(ctx, `SELECT DISTINCT REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE
		WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	for rows.Next() {
		var ps, pt string
		if err := rows.Scan(&ps, &pt); err != nil {
			rows.Close()
			return err
		}
		switch {
		case ps == t.Schema && pt == t.Name:
			self = true
		case rules.Match(ps, pt):
			t.Parents = append(t.Parents, ps+"."+pt)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if self {
		t.OnePass = "it references itself by foreign key"
		return nil
	}
	return chooseKey(ctx, src, t)
}

var stripAutoIncrement = regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`)

// chooseKey picks the primary key, else the first unique key without NULLs,
// when binlane can order its values.
func chooseKey(ctx context.Context, src *sql.DB, t *Table) error {
	rows, err := src.QueryContext(ctx, `SELECT s.INDEX_NAME, s.COLUMN_NAME, c.DATA_TYPE, c.COLUMN_TYPE, COALESCE(c.COLLATION_NAME, ''),
			c.IS_NULLABLE, COALESCE(s.SUB_PART, 0)
		FROM information_schema.STATISTICS s JOIN information_schema.COLUMNS c
		  ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME
		WHERE s.TABLE_SCHEMA = ? AND s.TABLE_NAME = ? AND s.NON_UNIQUE = 0
		ORDER BY s.INDEX_NAME = 'PRIMARY' DESC, s.INDEX_NAME, s.SEQ_IN_INDEX`, t.Schema, t.Name)
	if err != nil {
		return err
	}
	defer rows.Close()
	type index struct {
		cols   []KeyColumn
		usable bool
	}
	var order []string
	byName := map[string]*index{}
	for rows.Next() {
		var name, col, dt, ct, coll, nullable string
		var sub int
		if err := rows.Scan(&name, &col, &dt, &ct, &coll, &nullable, &sub); err != nil {
			return err
		}
		ix := byName[name]
		if ix == nil {
			ix = &index{usable: true}
			byName[name] = ix
			order = append(order, name)
		}
		k, ok := KeyKindOf(strings.ToLower(dt), strings.ToLower(ct), strings.ToLower(coll))
		k.Name = col
		ix.cols = append(ix.cols, k)
		ix.usable = ix.usable && ok && nullable == "NO" && sub == 0
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, name := range order {
		if ix := byName[name]; ix.usable {
			t.Key = ix.cols
			return nil
		}
	}
	if len(order) == 0 {
		t.OnePass = "it has no primary key and no unique key without NULLs"
	} else {
		t.OnePass = "its keys are of types binlane cannot order as the server does (a case-insensitive string, a float, ...)"
	}
	return nil
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

// PrepareTarget creates the schemas and tables the target lacks, from the
// source's definitions (the source's triggers are not created: see the
// README), and reports which existing tables hold rows.
func PrepareTarget(ctx context.Context, dst *sql.DB, tables []*Table) (nonEmpty []string, err error) {
	created := map[string]bool{}
	for _, t := range tables {
		if !created[t.Schema] {
			if _, err := dst.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+schema.QuoteName(t.Schema)); err != nil {
				return nil, fmt.Errorf("create database %s on the target: %w", schema.QuoteName(t.Schema), err)
			}
			created[t.Schema] = true
		}
		var one int
		err := dst.QueryRowContext(ctx, "SELECT 1 FROM "+t.Quoted()+" LIMIT 1").Scan(&one)
		switch {
		case err == nil:
			nonEmpty = append(nonEmpty, t.Quoted())
		case err == sql.ErrNoRows:
		case sqlerr.Is(err, sqlerr.NoSuchTable):
			conn, cerr := dst.Conn(ctx)
			if cerr != nil {
				return nil, cerr
			}
			_, cerr = conn.ExecContext(ctx, "USE "+schema.QuoteName(t.Schema))
			if cerr == nil {
				// The source's DDL as it stands, with foreign keys checked only
				// once the parents exist too (they may be created later).
				_, cerr = conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 0")
			}
			if cerr == nil {
				_, cerr = conn.ExecContext(ctx, t.Create)
			}
			// The session goes back to the pool: checks on again.
			if _, rerr := conn.ExecContext(ctx, "SET SESSION foreign_key_checks = 1"); rerr != nil && cerr == nil {
				cerr = rerr
			}
			conn.Close()
			if cerr != nil {
				return nil, fmt.Errorf("create %s on the target: %w", t.Quoted(), cerr)
			}
		default:
			return nil, fmt.Errorf("read %s on the target: %w", t.Quoted(), err)
		}
	}
	return nonEmpty, nil
}
