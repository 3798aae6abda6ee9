package apply

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Copy is a copy in progress as the applier follows it (package copier's
// State): chunks of copied rows arrive in the stream among transactions,
// each where its snapshot falls. The coordinator calls it in stream order;
// workers call Committed.
type Copy interface {
	// Copying reports whether some table is not completely copied yet.
	Copying() bool
	// Filter keeps the changes of a table being copied that apply to the
	// target (ok false: the table is not being copied), with the chunking
	// key values of the rows they write.
	// A change the copy cannot place (a partial row image) is an error.
	Filter(p *plan.Table, changes []txn.Change) (out []txn.Change, keys []keyrange.Key, ok bool, err error)
	// Sequenced records that a chunk took its place in the stream and
	// returns the table's checkpoint after it; skip: the chunk is not to be
	// written. It sets the chunk's Build when the chunk completes a table
	// whose indexes the copy deferred.
	Sequenced(c *txn.Chunk) (cp position.CopyProgress, skip bool, err error)
	// Committed says that a chunk (the last part of a whole table)
	// committed, its indexes built, with its rows and the time it took.
	Committed(c *txn.Chunk, rows int, took time.Duration)
	// Statement follows a statement of the stream: the checkpoints it
	// changes, the deferred indexes to build before it runs, or why it
	// cannot be applied during the copy.
	Statement(st *txn.Statement) ([]position.CopyProgress, []*txn.IndexBuild, error)
}

// addChunk puts a copied chunk into the scheduler. A chunk of a key range
// is a span of its table: it runs beside work on other tables, beside the
// table's other chunks, and beside changes of its table's rows outside its
// range (changes inside wait for it; see scheduler.Span). A whole table, a
// chunk whose indexes are built after it, and one skipped take their
// table exclusively (a build also the tables linked to it by foreign keys:
// a statement on those opens the table, and would wait on the build's
// metadata lock while holding its commit turn). A chunk commits alone,
// with its checkpoint; a table copied in one pass arrives in parts and
// runs alone, like a transaction sent in parts.
func (c *coordinator) addChunk(ctx context.Context, p txn.Part) error {
	if c.a.cfg.Copy == nil {
		return fmt.Errorf("a chunk of copied rows of %s.%s, but no copy is running", p.Chunk.Schema, p.Chunk.Table)
	}
	ch := p.Chunk
	cp, skip, err := c.a.cfg.Copy.Sequenced(ch)
	if err != nil {
		return err
	}
	w := &work{t: p.Txn, chunk: ch, skip: skip, added: time.Now()}
	if !skip {
		w.checkpoints = []position.CopyProgress{cp}
	}
	u := &w.unit
	u.Seq, u.Payload, u.Bytes, u.Solo = p.Txn.Seq, w, p.Bytes+256, true
	table := c.a.plans.TableHash(ch.Schema, ch.Table)
	switch {
	case !p.Last:
		w.parts = make(chan txn.Part, 1)
		c.streaming = w
		w.alone, u.Barrier = true, true
		c.alone++
		c.a.stats.addSerialized(AloneTooLarge)
	case ch.Whole || skip || ch.Build != nil:
		w.set.Tables = append(w.set.Tables, scheduler.TableAccess{Table: table, Exclusive: true})
		if ch.Build != nil {
			// The build runs after the chunk's COMMIT (runChunk): what
			// waits for the table must wait for the build, not the commit.
			u.Lingers = true
			for _, n := range ch.Build.Neighbours {
				w.set.Tables = append(w.set.Tables, scheduler.TableAccess{Table: c.a.plans.TableHash(n.Schema, n.Table), Exclusive: true})
			}
		}
		u.Set = &w.set
	default:
		strict, err := c.strictUnique(ctx, ch)
		if err != nil {
			return err
		}
		u.Spans = []scheduler.Span{{Table: table, Cols: ch.Key, Range: ch.Covers, Strict: strict}}
	}
	u.Ordered = true // copied rows keep one commit order
	c.sched.Add(u)
	c.follow(w)
	c.inflight = append(c.inflight, inflightTxn{seq: p.Txn.Seq, t: p.Txn})
	return nil
}

// strictUnique reports whether the target enforces a unique key of the
// chunk's table other than its chunking key (one the copy did not defer):
// its chunks then wait for every earlier change of the table (see
// scheduler.Span.Strict).
func (c *coordinator) strictUnique(ctx context.Context, ch *txn.Chunk) (bool, error) {
	t, err := c.a.plans.Schema().Get(ctx, ch.Schema, ch.Table)
	if err != nil || t == nil {
		return true, err
	}
	keys := t.UniqueKeys
	if t.PrimaryKey != nil {
		keys = append([]schema.Index{*t.PrimaryKey}, keys...)
	}
	for i := range keys {
		if !keys[i].Deferred && !sameColumns(t, &keys[i], ch.Key) {
			return true, nil
		}
	}
	return false, nil
}

// sameColumns reports whether an index is over exactly the key's columns.
func sameColumns(t *schema.Table, ix *schema.Index, key []keyrange.Column) bool {
	if len(ix.Columns) != len(key) {
		return false
	}
	for i, pos := range ix.Columns {
		if !strings.EqualFold(t.Columns[pos].Name, key[i].Name) || ix.Prefix[i] != 0 {
			return false
		}
	}
	return true
}

// copyStatements asks the copy about a transaction's statements.
func (c *coordinator) copyStatements(w *work) error {
	cp := c.a.cfg.Copy
	if cp == nil || !cp.Copying() {
		return nil
	}
	for i := range w.body.Items {
		it := &w.body.Items[i]
		if it.Kind != txn.ItemStatement {
			continue
		}
		if u := it.Statement.Temp; u != nil && u.Only {
			// It changes no real table. Rows it reads from real tables while
			// a copy runs may be partial: the temporary table is not built.
			if len(u.RealReads) > 0 {
				u.Rebuild = false
			}
			continue
		}
		got, builds, err := cp.Statement(it.Statement)
		if err != nil {
			return fmt.Errorf("transaction %s: %w", w.t.GTID, err)
		}
		w.checkpoints = append(w.checkpoints, got...)
		w.builds = append(w.builds, builds...)
	}
	return nil
}

// filterCopied drops the changes of rows not copied yet (their chunk, later
// in the stream, carries them) from a body whose plans are known, and
// returns the rows the others change in tables being copied.
func filterCopied(cp Copy, body *txn.Body, plans []*plan.Table) (points []scheduler.Point, err error) {
	if cp == nil || !cp.Copying() {
		return nil, nil
	}
	changes := make([]txn.Change, 0, len(body.Changes))
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		out, keys, ok, err := cp.Filter(plans[i], body.Changes[it.First:it.Last])
		if err != nil {
			return nil, err
		}
		if !ok {
			out = body.Changes[it.First:it.Last]
		}
		for _, k := range keys {
			points = append(points, scheduler.Point{Table: plans[i].TableHash, Key: k})
		}
		it.First = len(changes)
		changes = append(changes, out...)
		it.Last = len(changes)
	}
	body.Changes = changes
	return points, nil
}

// runChunk writes a chunk (all the parts of a table copied in one pass)
// and commits it with its checkpoint; then it builds the indexes the copy
// deferred, if the chunk completed its table (Chunk.Build).
func (w *worker) runChunk(ctx context.Context, b *batch) error {
	wk := b.works[0]
	if wk.parts != nil {
		if err := w.commit.waitTurn(ctx, w, b); err != nil {
			return err
		}
	}
	w.sql.Collapse = false // OneByOne stays as diagnose set it
	if err := w.sql.Begin(); err != nil {
		return err
	}
	start := time.Now()
	c, rows := wk.chunk, 0
	for last := wk.parts == nil; ; {
		if !wk.skip {
			if err := w.sql.Chunk(wk.t, c); err != nil {
				return err
			}
			rows += len(c.Rows)
		}
		if last {
			break
		}
		p, err := w.nextPart(ctx, b, wk)
		if err != nil {
			return err
		}
		if p.Abort != nil {
			return fmt.Errorf("copy of %s.%s: %w", sqlquote.Name(c.Schema), sqlquote.Name(c.Table), p.Abort)
		}
		if p.Chunk == nil {
			return fmt.Errorf("copy of %s.%s: a part that is not copied rows", sqlquote.Name(c.Schema), sqlquote.Name(c.Table))
		}
		c, last = p.Chunk, p.Last
	}
	if err := w.sql.Finish(); err != nil {
		return err
	}
	for i := range wk.checkpoints {
		wk.checkpoints[i].Rows = rows
	}
	if err := w.commit.commit(ctx, w, b, commitOpts{force: !wk.skip}); err != nil {
		return err
	}
	w.stats.CopiedRows.Add(uint64(rows))
	if build := wk.chunk.Build; build != nil {
		if err := w.build(ctx, build); err != nil {
			return &builtError{err: err}
		}
		if err := position.CopyBuilt(ctx, w.meta, w.commit.stream, build.Schema, build.Table); err != nil {
			return &builtError{err: err}
		}
	}
	if w.copy != nil {
		w.copy.Committed(c, rows, time.Since(start))
	}
	return nil
}

// build adds a table's deferred indexes on the worker's connection. The
// table's definition then no longer needs the copy's word for its unique
// keys (schema.Cache.SetPending).
func (w *worker) build(ctx context.Context, b *txn.IndexBuild) error {
	if err := provision.Build(ctx, w.conn.conn, b, w.log); err != nil {
		return err
	}
	w.plans.Built(b.Schema, b.Table)
	return nil
}

// builtError is a failure after a chunk committed, building the indexes
// of its table: the chunk must not run again (its rows are in); the stream
// stops, and the next run builds what is missing before it starts.
type builtError struct{ err error }

func (e *builtError) Error() string { return e.err.Error() }
func (e *builtError) Unwrap() error { return e.err }

// describeChunk names a chunk in errors.
func describeChunk(c *txn.Chunk) string {
	return fmt.Sprintf("copied rows of %s.%s (snapshot at %s)", sqlquote.Name(c.Schema), sqlquote.Name(c.Table), c.Pos)
}
