// Package copier copies the selected tables of a live source into the
// target while the stream runs: chunks of rows read in consistent snapshots
// whose binlog positions are known, put into the stream of source
// transactions exactly where those positions fall (Merger), and written by
// the applier in stream order like any transaction (so ordered commit,
// exactly-once checkpoints and crash recovery come for free). Until a
// range of a table is copied, the applier skips the changes of its rows
// (State.Filter): the chunk that copies them carries their effect.
//
// One producer computes the chunk boundaries of every table ahead of the
// readers (key order, sized to a target time per chunk); N readers read
// chunks at once, across and within tables; there is no barrier between
// chunks. Tables come after the tables they reference by foreign key (a
// chunk's rows reference rows already copied). A table whose key binlane
// cannot order as the server does is copied in one pass.
//
// The package reads the source and hands rows to the applier; it must
// never write to the target itself.
package copier

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/throttle"
	"github.com/binlane/binlane/internal/txn"
)

// Config describes a copy.
type Config struct {
	Source  *sql.DB // at least Workers+1 connections
	Tables  []*Table
	State   *State
	Merger  *Merger
	Workers int
	// ChunkTime is the time a chunk should take the target; chunk sizes
	// adapt to it, between MinRows and MaxRows, and to MaxChunkBytes.
	ChunkTime        time.Duration
	MinRows, MaxRows int
	MaxChunkBytes    int
	// Throttle holds each chunk back while binlane's limits say so (nil:
	// never).
	Throttle *throttle.Throttle
	Logger   *slog.Logger
	// AfterRead, when set, is called after a chunk's rows are read in its
	// snapshot and before the chunk goes into the stream: tests write to
	// the source there, forcing the race the design must survive (a change
	// after the snapshot, before the chunk is written on the target).
	AfterRead func(ctx context.Context, schema, table string, rows [][][]byte) error
	// ByCoordinate (tests) places every chunk by its snapshot's binlog
	// coordinate, as a source that writes while snapshots begin makes most
	// of them; otherwise a quiet source's chunks go by GTID state.
	ByCoordinate bool
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.ChunkTime <= 0 {
		c.ChunkTime = 500 * time.Millisecond
	}
	if c.MinRows <= 0 {
		c.MinRows = 500
	}
	if c.MaxRows <= 0 {
		c.MaxRows = 100000
	}
	if c.MaxChunkBytes <= 0 {
		c.MaxChunkBytes = 8 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Copier runs a copy. Progress is safe to read while it runs.
type Copier struct {
	cfg      Config
	progress map[string]*Progress
	posCache snapshot.Cache
}

// Progress is one table's copy, as far as the target committed it.
type Progress struct {
	Table    string
	Estimate int64
	Rows     atomic.Int64
	Done     atomic.Bool
	OnePass  string
	sizer    sizer
}

// New returns a copier; start it with Run.
func New(cfg Config) *Copier {
	cfg.defaults()
	c := &Copier{cfg: cfg, progress: map[string]*Progress{}}
	for _, t := range cfg.Tables {
		p := &Progress{Table: t.ID(), Estimate: t.Rows, OnePass: t.OnePass}
		p.sizer = sizer{rows: cfg.MinRows * 2, min: cfg.MinRows, max: cfg.MaxRows, target: cfg.ChunkTime}
		c.progress[t.ID()] = p
	}
	return c
}

// Throttled says why the copy waits now ("" when it does not).
func (c *Copier) Throttled() string { return c.cfg.Throttle.Reason() }

// Tables returns the progress of every table.
func (c *Copier) Tables() []*Progress {
	out := make([]*Progress, 0, len(c.cfg.Tables))
	for _, t := range c.cfg.Tables {
		out = append(out, c.progress[t.ID()])
	}
	return out
}

// job is one chunk to read.
type job struct {
	t     *Table
	r     Range
	whole bool
}

// Run reads every table's missing ranges and hands them to the merger,
// level by level of foreign keys; it returns once every chunk is handed
// over (the applier then writes them).
func (c *Copier) Run(ctx context.Context) error {
	for _, level := range Levels(c.cfg.Tables) {
		var todo []*Table
		for _, t := range level {
			if cov := c.cfg.State.coverage(t.ID()); cov.All {
				c.progress[t.ID()].Done.Store(true)
			} else {
				todo = append(todo, t)
			}
		}
		if len(todo) == 0 {
			continue
		}
		if err := c.runLevel(ctx, todo); err != nil {
			return err
		}
	}
	return nil
}

// runLevel copies tables that do not reference one another.
func (c *Copier) runLevel(ctx context.Context, tables []*Table) error {
	g, ctx := errgroup.WithContext(ctx)
	jobs := make(chan job, 2*c.cfg.Workers) // the producer's lead on the readers
	g.Go(func() error {
		defer close(jobs)
		return c.produce(ctx, tables, jobs)
	})
	for range c.cfg.Workers {
		g.Go(func() error { return c.read(ctx, jobs) })
	}
	return g.Wait()
}

// produce computes chunk boundaries, round robin over the tables, ahead of
// the readers: each table's gaps (all of it at first, what a crash left
// after), cut every sizer.next() rows.
func (c *Copier) produce(ctx context.Context, tables []*Table, jobs chan<- job) error {
	type cursor struct {
		t    *Table
		gaps []Range
		lo   Key
		at   int // gap index
	}
	var cursors []*cursor
	for _, t := range tables {
		if t.Key == nil {
			if err := send(ctx, jobs, job{t: t, whole: true}); err != nil {
				return err
			}
			continue
		}
		cov := c.cfg.State.coverage(t.ID())
		gaps := cov.Gaps()
		cursors = append(cursors, &cursor{t: t, gaps: gaps, lo: gaps[0].Lo})
	}
	for len(cursors) > 0 {
		next := cursors[:0]
		for _, cur := range cursors {
			gap := cur.gaps[cur.at]
			n := c.progress[cur.t.ID()].sizer.next(c.cfg.MaxChunkBytes)
			hi, err := boundary(ctx, c.cfg.Source, cur.t, cur.lo, n)
			if sqlerr.Is(err, sqlerr.NoSuchTable) {
				continue // gone from the source (see read)
			}
			if err != nil {
				return err
			}
			if hi == nil || gap.Hi != nil && Compare(cur.t.Key, hi, gap.Hi) >= 0 {
				hi = gap.Hi // the rest of the gap
			}
			if err := send(ctx, jobs, job{t: cur.t, r: Range{Lo: cur.lo, Hi: hi}}); err != nil {
				return err
			}
			cur.lo = hi
			if hi == nil || gap.Hi != nil && Compare(cur.t.Key, hi, gap.Hi) == 0 {
				if cur.at++; cur.at == len(cur.gaps) {
					continue // the table is all produced
				}
				cur.lo = cur.gaps[cur.at].Lo
			}
			next = append(next, cur)
		}
		cursors = next
	}
	return nil
}

func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// read is one reader: it reads chunks until the producer is done.
func (c *Copier) read(ctx context.Context, jobs <-chan job) error {
	rd, err := newReader(ctx, c.cfg.Source, &c.posCache)
	if err == nil {
		rd.coordinateOnly = c.cfg.ByCoordinate
	}
	if err != nil {
		return err
	}
	defer rd.close()
	for j := range jobs {
		for attempt := 1; ; attempt++ {
			err := c.readChunk(ctx, rd, j)
			if sqlerr.Is(err, sqlerr.NoSuchTable) || errors.Is(err, errGone) {
				// Dropped (or renamed) since: the stream's statement decides
				// (see State.Statement); the chunk has nothing to place.
				c.cfg.Logger.Info("a table being copied is gone from the source", "table", j.t.ID())
				err = nil
			}
			if err == nil {
				break
			}
			// A table altered after the snapshot began (its definition
			// changed under a consistent read): read again.
			if !sqlerr.Is(err, tableDefinitionChanged) || attempt >= 5 || ctx.Err() != nil {
				return err
			}
			c.cfg.Logger.Info("re-reading a chunk: its table changed", "table", j.t.ID(), "error", err)
		}
	}
	return nil
}

// tableDefinitionChanged is ER_TABLE_DEF_CHANGED.
const tableDefinitionChanged = 1412

// readChunk reads one chunk in a snapshot and hands it to the merger, once
// the reader's previous chunk committed (see reader).
func (c *Copier) readChunk(ctx context.Context, rd *reader, j job) error {
	if err := c.cfg.Throttle.Wait(ctx); err != nil {
		return err
	}
	if err := rd.waitWritten(ctx); err != nil {
		return err
	}
	ticket, err := c.place(ctx, rd)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done { // the chunk is not (all) there: let the stream go on
			ticket.GiveUp()
		}
	}()
	cols, types, err := columns(ctx, rd.conn, j.t)
	if err != nil {
		return err
	}
	prog := c.progress[j.t.ID()]
	start := time.Now()
	send := func(ch *txn.Chunk) error { return ticket.Send(ctx, ch) }
	var pending *txn.Chunk
	emit := func(rows [][][]byte, bytes int) error {
		if pending != nil { // a whole table's earlier part
			pending.More = true
			if err := send(pending); err != nil {
				return err
			}
		}
		part := 0
		if pending != nil {
			part = pending.Part + 1
		}
		pending = &txn.Chunk{Schema: j.t.Schema, Table: j.t.Name, Columns: cols, Rows: rows, Pos: rd.pos.String(),
			Covers: j.r, Whole: j.whole, Part: part, Bytes: bytes}
		return nil
	}
	batch := c.cfg.MaxChunkBytes
	if !j.whole {
		batch = 1 << 62 // a range is one chunk: its size was chosen by the producer
	}
	if err := rd.rows(ctx, j.t, cols, types, j.r, batch, emit); err != nil {
		return err
	}
	readTook := time.Since(start)
	last := pending
	if c.cfg.AfterRead != nil {
		if err := c.cfg.AfterRead(ctx, j.t.Schema, j.t.Name, last.Rows); err != nil {
			return err
		}
	}
	written := make(chan struct{})
	last.Committed = func(rows int, took time.Duration) {
		prog.Rows.Add(int64(rows))
		if j.whole || j.r.Hi == nil {
			prog.Done.Store(j.whole || c.cfg.State.coverage(j.t.ID()).All)
		}
		prog.sizer.observe(rows, last.Bytes, readTook+took)
		close(written)
	}
	if err := send(last); err != nil {
		return err
	}
	rd.written = written
	done = true
	return nil
}

// place starts a snapshot and gets its place in the stream: a snapshot
// the stream has already passed (see Ticket.SetPos) is begun again.
func (c *Copier) place(ctx context.Context, rd *reader) (*Ticket, error) {
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		ticket, err := c.cfg.Merger.Reserve(ctx)
		if err != nil {
			return nil, err
		}
		if err := rd.snapshot(ctx); err != nil {
			ticket.Cancel()
			return nil, err
		}
		ok, err := ticket.SetPos(ctx, rd.pos)
		if err != nil {
			ticket.GiveUp()
			return nil, err
		}
		if ok {
			return ticket, nil
		}
		c.cfg.Logger.Debug("snapshot behind the stream: starting another", "position", rd.pos.String())
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// sizer adapts the rows of a table's chunks to a target time per chunk
// (Spirit's dynamic chunking): the rate of the last chunks decides the
// next size, within bounds, and within a byte bound for wide rows.
type sizer struct {
	mu          sync.Mutex
	rows        int // next chunk's rows
	min, max    int
	target      time.Duration
	bytesPerRow float64
}

func (s *sizer) next(maxBytes int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.rows
	if s.bytesPerRow > 0 {
		n = min(n, int(float64(maxBytes)/s.bytesPerRow))
	}
	return max(n, 1)
}

func (s *sizer) observe(rows, bytes int, took time.Duration) {
	if rows == 0 || took <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bytesPerRow = float64(bytes) / float64(rows)
	want := int(float64(rows) * s.target.Seconds() / took.Seconds())
	// Move halfway towards the size that would have taken the target time:
	// one slow chunk (a lock wait, a checkpoint) does not halve the next.
	s.rows = min(max((s.rows+want)/2, s.min), s.max)
}
