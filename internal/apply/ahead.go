package apply

import (
	"context"
	"errors"
	"runtime"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
)

// Rendering ahead. A worker's target connection idles while the worker
// renders a batch: with one worker and a backlog, a tenth to a quarter of
// the drain (the target's core 74-82% busy, pinned). So while the last
// round trip of a batch runs (its rows, position and COMMIT), the worker
// offers to take its next batch, and renders it into its second writer.
// Full round trips of the batch rendered ahead are held (rowsql's Hold)
// and sent first when it is applied.
// The next batch is sent only once the first one's round trip answered,
// on the same connection: nothing reaches the target earlier or in another
// order than without rendering ahead, and a batch rendered ahead commits
// after the one before it as any later batch does.
//
// What keeps it simple and safe:
//   - Rendering ahead never sends: the spare writer holds its full round
//     trips and its sink refuses (errAhead); a batch too large to hold
//     (rowsql.ErrHoldFull) is dropped and rendered again when it is
//     applied.
//   - The last round trip's bookkeeping (the sequencer, the position lock)
//     runs in the goroutine that sent it, as soon as it answers: other
//     workers' turns never wait for the rendering.
//   - A worker that offered gets only a batch that starts at the earliest
//     pending unit (scheduler.NextInOrder): every unit before it is
//     dispatched or committed, so nothing it waits for needs this worker.
//     And only a complete one (it cannot grow any more): a smaller merged
//     commit would cost the target more.
//   - If the batch fails, the one taken ahead is handed back unapplied
//     (retryAborted) before anything else: it may be chained on the failed
//     one, and the failed one's retry needs this worker's connection. The
//     coordinator also makes it give way when a batch before it was
//     requeued meanwhile (scheduler.PendingBefore; see coordinator.report).
//   - The coordinator counts a worker that offered as idle only after
//     every truly idle worker (see coordinator.report).
//
// Rendering during a batch's first round trip of rows instead (for a batch
// of 1 MiB or more the last round trip holds only the position and COMMIT)
// was tried and removed: no gain the benchmark could tell, the target's
// CPU per transaction on wide rows up to 15% higher in some runs, and it is
// safe only at the head (a batch waiting for its turn while its worker
// holds the next one deadlocked with a requeued batch).

// errAhead: a writer rendering ahead must not send.
var errAhead = errors.New("rendering ahead: nothing may be sent")

// lane is the sink of one of a worker's two writers.
type lane struct {
	w  *worker
	wr *rowsql.Writer
	// ahead: the writer renders a batch ahead; it must not send.
	ahead bool
}

func (l *lane) Send(sqlText []byte, stmts []rowsql.Stmt) ([]int64, error) {
	if l.ahead {
		return nil, errAhead
	}
	return l.w.send(sqlText, stmts)
}

// spare is the lane of the writer not in use.
func (w *worker) spare() *lane {
	if w.lanes[0].wr == w.sql {
		return w.lanes[1]
	}
	return w.lanes[0]
}

// lastAhead runs a batch's last round trip (last) in a goroutine of its
// own and, meanwhile, takes the worker's next batch if the coordinator has
// one, and renders it.
func (w *worker) lastAhead(ctx context.Context, last func() error, tail *position.Tail) error {
	if !w.renderAhead || w.offered || w.next != nil || w.closed {
		return last()
	}
	w.offered = true
	done := make(chan error, 1)
	go func() { done <- last() }()
	// With one core for binlane (GOMAXPROCS 1) the round trip would
	// otherwise start only once this goroutine blocks, after rendering.
	runtime.Gosched()
	w.offer()
	select {
	case err := <-done:
		return err
	case b, ok := <-w.jobs:
		if !ok {
			w.closed = true
		} else {
			w.next = b
			w.prerender(ctx, b)
			w.sendAhead(ctx, b, tail)
		}
	}
	err := <-done
	if w.pipeline {
		w.conn.unqueue()
	}
	return err
}

// aheadable reports whether a batch may be rendered ahead: rows of
// transactions that are neither alone nor waiting for the head.
func aheadable(b *batch) bool {
	wk := b.works[0]
	return wk.chunk == nil && wk.t.XA == nil && wk.parts == nil && !wk.statements && !b.units[0].HeadOnly()
}

// prerender renders b into the spare writer; b.ahead says whether it
// did. Failures are not reported: the batch is rendered again when it is
// applied, and fails there with its error.
func (w *worker) prerender(ctx context.Context, b *batch) {
	if !aheadable(b) || ctx.Err() != nil {
		return
	}
	l := w.spare()
	l.ahead, l.wr.Hold = true, true
	l.wr.Collapse, l.wr.OneByOne, l.wr.Runs = w.collapse, false, true
	err := w.render(l.wr, b)
	if err == nil && w.pipeline {
		// The rows in a round trip of their own, which sendAhead can
		// send before the commit before it answers.
		err = l.wr.Flush()
	}
	l.ahead, l.wr.Hold = false, false
	if err != nil {
		l.wr.Discard()
		return
	}
	b.ahead = true
	w.stats.RenderedAhead.Add(1)
	w.stats.HeldRoundTrips.Add(uint64(l.wr.Held()))
}

// sendAhead sends the first round trip of b, rendered ahead, while the
// round trip committing the batch before it (tail) is still in flight on
// the connection, behind a guard that stops it unless that commit
// succeeded (position.AppendCommittedGuard). The target then starts b as
// soon as it committed the batch before, instead of idling until binlane
// has read the answer, been scheduled and sent b (with binlane on one core
// a busy goroutine delays the read up to a 10 ms time slice). Only with
// one worker: the batch before b is then the only one b follows, and it
// runs on the same connection. A round trip sent ahead and not used (b
// given up) is undone before the connection runs anything else
// (wiresql.Conn.Settle).
func (w *worker) sendAhead(ctx context.Context, b *batch, tail *position.Tail) {
	if !w.pipeline || !b.ahead || tail == nil {
		return
	}
	buf, ok := w.spare().wr.FirstHeld()
	if !ok {
		return
	}
	w.guard = position.AppendCommittedGuard(w.guard[:0], tail.Stream, tail.Save.GTID)
	w.conn.presend(ctx, b, w.guard, buf)
}

// dropAhead forgets a batch taken ahead that will not be applied.
func (w *worker) dropAhead(b *batch) {
	w.conn.forgetAhead(b)
	if b.ahead {
		w.spare().wr.Discard()
		b.ahead = false
	}
}
