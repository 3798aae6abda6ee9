package apply

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/workload"
)

// TestAheadGivesWay: the first batch's last round trip waits for a row
// lock another session holds on the target and fails (lock wait timeout)
// while its worker holds the next batch, rendered ahead and chained on
// it (every transaction updates the same row). The next batch must be
// handed back unapplied: with one worker, a batch that waited for the
// failed one's retry would wait for itself, until the replay's deadline.
// Both run again and the target ends equal.
func TestAheadGivesWay(t *testing.T) {
	p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.hot (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO app.hot VALUES (1, 0)")
	p.src.ExecT(t, "BEGIN NOT ATOMIC FOR i IN 1..2000 DO UPDATE app.hot SET v = v + 1 WHERE id = 1; END FOR; END")

	ctx := context.Background()
	lock, err := p.dst.OpenT(t, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	for _, q := range []string{"BEGIN", "SELECT v FROM app.hot WHERE id = 1 FOR UPDATE"} {
		if _, err := lock.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_, err := lock.ExecContext(ctx, "ROLLBACK")
		released <- err
	}()
	st, err := p.replay(t, runOpts{workers: 1, maxBatch: 128, mode: scheduler.ModeWriteset, start: start, lockWait: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered ahead %d, handed back %d, retries %d", st.RenderedAhead.Load(), st.AheadGaveWay.Load(), retries(st))
	if st.AheadGaveWay.Load() == 0 {
		t.Fatal("no batch taken ahead was handed back: the test did not reach the case")
	}
	p.compare(t, "app")
}

// TestCommittingBatchIgnoresAbort: the lock-wait monitor acts on waits it
// read a moment before, and may abort the batch a connection runs now
// for a wait of the one it ran before. Once the batch holds the position
// lock with its turn come, its last round trip must still go out: an
// error without a server error code there leaves the commit's outcome
// unknown and stops the stream. Before it commits, an abort still stops
// the batch's next round trip, and abortBatch no longer aborts a
// committing batch.
func TestCommittingBatchIgnoresAbort(t *testing.T) {
	ctx := context.Background()
	pool := targetPool(t, dsn.ApplySession(true, 5))
	w, err := newWorker(ctx, workerConfig{pool: pool, stats: newStats(1), abortAll: make(chan struct{}), log: testutil.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.dropConn()
	b := &batch{abort: make(chan struct{})}
	w.cur.Store(b)
	w.ctx, w.batch = ctx, b
	if !w.abortBatch(b) {
		t.Fatal("abortBatch did not abort a batch that is not committing")
	}
	if _, err := w.send([]byte("SELECT 1"), nil); !errors.Is(err, errAborted) {
		t.Fatalf("aborted batch, not committing: send returned %v, want errAborted", err)
	}
	b.committing.Store(true)
	if _, err := w.send([]byte("SELECT 1"), nil); err != nil {
		t.Fatalf("aborted batch, committing: send returned %v, want nil", err)
	}
	b2 := &batch{abort: make(chan struct{})}
	b2.committing.Store(true)
	w.cur.Store(b2)
	if w.abortBatch(b2) {
		t.Fatal("abortBatch aborted a committing batch")
	}
}

// TestAheadHeldRoundTrips: with round trips of 8 KiB, merged batches take
// several round trips. A batch rendered ahead holds its full round trips,
// sent first when it is applied; with one worker and with two (idle
// workers take most batches there, so rendering ahead is rare), the target
// ends equal.
func TestAheadHeldRoundTrips(t *testing.T) {
	for _, workers := range []int{1, 2} {
		p := newPair(t)
		runWorkload(t, p, workload.Config{Seed: 11, Sessions: 6, Transactions: 2500})
		st, err := p.replay(t, runOpts{workers: workers, maxBatch: 64, mode: scheduler.ModeWriteset, maxRoundTrip: 8 << 10})
		if err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		t.Logf("%d workers: rendered ahead %d, round trips held %d, handed back %d", workers,
			st.RenderedAhead.Load(), st.HeldRoundTrips.Load(), st.AheadGaveWay.Load())
		if workers == 1 && st.HeldRoundTrips.Load() == 0 {
			t.Fatalf("%d workers: no round trip was held: the test did not reach the case", workers)
		}
		p.compare(t, "wl")
	}
}
