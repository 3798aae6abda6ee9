package replicate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/copier"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/schema"
)

// startDefs is what a new copy creates on the target, as the source had it
// at the stream's start pos.
type startDefs struct {
	tables  []*copier.Table
	objects []*schema.ObjectDef
	// databases are the CREATE DATABASE IF NOT EXISTS of every database
	// that holds a copied table or object.
	databases []string
	pos       gtid.Set
	// file and offset are where pos ends in the source's binlog.
	file   string
	offset uint64
}

// listDefinitions reads the selected tables, objects and their databases
// in one source session whose sql_mode is schema.DefinitionMode (SHOW
// CREATE prints definitions for its session's mode; they run on the target
// in the same), thrown away after.
func listDefinitions(ctx context.Context, src *sql.DB, rules filter.Rules) (*startDefs, error) {
	conn, err := src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drops the connection
	d := &startDefs{}
	if d.objects, err = schema.ReadObjects(ctx, conn, rules); err != nil {
		return nil, err
	}
	if d.tables, err = copier.ListTables(ctx, conn, rules, true); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var names []string
	for _, t := range d.tables {
		if !seen[t.Schema] {
			seen[t.Schema] = true
			names = append(names, t.Schema)
		}
	}
	for _, o := range d.objects {
		if !seen[o.Schema] {
			seen[o.Schema] = true
			names = append(names, o.Schema)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		create, err := schema.ShowCreateDatabase(ctx, conn, n)
		if err != nil {
			return nil, err
		}
		d.databases = append(d.databases, create)
	}
	return d, nil
}

// readSequences reads the state of the sequences among objs, after the
// stream's start (see schema.ReadSequence).
func readSequences(ctx context.Context, src *sql.DB, objs []*schema.ObjectDef) error {
	for _, o := range objs {
		if o.Kind == schema.KindSequence {
			if err := schema.ReadSequence(ctx, src, o); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
		}
	}
	return nil
}

// createDefinitions creates on the target what a new copy starts with: the
// databases, the sequences with their states, the tables (without the
// indexes that can wait, unless inline), then the routines, views and
// events. It returns the indexes left out of each table. Objects the
// target will not take are logged, one warning each, with the server's
// reason; an object that fails otherwise, a DEFINER account the target
// lacks, or a target table that holds rows stops the copy before it is
// recorded (a new start creates everything again).
func (r *run) createDefinitions(ctx context.Context, st *startDefs) ([][]provision.Index, error) {
	cfg := &r.cfg
	if err := provision.CheckDefiners(ctx, r.meta, st.objects, cfg.Copy.Objects); err != nil {
		return nil, err
	}
	if err := provision.CreateDatabases(ctx, r.meta, st.databases); err != nil {
		return nil, err
	}
	if err := provision.CreateSequences(ctx, r.meta, st.objects, cfg.Copy.Objects); err != nil {
		return nil, err
	}
	sources := make([]provision.Source, len(st.tables))
	for i, t := range st.tables {
		sources[i] = provision.Source{Def: t.Def, Create: t.Create}
	}
	deferred, nonEmpty, err := provision.CreateTables(ctx, r.meta, sources, !cfg.Copy.InlineIndexes, func(t *schema.Table) error {
		return position.CopyCreating(ctx, r.meta, cfg.Stream, t.Schema, t.Name)
	})
	if err != nil {
		return nil, err
	}
	if len(nonEmpty) > 0 {
		return nil, fmt.Errorf("the target's tables %s already hold rows; binlane copies into empty tables only "+
			"(empty them, or use --copy=never with --start-gtid if the target is already in sync)", strings.Join(nonEmpty, ", "))
	}
	skipped, err := provision.CreateObjects(ctx, r.meta, st.objects, cfg.Copy.Objects)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		r.log.Warn("copy: an object of the source cannot be created on the target; it is not copied",
			"object", s.Object.String(), "reason", s.Reason)
	}
	if len(st.objects) > 0 {
		r.log.Info("created the source's objects on the target", objectCounts(st.objects, skipped)...)
	}
	return deferred, nil
}

// objectCounts are log attributes: how many objects of each kind were
// created, and how many could not be.
func objectCounts(objs []*schema.ObjectDef, skipped []provision.Skipped) []any {
	n := map[schema.ObjectKind]int{}
	for _, o := range objs {
		n[o.Kind]++
	}
	var out []any
	for _, k := range []schema.ObjectKind{schema.KindSequence, schema.KindView, schema.KindProcedure, schema.KindFunction,
		schema.KindPackage, schema.KindPackageBody, schema.KindEvent} {
		if n[k] > 0 {
			out = append(out, strings.ReplaceAll(strings.ToLower(string(k)), " ", "_")+"s", n[k])
		}
	}
	if len(skipped) > 0 {
		out = append(out, "not_created", len(skipped))
	}
	return out
}
