package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
)

// errLockLost stops a run whose stream lock's connection broke: another
// process could take the stream; the run restarts and takes the lock again
// (or finds the stream busy).
var errLockLost = errors.New("lost the stream lock on the target")

// watch checks, every WatchPeriod, that this process still holds the
// stream lock and that no trigger appeared on a replicated target table
// (triggers added while replicating would fire on replicated rows); either
// stops the run through stop.
func (r *run) watch(ctx context.Context, stop context.CancelCauseFunc) {
	tick := time.NewTicker(r.cfg.WatchPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := r.lock.Check(ctx); err != nil && ctx.Err() == nil {
			stop(fmt.Errorf("%w: %w", errLockLost, err))
			return
		}
		if r.cfg.AllowTriggers {
			continue
		}
		if table, err := triggeredTable(ctx, r.meta, r.cfg); err != nil && ctx.Err() == nil {
			r.log.Warn("could not check the target's triggers", "error", err)
		} else if table != "" {
			stop(&plan.TriggerError{Table: table})
			return
		}
	}
}

// triggeredTable returns a replicated target table with a trigger, if any.
func triggeredTable(ctx context.Context, meta *sql.DB, cfg Config) (string, error) {
	return schema.TriggeredTable(ctx, meta, cfg.Rules)
}
