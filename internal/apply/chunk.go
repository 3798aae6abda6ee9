package apply

import (
	"context"
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Copy is a copy in progress as the applier follows it (package copier's
// State): chunks of copied rows arrive in the stream among transactions,
// each where its snapshot falls. The coordinator calls it in stream order.
type Copy interface {
	// Copying reports whether some table is not completely copied yet.
	Copying() bool
	// Filter keeps the changes of a table being copied that apply to the
	// target (ok false: the table is not being copied).
	Filter(p *plan.Table, changes []txn.Change) (out []txn.Change, ok bool)
	// Sequenced records that a chunk took its place in the stream and
	// returns the table's checkpoint after it; skip: the chunk is not to be
	// written.
	Sequenced(c *txn.Chunk) (cp position.CopyProgress, skip bool, err error)
	// Statement follows a statement of the stream: the checkpoints it
	// changes, or why it cannot be applied during the copy.
	Statement(st *txn.Statement) ([]position.CopyProgress, error)
}

// addChunk puts a copied chunk into the scheduler. It takes its own table
// exclusively (every change of that table before it commits first, every
// one after it waits), and runs beside work on other tables. A chunk
// commits alone, with its checkpoint; a table copied in one pass arrives
// in parts and runs alone, like a transaction sent in parts.
func (c *coordinator) addChunk(p txn.Part) error {
	if c.a.cfg.Copy == nil {
		return fmt.Errorf("a chunk of copied rows of %s.%s, but no copy is running", p.Chunk.Schema, p.Chunk.Table)
	}
	cp, skip, err := c.a.cfg.Copy.Sequenced(p.Chunk)
	if err != nil {
		return err
	}
	w := &work{t: p.Txn, chunk: p.Chunk, skip: skip, added: time.Now()}
	if !skip {
		w.checkpoints = []position.CopyProgress{cp}
	}
	u := &w.unit
	u.Seq, u.Payload, u.Bytes, u.Solo = p.Txn.Seq, w, p.Bytes+256, true
	if !p.Last {
		w.parts = make(chan txn.Part, 1)
		c.streaming = w
		w.alone, u.Barrier = true, true
		c.alone++
		c.a.stats.addSerialized(AloneTooLarge)
	} else {
		w.set.Tables = append(w.set.Tables, writeset.TableAccess{
			Table: c.a.plans.TableHash(p.Chunk.Schema, p.Chunk.Table), Exclusive: true})
		u.Set = &w.set
	}
	c.sched.Add(u)
	c.inflight = append(c.inflight, inflightTxn{seq: p.Txn.Seq, t: p.Txn})
	return nil
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
		got, err := cp.Statement(it.Statement)
		if err != nil {
			return fmt.Errorf("transaction %s: %w", w.t.GTID, err)
		}
		w.checkpoints = append(w.checkpoints, got...)
	}
	return nil
}

// filterCopied drops the changes of rows not copied yet (their chunk, later
// in the stream, carries them) from a body whose plans are known.
func filterCopied(cp Copy, body *txn.Body, plans []*plan.Table) {
	if cp == nil || !cp.Copying() {
		return
	}
	changes := make([]txn.Change, 0, len(body.Changes))
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		out, ok := cp.Filter(plans[i], body.Changes[it.First:it.Last])
		if !ok {
			out = body.Changes[it.First:it.Last]
		}
		it.First = len(changes)
		changes = append(changes, out...)
		it.Last = len(changes)
	}
	body.Changes = changes
}

// runChunk writes a chunk (all the parts of a table copied in one pass)
// and commits it with its checkpoint.
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
	for {
		if !wk.skip {
			if err := w.sql.Chunk(wk.t, c); err != nil {
				return err
			}
			rows += len(c.Rows)
		}
		if wk.parts == nil || !c.More {
			break
		}
		p, err := w.nextPart(ctx, b, wk)
		if err != nil {
			return err
		}
		if p.Abort != nil {
			return fmt.Errorf("copy of %s.%s: %w", schema.QuoteName(c.Schema), schema.QuoteName(c.Table), p.Abort)
		}
		if p.Chunk == nil {
			return fmt.Errorf("copy of %s.%s: a part that is not copied rows", schema.QuoteName(c.Schema), schema.QuoteName(c.Table))
		}
		c = p.Chunk
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
	if c.Committed != nil {
		c.Committed(rows, time.Since(start))
	}
	return nil
}

// describeChunk names a chunk in errors.
func describeChunk(c *txn.Chunk) string {
	return fmt.Sprintf("copied rows of %s.%s (snapshot at %s)", schema.QuoteName(c.Schema), schema.QuoteName(c.Table), c.Pos)
}
