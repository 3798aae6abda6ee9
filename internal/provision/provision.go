// Package provision prepares the target for a copy: it creates the schemas
// and tables the copy writes into from the source's definitions, with the
// secondary indexes that can wait left out (Split), and builds those
// indexes with one ALTER TABLE per table once the table's rows are in
// (Build): inserting rows into a table without them, then sorting each
// index once, costs the target less than maintaining them row by row.
//
// It also creates the copied databases' other objects (objects.go):
// sequences with their state, stored routines, views, events.
//
// It changes the target's definitions only (a sequence's state is part of
// its definition); it must never read or write rows.
package provision

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Source is a source table to create on the target.
type Source struct {
	Def    *schema.Table
	Create string // SHOW CREATE TABLE on the source (schema.ShowCreateTable)
}

// CreateTables creates the schemas and tables the target lacks, from the
// source's definitions (the source's triggers are not created: see the
// README), with the indexes Split defers left out when deferIndexes is
// set. It returns what it left out of each table (by position in tables),
// and the existing tables that hold rows.
//
// An existing empty table is kept as it is, but the indexes Split would
// defer that it lacks count as deferred: a run stopped between creating
// the tables and recording the copy leaves them so, and the run after it
// must build them (before, it copied into them and never did).
//
// before, when set, runs before each table is created: the caller records
// that it creates it (a run stopped after that knows what it left behind).
func CreateTables(ctx context.Context, dst *sql.DB, tables []Source, deferIndexes bool,
	before func(*schema.Table) error) (deferred [][]Index, nonEmpty []string, err error) {
	deferred = make([][]Index, len(tables))
	created := map[string]bool{}
	for i, src := range tables {
		t := src.Def
		if !created[t.Schema] {
			if _, err := dst.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+sqlquote.Name(t.Schema)); err != nil {
				return nil, nil, fmt.Errorf("create database %s on the target: %w", sqlquote.Name(t.Schema), err)
			}
			created[t.Schema] = true
		}
		exists, empty, err := emptiness(ctx, dst, t.QualifiedName())
		switch {
		case err != nil:
			return nil, nil, err
		case !empty:
			nonEmpty = append(nonEmpty, t.QualifiedName())
		case exists:
			if deferIndexes {
				if deferred[i], err = missing(ctx, dst, t, src.Create); err != nil {
					return nil, nil, err
				}
			}
		default:
			create := src.Create
			if deferIndexes {
				create, deferred[i] = Split(create, t)
			}
			if before != nil {
				if err := before(t); err != nil {
					return nil, nil, err
				}
			}
			if err := createTable(ctx, dst, t, create); err != nil {
				return nil, nil, err
			}
		}
	}
	return deferred, nonEmpty, nil
}

// emptiness reports whether a table of the target exists and whether it
// holds no row (a table that does not exist counts as empty).
func emptiness(ctx context.Context, dst *sql.DB, name string) (exists, empty bool, err error) {
	var one int
	err = dst.QueryRowContext(ctx, "SELECT 1 FROM "+name+" LIMIT 1").Scan(&one)
	switch {
	case err == nil:
		return true, false, nil
	case err == sql.ErrNoRows:
		return true, true, nil
	case sqlerr.Is(err, sqlerr.NoSuchTable):
		return false, true, nil
	}
	return false, false, fmt.Errorf("read %s on the target: %w", name, err)
}

// DropIfEmpty drops a table of the target that holds no row (a table a
// stopped copy start created); one that holds rows, or is gone, stays as
// it is. It reports whether it dropped the table.
func DropIfEmpty(ctx context.Context, dst *sql.DB, schemaName, table string) (bool, error) {
	name := sqlquote.Name(schemaName) + "." + sqlquote.Name(table)
	exists, empty, err := emptiness(ctx, dst, name)
	if err != nil || !exists || !empty {
		return false, err
	}
	if err := inThrowawaySession(ctx, dst, "SET SESSION foreign_key_checks = 0", "DROP TABLE IF EXISTS "+name); err != nil {
		return false, fmt.Errorf("drop %s on the target: %w", name, err)
	}
	return true, nil
}

// missing returns the indexes Split defers from a table's definition that
// the target's table of that name lacks.
func missing(ctx context.Context, dst *sql.DB, t *schema.Table, create string) ([]Index, error) {
	_, want := Split(create, t)
	if len(want) == 0 {
		return nil, nil
	}
	have, err := schema.ReadTable(ctx, dst, t.Schema, t.Name)
	if err != nil || have == nil {
		return nil, err
	}
	var out []Index
	for _, ix := range want {
		if have.IndexByName(ix.Name) == nil {
			out = append(out, ix)
		}
	}
	return out, nil
}

// createTable runs a CREATE TABLE in the table's schema, with foreign keys
// checked only once the parents exist too (they may be created later), and
// in the sql_mode its definition was read in (schema.DefinitionMode), not
// the target's: a source table whose default is a zero date must be
// created on a target whose global mode has NO_ZERO_DATE. The session is
// thrown away after.
func createTable(ctx context.Context, dst *sql.DB, t *schema.Table, create string) error {
	err := inThrowawaySession(ctx, dst, "USE "+sqlquote.Name(t.Schema),
		"SET SESSION foreign_key_checks = 0, sql_mode = '"+schema.DefinitionMode+"'", create)
	if err != nil {
		return fmt.Errorf("create %s on the target: %w", t.QualifiedName(), err)
	}
	return nil
}

// inThrowawaySession runs statements on a connection of its own that is
// closed after them: the session settings they change never reach the
// pool.
func inThrowawaySession(ctx context.Context, dst *sql.DB, stmts ...string) error {
	conn, err := dst.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drops the connection
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// NewBuild describes the build of a table's deferred indexes; neighbours
// are the tables linked to it by foreign keys.
func NewBuild(schemaName, table string, ixs []Index, neighbours []txn.TableName) *txn.IndexBuild {
	if len(ixs) == 0 {
		return nil
	}
	b := &txn.IndexBuild{Schema: schemaName, Table: table, Neighbours: neighbours}
	for _, ix := range ixs {
		b.Keys = append(b.Keys, ix.Name)
		b.Definitions = append(b.Definitions, ix.Definition)
	}
	return b
}

// Statement is the one ALTER TABLE that adds the build's indexes.
func Statement(b *txn.IndexBuild) string { return statement(b, nil) }

// statement is the one ALTER TABLE that adds the build's indexes in its
// order (only those named in only, unless nil). Without ALGORITHM or LOCK the server picks the least locking way
// it has: for InnoDB, built in place while the table stays readable and
// writable.
func statement(b *txn.IndexBuild, only map[string]bool) string {
	var s strings.Builder
	s.WriteString("ALTER TABLE " + sqlquote.Qualified(b.Schema, b.Table))
	n := 0
	for i, def := range b.Definitions {
		if only != nil && !only[b.Keys[i]] {
			continue
		}
		if n > 0 {
			s.WriteByte(',')
		}
		s.WriteString(" ADD " + def)
		n++
	}
	return s.String()
}

// Build adds a table's deferred indexes on conn, once: it first waits
// while the server still runs a previous run's build of them (a process
// killed during an ALTER TABLE leaves the statement running on the
// server), then adds those the table lacks (all of them, unless that
// statement completed). A value duplicated under a deferred unique key
// fails the build with the server's error, which names the key and the
// value: the target's rows are then not the source's, and nothing may
// count the table as copied.
func Build(ctx context.Context, conn *sql.Conn, b *txn.IndexBuild, log *slog.Logger) error {
	full := statement(b, nil)
	for waited := time.Duration(0); ; waited += time.Second {
		var n int
		err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = ? AND ID <> CONNECTION_ID()",
			full).Scan(&n)
		if err != nil {
			return fmt.Errorf("build the indexes of %s.%s: look for a build still running: %w",
				sqlquote.Name(b.Schema), sqlquote.Name(b.Table), err)
		}
		if n == 0 {
			break
		}
		if waited%(30*time.Second) == 0 {
			log.Warn("waiting for the index build a previous run started to finish on the target", "table", b.Schema+"."+b.Table)
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t, err := schema.ReadTable(ctx, conn, b.Schema, b.Table)
	if err != nil {
		return err
	}
	if t == nil {
		return nil // dropped since (by the stream): nothing to build
	}
	missing := map[string]bool{}
	for _, k := range b.Keys {
		if t.IndexByName(k) == nil {
			missing[k] = true
		}
	}
	if len(missing) == 0 {
		return nil
	}
	q := full
	if len(missing) < len(b.Keys) {
		q = statement(b, missing)
	}
	start := time.Now()
	if _, err := conn.ExecContext(ctx, q); err != nil {
		if sqlerr.Is(err, sqlerr.DupEntry) {
			return fmt.Errorf("build the indexes the copy deferred on %s.%s: %w: the copied rows hold a value twice under a "+
				"unique key of the source, so the target's rows are not the source's; the table is not copied "+
				"(start its copy again)", sqlquote.Name(b.Schema), sqlquote.Name(b.Table), err)
		}
		return fmt.Errorf("build the indexes the copy deferred on %s.%s (%s): %w", sqlquote.Name(b.Schema),
			sqlquote.Name(b.Table), strings.Join(b.Keys, ", "), err)
	}
	log.Info("built the indexes the copy deferred", "table", b.Schema+"."+b.Table, "indexes", strings.Join(b.Keys, ","),
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}
