package replicate

import (
	"context"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/throttle"
	"github.com/binlane/binlane/internal/txn"
)

// gateBytes bounds what the gate holds itself: it only relays, the pipe
// before it is the queue.
const gateBytes = 1 << 20

// gate holds the applier's intake while the throttle says so: each source
// transaction waits for it before it goes on (to the copy's merger, then
// the applier). The later parts of a transaction let through, and
// everything once the run stops (ctx), pass without waiting: a stop drains
// what the source sent. send is the applier's context; once it ends the
// gate only empties from. It runs in g, whose owner waits for it.
func gate(g *errgroup.Group, ctx, send context.Context, t *throttle.Throttle, from *txn.Pipe) *txn.Pipe {
	out := txn.NewPipe(gateBytes)
	waitCtx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(send, cancel)
	g.Go(func() error {
		defer out.Close()
		defer stop()
		defer cancel()
		for p := range from.C() {
			from.Taken(&p)
			if p.First && p.Txn != nil && waitCtx.Err() == nil {
				_ = t.Wait(waitCtx) // ends early only on a stop, and the part still goes on
			}
			if err := out.Send(send, p); err != nil {
				for p := range from.C() { // the applier is gone
					from.Taken(&p)
				}
				return nil
			}
		}
		return nil
	})
	return out
}
