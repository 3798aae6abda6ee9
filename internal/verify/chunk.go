package verify

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// chunk is the key range lower < key <= upper of a table; nil ends are
// open, so the chunks of a table cover every possible key, including keys
// only the target has.
type chunk struct {
	n            int // 0-based position in the table
	lower, upper keyBound
}

// sums is a checksum of a set of rows.
type sums struct {
	count int64
	sum   string // exact decimal text of the sum of row hashes
}

func checksum(ctx context.Context, conn *sql.Conn, q string, args []any) (sums, error) {
	var s sums
	err := conn.QueryRowContext(ctx, q, args...).Scan(&s.count, &s.sum)
	return s, err
}

// walk finds the chunks of a keyed table on the source, in key order, and
// schedules a comparison for each while it looks for the next.
func (r *run) walk(ctx context.Context, g *errgroup.Group, ts *tableState) {
	var lower keyBound
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			// The rest of the table is not compared: it must not be
			// reported (or logged) as equal.
			ts.fail(fmt.Errorf("%s: interrupted before chunk %d: %w", ts.plan.ID, n, err))
			ts.walked()
			return
		}
		if ts.failed() {
			ts.walked()
			return
		}
		upper, err := r.nextBound(ctx, ts.plan, lower)
		if err != nil {
			ts.fail(fmt.Errorf("%s chunk %d: find its upper bound: %w", ts.plan.ID, n, err))
			ts.walked()
			return
		}
		if upper != nil && reflect.DeepEqual(upper, lower) {
			// Bounds that do not follow the index order would walk forever.
			ts.fail(fmt.Errorf("%s chunk %d: the key bound did not advance past %v", ts.plan.ID, n, lower))
			ts.walked()
			return
		}
		c := chunk{n: n, lower: lower, upper: upper}
		ts.scheduled()
		g.Go(func() error {
			defer ts.chunkDone()
			return r.tableTask(ctx, ts, r.compareChunk(ctx, ts, c))
		})
		if upper == nil {
			ts.walked()
			return
		}
		lower = upper
	}
}

// nextBound returns the key of the ChunkRows-th source row after lower, or
// nil when fewer rows remain (the last chunk is open-ended).
func (r *run) nextBound(ctx context.Context, p *plan, lower keyBound) (keyBound, error) {
	q, args := p.boundaryQuery(lower, r.cfg.ChunkRows)
	var raw [][]byte
	err := r.src.withSession(ctx, func(conn *sql.Conn) error {
		raw = nil
		return scanRows(ctx, conn, q, args, len(p.KeyCols), func(row [][]byte) { raw = row })
	})
	if err != nil || raw == nil {
		return nil, err
	}
	bound := make(keyBound, len(raw))
	for i, v := range raw {
		if bound[i], err = p.KeyCols[i].arg(v); err != nil {
			return nil, fmt.Errorf("key column %s: %w", p.KeyCols[i].Name, err)
		}
	}
	return bound, nil
}

// compareChunk checksums one chunk on both sides at once and, when they
// differ, lists the differing rows.
func (r *run) compareChunk(ctx context.Context, ts *tableState, c chunk) (err error) {
	p := ts.plan
	if ts.failed() {
		return nil // the table is reported as not compared anyway
	}
	src, tgt, err := r.sessions(ctx)
	if err != nil {
		return fmt.Errorf("%s chunk %d: %w", p.ID, c.n, err)
	}
	defer func() { r.release(src, tgt, err) }()
	start := time.Now()
	var s, t sums
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		q, args := p.checksumQuery(onSource, c.lower, c.upper)
		s, err = checksum(gctx, src, q, args)
		return sideErr("source", "checksum", err)
	})
	g.Go(func() (err error) {
		q, args := p.checksumQuery(onTarget, c.lower, c.upper)
		t, err = checksum(gctx, tgt, q, args)
		return sideErr("target", "checksum", err)
	})
	if err := g.Wait(); err != nil {
		return fmt.Errorf("%s chunk %d: %w", p.ID, c.n, err)
	}
	differ := s != t
	ts.addChunk(s.count, t.count, differ)
	r.log.Debug("chunk compared", "table", p.ID.String(), "chunk", c.n, "source_rows", s.count,
		"target_rows", t.count, "equal", !differ, "elapsed", time.Since(start))
	if !differ {
		return nil
	}
	if !ts.wantDiffs(c.n) {
		ts.addDiffs(c.n, nil, true)
		return nil
	}
	diffs, more, err := diffKeyed(ctx, src, tgt, p, c, r.cfg.MaxDiffs)
	if err != nil {
		return fmt.Errorf("%s chunk %d: %w", p.ID, c.n, err)
	}
	if len(diffs) == 0 {
		r.log.Warn("chunk checksums differ but its rows compare equal: are both servers at rest?",
			"table", p.ID.String(), "chunk", c.n)
	}
	ts.addDiffs(c.n, diffs, more)
	return nil
}

// compareWhole compares a table without a usable key as one multiset.
func (r *run) compareWhole(ctx context.Context, ts *tableState) (err error) {
	p := ts.plan
	src, tgt, err := r.sessions(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ID, err)
	}
	defer func() { r.release(src, tgt, err) }()
	var s, t sums
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		q, args := p.checksumQuery(onSource, nil, nil)
		s, err = checksum(gctx, src, q, args)
		return sideErr("source", "checksum", err)
	})
	g.Go(func() (err error) {
		q, args := p.checksumQuery(onTarget, nil, nil)
		t, err = checksum(gctx, tgt, q, args)
		return sideErr("target", "checksum", err)
	})
	if err := g.Wait(); err != nil {
		return fmt.Errorf("%s: %w", p.ID, err)
	}
	ts.addChunk(s.count, t.count, s != t)
	if s == t {
		return nil
	}
	diffs, more, err := diffMultiset(ctx, src, tgt, p, r.cfg.MaxDiffs)
	if err != nil {
		return fmt.Errorf("%s: %w", p.ID, err)
	}
	ts.addDiffs(0, diffs, more)
	return nil
}

// countRows counts the rows of a table on the sides that have it, for a
// table whose rows are not compared.
func (r *run) countRows(ctx context.Context, ts *tableState, sides ...*side) error {
	for _, sd := range sides {
		var n int64
		err := sd.withSession(ctx, func(conn *sql.Conn) error {
			return conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+ts.id.quoted()).Scan(&n)
		})
		if err != nil {
			return fmt.Errorf("%s: %s: count rows: %w", ts.id, sd.name, err)
		}
		ts.setRows(sd == r.src, n)
	}
	return nil
}

// sessions takes a session on each side, always source first, so two
// tasks never wait for each other's second session; online, a pair. It
// waits for the limits first (Config.Hold) and holds no session meanwhile.
func (r *run) sessions(ctx context.Context) (*sql.Conn, *sql.Conn, error) {
	if r.cfg.Hold != nil {
		if err := r.cfg.Hold(ctx); err != nil {
			return nil, nil, err
		}
	}
	if r.cfg.Pair != nil {
		return r.pairs.get(ctx, r)
	}
	src, err := r.src.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	tgt, err := r.tgt.get(ctx)
	if err != nil {
		r.src.put(src, nil)
		return nil, nil, err
	}
	return src, tgt, nil
}

func sideErr(side, what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", side, what, err)
}

// tableState gathers the results of a table's tasks as they finish.
type tableState struct {
	id       tableID
	plan     *plan // nil when the rows are not compared
	maxDiffs int
	onDone   func(*tableState)

	mu       sync.Mutex
	rep      TableReport
	diffs    map[int][]RowDiff // by chunk
	err      error
	pending  int // scheduled chunks not yet done
	walkDone bool
}

func (ts *tableState) failed() bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.err != nil
}

// fail records the table's first error; the table is then reported as not
// compared.
func (ts *tableState) fail(err error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.err == nil {
		ts.err = err
	}
}

func (ts *tableState) setRows(source bool, n int64) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if source {
		ts.rep.SourceRows = n
	} else {
		ts.rep.TargetRows = n
	}
}

func (ts *tableState) addChunk(src, tgt int64, differ bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.rep.SourceRows += src
	ts.rep.TargetRows += tgt
	ts.rep.Chunks++
	if differ {
		ts.rep.ChunksDiffering++
	}
}

// wantDiffs reports whether chunk n's rows are worth listing: not when the
// chunks before it already listed maxDiffs rows, as the report keeps the
// first ones in key order. This keeps the report the same for any
// scheduling and bounds the work on a table that differs throughout.
func (ts *tableState) wantDiffs(n int) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	before := 0
	for c, d := range ts.diffs {
		if c < n {
			before += len(d)
		}
	}
	return before < ts.maxDiffs
}

func (ts *tableState) addDiffs(n int, diffs []RowDiff, more bool) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.diffs == nil {
		ts.diffs = map[int][]RowDiff{}
	}
	ts.diffs[n] = append(ts.diffs[n], diffs...)
	ts.rep.MoreDiffs = ts.rep.MoreDiffs || more
}

func (ts *tableState) scheduled() {
	ts.mu.Lock()
	ts.pending++
	ts.mu.Unlock()
}

func (ts *tableState) chunkDone() {
	ts.mu.Lock()
	ts.pending--
	done := ts.walkDone && ts.pending == 0
	ts.mu.Unlock()
	if done {
		ts.onDone(ts)
	}
}

func (ts *tableState) walked() {
	ts.mu.Lock()
	ts.walkDone = true
	done := ts.pending == 0
	ts.mu.Unlock()
	if done {
		ts.onDone(ts)
	}
}

// report returns the table's final report.
func (ts *tableState) report() TableReport {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	rep := ts.rep
	chunks := make([]int, 0, len(ts.diffs))
	for c := range ts.diffs {
		chunks = append(chunks, c)
	}
	sort.Ints(chunks)
	rep.Diffs = nil
	for _, c := range chunks {
		rep.Diffs = append(rep.Diffs, ts.diffs[c]...)
	}
	if len(rep.Diffs) > ts.maxDiffs {
		rep.Diffs, rep.MoreDiffs = rep.Diffs[:ts.maxDiffs], true
	}
	switch {
	case ts.err != nil:
		rep.Status, rep.Error = StatusError, ts.err.Error()
	case rep.Status != "":
		// decided by the catalogs: missing, only on target, schema differs
	case rep.ChunksDiffering > 0:
		rep.Status = StatusDifferent
	default:
		rep.Status = StatusEqual
	}
	return rep
}
