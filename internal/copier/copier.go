// Package copier copies the selected tables of a live source into the
// target while the stream runs: chunks of rows read in consistent snapshots
// whose binlog positions are known, put into the stream of source
// transactions exactly where those positions fall (Merger), and written by
// the applier in stream order like any transaction (so ordered commit,
// exactly-once checkpoints and crash recovery come for free). Until a
// range of a table is copied, the applier skips the changes of its rows
// (State.Filter): the chunk that copies them carries their effect.
//
// N readers read chunks at once, across and within tables; there is no
// barrier between chunks. Each table has a cursor: a chunk is the next n
// rows in key order from where the table's last chunk ended (n adapts to a
// target time per chunk), so chunks of one table are read one after
// another, and written at once. Tables come after the tables they
// reference by foreign key (a chunk's rows reference rows already copied).
// A table whose key binlane cannot order as the server does is copied in
// one pass.
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

	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/throttle"
)

// Config describes a copy.
type Config struct {
	Source *sql.DB // at least Readers+1 connections, multi-statement
	Tables []*Table
	State  *State
	Merger *Merger
	// Readers are the source connections reading chunks; each has at most
	// one chunk in the stream, not committed, at a time.
	Readers int
	// ChunkTime is the time a chunk should take the target; chunk sizes
	// adapt to it, between MinRows and MaxRows, and to MaxChunkBytes.
	ChunkTime        time.Duration
	MinRows, MaxRows int
	// MaxChunkBytes bounds a chunk's rows in memory: the rows a chunk
	// reads are sized to it, and a read that reaches it (rows wider than
	// the last ones) ends the chunk at that row, so a chunk holds less than
	// MaxChunkBytes before its last row.
	MaxChunkBytes int
	// Throttle holds each chunk back while binlane's limits say so (nil:
	// never).
	Throttle *throttle.Throttle
	Logger   *slog.Logger
	// AfterRead, when set, is called after a chunk's rows are read in its
	// snapshot and before the chunk goes into the stream: tests write to
	// the source there, forcing the race the design must survive (a change
	// after the snapshot, before the chunk is written on the target).
	AfterRead func(ctx context.Context, schema, table string, rows [][][]byte) error
	// BeforeRead (tests) is called before a chunk's snapshot and rows are
	// asked for: tests end the run there, failing that read.
	BeforeRead func(ctx context.Context, schema, table string)
	// ByCoordinate (tests) places every chunk by its snapshot's binlog
	// coordinate, as a source that writes while snapshots begin makes most
	// of them; otherwise a quiet source's chunks go by GTID state.
	ByCoordinate bool
}

func (c *Config) defaults() {
	if c.Readers <= 0 {
		c.Readers = 4
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
	stats    Stats
}

// Stats count what the copy cost the source.
type Stats struct {
	// Chunks are the chunks read (a whole table's parts count as one).
	Chunks atomic.Int64
	// RoundTrips are the readers' round trips to the source for chunks;
	// SetupTrips those that set a reader up (two per reader and level).
	RoundTrips, SetupTrips atomic.Int64
	// StillChunks are the chunks read where the binlog stood still (placed
	// by GTID state), and StillTrips their round trips; the others' are the
	// rest.
	StillChunks, StillTrips atomic.Int64
	// Behind are the snapshots begun again because the stream had passed
	// them (their rows were read for nothing).
	Behind atomic.Int64
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

// Stats returns the copy's counters.
func (c *Copier) Stats() *Stats { return &c.stats }

// Tables returns the progress of every table.
func (c *Copier) Tables() []*Progress {
	out := make([]*Progress, 0, len(c.cfg.Tables))
	for _, t := range c.cfg.Tables {
		out = append(out, c.progress[t.ID()])
	}
	return out
}

// Run reads every table's missing ranges and hands them to the merger,
// level by level of foreign keys; it returns once every chunk is handed
// over (the applier then writes them).
func (c *Copier) Run(ctx context.Context) error {
	for _, level := range Levels(c.cfg.Tables) {
		var todo []*Table
		for _, t := range level {
			if c.cfg.State.coverage(t.ID()).All {
				c.progress[t.ID()].Done.Store(c.cfg.State.tableDone(t.ID()))
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
	lv := &level{changed: make(chan struct{})}
	for _, t := range tables {
		cur := &cursor{t: t, prog: c.progress[t.ID()]}
		if t.Def != nil {
			// The columns the listing read: the first chunk's batch checks
			// them (an error here is found again there).
			cur.cols, _ = newChunkColumns(t, t.Def.Columns)
		}
		if t.Key != nil {
			cov := c.cfg.State.coverage(t.ID())
			cur.gaps = cov.Gaps()
			cur.lo = cur.gaps[0].Lo
		}
		lv.cursors = append(lv.cursors, cur)
	}
	g, ctx := errgroup.WithContext(ctx)
	for range c.cfg.Readers {
		g.Go(func() error { return c.read(ctx, lv) })
	}
	return g.Wait()
}

// level is the tables of one level, each with its cursor; a reader takes a
// cursor that no other reader holds, reads the table's next chunk and
// gives the cursor back.
type level struct {
	mu      sync.Mutex
	cursors []*cursor
	next    int           // where the next search starts (round robin)
	changed chan struct{} // closed when a cursor is given back
}

// cursor is where the copy of one table stands.
type cursor struct {
	t    *Table
	prog *Progress
	// gaps are the ranges left to copy (all of the key space at first, what
	// a crash left after); lo is where the next chunk starts in gaps[at].
	gaps []keyrange.Range
	at   int
	lo   keyrange.Key
	// cols are the columns the table's last chunk read: the next batch
	// reads rows with them, and checks them.
	cols *chunkColumns
	// exhausted is set by the reader holding the cursor when the table has
	// nothing more to read; done (under the level's lock) once it gives
	// the cursor back.
	exhausted  bool
	busy, done bool
}

// take returns a cursor no reader holds, waiting while all are held; nil
// once every table is read.
func (lv *level) take(ctx context.Context) (*cursor, error) {
	for {
		lv.mu.Lock()
		held := false
		for i := range lv.cursors {
			cur := lv.cursors[(lv.next+i)%len(lv.cursors)]
			if cur.done {
				continue
			}
			if cur.busy {
				held = true
				continue
			}
			cur.busy = true
			lv.next = (lv.next + i + 1) % len(lv.cursors)
			lv.mu.Unlock()
			return cur, nil
		}
		wait := lv.changed
		lv.mu.Unlock()
		if !held {
			return nil, nil
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// give hands a cursor back.
func (lv *level) give(cur *cursor) {
	lv.mu.Lock()
	cur.busy, cur.done = false, cur.exhausted
	close(lv.changed)
	lv.changed = make(chan struct{})
	lv.mu.Unlock()
}

// gapHi is the upper end of the gap the cursor is in.
func (cur *cursor) gapHi() keyrange.Key { return cur.gaps[cur.at].Hi }

// advance moves the cursor past a chunk that ended at hi.
func (cur *cursor) advance(hi keyrange.Key) {
	gapHi := cur.gapHi()
	if hi == nil || gapHi != nil && keyrange.Compare(cur.t.Key, hi, gapHi) >= 0 {
		if cur.at++; cur.at == len(cur.gaps) {
			cur.exhausted = true
			return
		}
		cur.lo = cur.gaps[cur.at].Lo
		return
	}
	cur.lo = hi
}

// read is one reader: it reads chunks until every table of the level is
// read.
func (c *Copier) read(ctx context.Context, lv *level) error {
	rd, err := newReader(ctx, c.cfg.Source, &c.posCache, c.cfg.ByCoordinate, &c.stats)
	if err != nil {
		return err
	}
	defer rd.close()
	for {
		if err := c.cfg.Throttle.Wait(ctx); err != nil {
			return err
		}
		if err := rd.waitWritten(ctx); err != nil {
			return err
		}
		// The reader's last chunk committed, and one it read without
		// handing it over is nobody's: its memory is free.
		rd.mem.reset()
		cur, err := lv.take(ctx)
		if cur == nil || err != nil {
			return err
		}
		if err := c.readCursor(ctx, rd, lv, cur); err != nil {
			return err
		}
	}
}

// readCursor reads a table's next chunk and hands it over; the cursor is
// given back once the chunk is read.
func (c *Copier) readCursor(ctx context.Context, rd *reader, lv *level, cur *cursor) error {
	given := false
	defer func() {
		if !given {
			lv.give(cur)
		}
	}()
	for attempt := 1; ; attempt++ {
		h, err := c.readChunk(ctx, rd, cur)
		if sqlerr.Is(err, sqlerr.NoSuchTable) || errors.Is(err, errGone) {
			// Dropped (or renamed) since: the stream's statement decides
			// (see State.Statement); the table has nothing more to place.
			c.cfg.Logger.Info("a table being copied is gone from the source", "table", cur.t.ID())
			cur.exhausted = true
			return nil
		}
		if err == nil {
			lv.give(cur)
			given = true
			return h.send(ctx)
		}
		// A table altered after the snapshot began (its definition changed
		// under a consistent read), or between the batch's column list and
		// its SELECT (a column the SELECT names is gone): read again, with
		// the columns it has then.
		if !sqlerr.Is(err, sqlerr.TableDefChanged, sqlerr.UnknownColumn) || attempt >= 5 || ctx.Err() != nil {
			return err
		}
		c.cfg.Logger.Info("re-reading a chunk: its table changed", "table", cur.t.ID(), "error", err)
		cur.cols = nil
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
