// Package verify compares the selected tables of two servers row by row and
// reports every difference: tables missing on either side, columns that
// differ, and rows missing, extra or changed, by key; and the definitions
// of their schema objects (see Objects below).
//
// The package owns the comparison. It must never write to either server:
// it sends only SELECTs (and SET SESSION), and its sessions are read-only,
// so the servers refuse a write even from a bug. Its sessions are never
// handed back to the caller's pools.
//
// # At rest
//
// Verify compares what each server holds at the moment each chunk is read.
// It must run at a consistent point: writes to the source stopped, and the
// target caught up to the source's last GTID (for example after
// `binlane replicate --stop-at-gtid`). Otherwise a row changed in flight
// shows as a difference, or a chunk read on each side at different moments
// hides one.
//
// # How
//
// A table is cut into chunks along its primary key, or else along a unique
// index whose columns are all NOT NULL: the source's index is walked in
// order for a bound every ChunkRows rows, and each key range is checksummed
// on both servers at once: a row count and the exact sum of a 64-bit hash
// of each row's canonical text (see rowString). Chunks run in parallel.
// When a chunk's checksums differ, its rows are read from both sides in key
// order and compared value by value to name the keys and columns.
//
// A table with no such key is compared whole, as a multiset of rows: one
// count and sum (a sum, unlike XOR, counts duplicate rows), and when they
// differ both sides stream their rows sorted by hash through one merge
// pass. This needs no memory, but each server sorts the whole table.
//
// The canonical text of a value is exact: strings are compared by their
// bytes (hex), so 'abc' differs from 'ABC' and 'a' from 'a ' whatever the
// collation; a bitmask tells NULL from the empty string; FLOAT is widened to DOUBLE, whose
// text round-trips; BIT, ENUM and SET by their stored numbers; temporal
// values at their declared precision, TIMESTAMP in UTC. Two servers of the
// same version render them identically. Equal checksums of different rows
// need a 64-bit hash collision.
//
// # Objects
//
// Beside the rows, Run compares the definitions of the selected tables,
// views, sequences (with their state), triggers, stored procedures and
// functions and events as SHOW CREATE gives them, with the session
// settings it shows (compareObjects, a pure function, does the
// normalizing and diffing; objectsread.go the reading). Before the
// hand-over the target is a replica: a trigger or event it lacks is
// deferred to the cut-over, and its DISABLE ON SLAVE events equal the
// source's enabled ones (Config.HandedOver).
//
// # Limits
//
//   - Keys on FLOAT, DOUBLE, BIT, ENUM, SET, TEXT/BLOB, column prefixes or
//     HASH indexes cannot bound chunks; such a table falls back to another
//     unique key, else to the whole-table comparison.
//   - A table without a usable key is read whole, in one query per side; on
//     a difference each server sorts it. Fine for small tables, slow for
//     big ones.
//   - A target without the chunking index is still compared, but each of
//     its chunks may scan the table (a warning is logged).
//   - System-versioned tables are compared on their current rows only.
//   - The row comparison needs only column names, types, charsets,
//     collations and order to match; the rest of a table's definition is
//     compared as an object (not with ScopeRows).
//   - Both servers must be the same flavor and version: the canonical text
//     of FLOAT, DOUBLE, JSON and geometry values is the server's.
package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/filter"
)

// Defaults for the zero values of Config.
const (
	DefaultChunkRows = 10000
	DefaultParallel  = 4
	DefaultMaxDiffs  = 20
)

// Config describes a run.
type Config struct {
	// Source and Target are pools to the two servers. Each must allow at
	// least two open connections; a run uses up to Parallel+1 of each.
	Source, Target *sql.DB
	// Rules select the tables; system schemas are never compared. Tables
	// the rules select on the target but the source lacks are reported.
	// Views and sequences are selected as tables are, triggers with their
	// table, routines and events with their database (MatchSchema).
	Rules filter.Rules
	// ChunkRows is the number of source rows per chunk.
	ChunkRows int
	// Parallel is the number of chunks compared at once.
	Parallel int
	// MaxDiffs is how many differing rows to list per table.
	MaxDiffs int
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
	// Pair, when set, makes the comparison online: rows are compared on
	// pairs of sessions, one per side, in which Pair started snapshots that
	// see the same source position (package pause). Catalogs and chunk
	// bounds are read outside them: any bounds tile the key space.
	Pair func(ctx context.Context, src, tgt *sql.Conn) error
	// Skip, when set, leaves tables out (a resumed run: those an earlier
	// run found equal). TableDone, when set, is called as each table's
	// comparison ends.
	Skip      func(schema, table string) bool
	TableDone func(TableReport)
	// Hold, when set, is called before each chunk (and each table compared
	// whole) and returns once binlane's limits let the comparison go on
	// (package throttle); its error ends the run.
	Hold func(ctx context.Context) error
	// Scope says what is compared: rows and objects (the zero value), or
	// only one of them.
	Scope Scope
	// HandedOver says the target has taken over from the source (after
	// binlane cutover): its triggers and events must be there, each event
	// with the source's status. Before (false), a trigger or event the
	// target lacks is deferred to the cut-over, and an event it holds
	// DISABLE ON SLAVE, as a replica does, equals the source's ENABLE.
	HandedOver bool
	// AnyDefiner leaves objects' definers out of the comparison: the
	// target's were created as binlane's account (copy --definer=current).
	AnyDefiner bool
}

// Scope is what a run compares.
type Scope int

const (
	// ScopeAll compares the tables' rows and the objects' definitions.
	ScopeAll Scope = iota
	// ScopeRows compares the tables' rows only.
	ScopeRows
	// ScopeObjects compares the definitions of tables, views, sequences
	// (with their state), routines, events and triggers only: a few
	// statements per object, no rows.
	ScopeObjects
)

func (c Config) withDefaults() (Config, error) {
	if c.Source == nil || c.Target == nil {
		return c, errors.New("verify: both a source and a target pool are required")
	}
	if c.ChunkRows <= 0 {
		c.ChunkRows = DefaultChunkRows
	}
	if c.Parallel <= 0 {
		c.Parallel = DefaultParallel
	}
	if c.MaxDiffs <= 0 {
		c.MaxDiffs = DefaultMaxDiffs
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	// The chunk walker holds one source session while Parallel tasks hold
	// one on each side: a smaller pool would deadlock.
	for _, db := range []*sql.DB{c.Source, c.Target} {
		if m := db.Stats().MaxOpenConnections; m > 0 {
			if m < 2 {
				return c, fmt.Errorf("verify: a pool allows %d open connection; at least 2 are needed", m)
			}
			c.Parallel = min(c.Parallel, m-1)
		}
	}
	return c, nil
}

// run is the state of one Run.
type run struct {
	cfg      Config
	log      *slog.Logger
	src, tgt *side
	pairs    pairs
}

// Run compares the selected tables of cfg.Source and cfg.Target. Tables
// that differ are reported, not returned as errors; a table that cannot be
// read is reported with StatusError. Run returns an error only when it
// cannot list the tables or ctx ends. See the package documentation for the
// consistency Run needs.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	start := time.Now()
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, log: cfg.Logger, src: newSide("source", cfg.Source), tgt: newSide("target", cfg.Target)}
	defer r.src.close()
	defer r.tgt.close()
	defer r.pairs.close()

	srcCat, tgtCat := catalog{}, catalog{}
	var srcObjs, tgtObjs []objectDef
	g, gctx := errgroup.WithContext(ctx)
	for _, sd := range []struct {
		side *side
		cat  *catalog
		objs *[]objectDef
	}{{r.src, &srcCat, &srcObjs}, {r.tgt, &tgtCat, &tgtObjs}} {
		g.Go(func() error {
			return sd.side.withSession(gctx, func(c *sql.Conn) (err error) {
				if cfg.Scope != ScopeObjects {
					if *sd.cat, err = readCatalog(gctx, c, cfg.Rules); err != nil {
						return err
					}
				}
				if cfg.Scope != ScopeRows {
					if *sd.objs, err = readObjects(gctx, c, cfg.Rules); err != nil {
						return fmt.Errorf("%s: %w", sd.side.name, err)
					}
				}
				return nil
			})
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	objects := compareObjects(srcObjs, tgtObjs, cfg.HandedOver, cfg.AnyDefiner)
	for _, o := range objects {
		if !o.Equal() {
			r.log.Warn("object differs", "object", o.Label(), "status", o.Status, "line", o.Line, "error", o.Error)
		}
	}
	states := r.plan(srcCat, tgtCat)
	r.log.Info("verify started", "tables", len(states), "chunk_rows", cfg.ChunkRows, "parallel", cfg.Parallel)

	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(cfg.Parallel)
	for _, ts := range states {
		if gctx.Err() != nil {
			break
		}
		r.schedule(gctx, g, ts)
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	rep := &Report{Elapsed: time.Since(start), Objects: objects}
	for _, ts := range states {
		rep.Tables = append(rep.Tables, ts.report())
	}
	r.log.Info("verify done", "summary", rep.Summary())
	return rep, nil
}

// plan pairs the tables of both catalogs, in name order, and decides how
// each is compared.
func (r *run) plan(srcCat, tgtCat catalog) []*tableState {
	ids := make([]tableID, 0, len(srcCat)+len(tgtCat))
	skip := func(id tableID) bool { return r.cfg.Skip != nil && r.cfg.Skip(id.Schema, id.Name) }
	for id := range srcCat {
		if !skip(id) {
			ids = append(ids, id)
		}
	}
	for id := range tgtCat {
		if srcCat[id] == nil && !skip(id) {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		if ids[i].Schema != ids[j].Schema {
			return ids[i].Schema < ids[j].Schema
		}
		return ids[i].Name < ids[j].Name
	})
	states := make([]*tableState, len(ids))
	for i, id := range ids {
		ts := &tableState{id: id, maxDiffs: r.cfg.MaxDiffs, onDone: r.tableDone}
		ts.rep.Schema, ts.rep.Table = id.Schema, id.Name
		src, tgt := srcCat[id], tgtCat[id]
		switch {
		case tgt == nil:
			ts.rep.Status = StatusMissing
		case src == nil:
			ts.rep.Status = StatusOnlyOnTarget
		default:
			if d := compareColumns(src.Columns, tgt.Columns); d != nil {
				ts.rep.Status, ts.rep.SchemaDiffs = StatusSchemaDiffers, d
				break
			}
			ts.plan = newPlan(src, tgt)
			ts.rep.KeyColumns = ts.plan.keyNames()
			if ts.plan.Key != nil {
				ts.rep.Key = ts.plan.Key.Name
				if ts.plan.hints[onTarget] == "" {
					r.log.Warn("the target lacks the chunking index; its side of each chunk may scan the table",
						"table", id.String(), "index", ts.plan.Key.Name)
				}
			}
		}
		states[i] = ts
	}
	return states
}

// schedule starts the work of one table. It blocks while Parallel tasks
// run, which paces the chunk walker.
func (r *run) schedule(ctx context.Context, g *errgroup.Group, ts *tableState) {
	switch {
	case ts.plan != nil && ts.plan.Key != nil:
		r.walk(ctx, g, ts)
		return
	case ts.plan != nil:
		ts.scheduled()
		g.Go(func() error {
			defer ts.chunkDone()
			return r.tableTask(ctx, ts, r.compareWhole(ctx, ts))
		})
	default:
		var sides []*side
		if ts.rep.Status != StatusOnlyOnTarget {
			sides = append(sides, r.src)
		}
		if ts.rep.Status != StatusMissing {
			sides = append(sides, r.tgt)
		}
		ts.scheduled()
		g.Go(func() error {
			defer ts.chunkDone()
			return r.tableTask(ctx, ts, r.countRows(ctx, ts, sides...))
		})
	}
	ts.walked()
}

// tableTask turns a task's error into a table error, so one unreadable
// table does not stop the others; only the end of ctx stops the run.
func (r *run) tableTask(ctx context.Context, ts *tableState, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		ts.fail(fmt.Errorf("interrupted: %w", err)) // not compared to the end
		return ctx.Err()
	}
	ts.fail(err)
	return nil
}

// tableDone logs a table's outcome once its last task is done.
func (r *run) tableDone(ts *tableState) {
	rep := ts.report()
	level := slog.LevelInfo
	if !rep.Equal() {
		level = slog.LevelWarn
	}
	attrs := []any{"table", rep.Name(), "status", rep.Status, "source_rows", rep.SourceRows,
		"target_rows", rep.TargetRows, "chunks", rep.Chunks, "chunks_differing", rep.ChunksDiffering}
	if rep.Error != "" {
		attrs = append(attrs, "error", rep.Error)
	}
	r.log.Log(context.Background(), level, "table verified", attrs...)
	if r.cfg.TableDone != nil {
		r.cfg.TableDone(rep)
	}
}
