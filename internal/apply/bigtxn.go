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

// takePart takes a part of a transaction sent in parts, in stream order:
// its changes join the writeset unfiltered (they name at least the rows it
// writes), then the copy's filter drops those of rows not copied yet, as
// filterCopied does for whole transactions. The worker must not be left
// to filter (as it is for a barrier, which holds back what follows it):
// once the last part is relayed the coordinator takes the transactions
// and chunks after it, and the coverage of a chunk sequenced meanwhile
// would keep changes whose rows that chunk carries, or drop changes of
// rows it does not. A transaction with statements is left to the worker
// (its tables may not be planned yet); the filter it applies again finds
// nothing more to drop.
func (c *coordinator) takePart(ctx context.Context, w *work, body *txn.Body) error {
	writeset := c.a.cfg.Mode == scheduler.ModeWriteset // the scheduler reads writesets in writeset mode only
	cp := c.a.cfg.Copy
	filter := cp != nil && cp.Copying() && !w.statements
	if !writeset && !filter {
		return nil
	}
	plans, err := c.planItems(ctx, w.t, body)
	if err != nil {
		return err
	}
	if writeset {
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
	}
	if filter {
		if _, err := filterCopied(cp, body, plans); err != nil {
			return fmt.Errorf("transaction %s: %w", w.t.Describe(), err)
		}
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
	if err := c.takePart(ctx, w, &p.Body); err != nil {
		return err
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
