package apply

import (
	"context"
	"fmt"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
)

// Large transactions. One held whole and larger than headBytes starts at
// the head; one sent in parts is added to the scheduler open (its writeset
// grows with its parts) and sealed at its last part. Neither stops the
// transactions after it from running beside it: only those that conflict
// with it wait.
const (
	// headBytes makes a held transaction start at the head.
	headBytes = 8 << 20
	// maxSetKeys bounds the keys one writeset holds (8 bytes each); a
	// transaction with more takes its tables whole instead.
	maxSetKeys = 1 << 19
)

// bound keeps a writeset within maxSetKeys; true when it took its tables
// whole instead.
func bound(s *scheduler.KeySet) bool {
	if len(s.Keys)+len(s.Shared) > maxSetKeys {
		s.Coarsen()
		return true
	}
	return false
}

// extendSet adds the changes of one part of a transaction sent in parts to
// its writeset (before the copy's filter, filterPart: unfiltered changes
// name at least the rows it writes).
func (c *coordinator) extendSet(ctx context.Context, w *work, body *txn.Body) error {
	if c.a.cfg.Mode != scheduler.ModeWriteset {
		return nil // the scheduler reads writesets in writeset mode only
	}
	plans, err := c.planItems(ctx, w.t, body)
	if err != nil {
		return err
	}
	for i, p := range plans {
		if p == nil {
			continue
		}
		it := &body.Items[i]
		for j := it.First; j < it.Last; j++ {
			c.ws.AddChange(&w.set, p, &body.Changes[j])
		}
		bound(&w.set)
	}
	return nil
}

// planItems returns the plan of each rows item of a part (nil for the
// other items).
func (c *coordinator) planItems(ctx context.Context, t *txn.Txn, body *txn.Body) ([]*plan.Table, error) {
	plans := make([]*plan.Table, len(body.Items))
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		p, err := c.a.plans.Get(ctx, it.Rows.Table)
		if err != nil {
			return nil, fmt.Errorf("transaction %s: %w", t.Describe(), err)
		}
		plans[i] = p
	}
	return plans, nil
}

// nextPart takes a later part of the transaction being streamed: its
// writeset grows, and at its last part the scheduler gets it (sealed), or,
// when a part held statements, keeps it as a barrier until it commits.
func (c *coordinator) nextPart(ctx context.Context, w *work, p *txn.Part) error {
	if p.Body.HasStatements() {
		w.statements = true
		if err := c.checkLaterPart(ctx, w, p); err != nil {
			return err
		}
	}
	if !w.unit.Open {
		return nil
	}
	if err := c.extendSet(ctx, w, &p.Body); err != nil {
		return err
	}
	if !w.statements {
		if err := c.filterPart(ctx, w.t, &p.Body); err != nil {
			return err
		}
	}
	if p.Last && p.Abort == nil && !w.statements && !w.t.Savepoints && !w.t.RolledBack && w.set.Barrier == "" {
		c.sched.Seal(&w.unit, &w.set)
	}
	return nil
}

// checkLaterPart refuses statement-logged DML in a later part of a
// transaction sent in parts that the first part's checks did not see.
func (c *coordinator) checkLaterPart(ctx context.Context, w *work, p *txn.Part) error {
	part := &work{t: w.t, body: p.Body}
	dml, err := c.checkStatementDML(ctx, part)
	if err != nil || !dml {
		return err
	}
	if cp := c.a.cfg.Copy; cp != nil && cp.Copying() {
		// The indexes a copy deferred are built before a transaction's
		// first statement; one in a later part comes too late for that.
		return fmt.Errorf("transaction %s is larger than --max-txn-bytes and holds row changes logged as statements while a copy "+
			"runs: raise --max-txn-bytes above its size, or let the copy finish first", w.t.Describe())
	}
	return nil
}
