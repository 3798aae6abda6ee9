package replica

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/binlane/binlane/internal/binlog"
)

// eventOverhead is added to an event's raw size in queue accounting, so a
// flood of tiny events is bounded too.
const eventOverhead = 256

// queue carries decoded events (and restarts) from the reader goroutine to Next. It is
// bounded in bytes rather than events: one 1 GiB row event and a million
// small ones must both fit in memory. It has exactly one producer and one
// consumer.
type queue struct {
	max int
	mu  sync.Mutex
	// ring holds n entries from head, wrapping (guarded by mu); its length
	// is a power of two. A slice whose head moved forward was copied whole
	// every time its end filled: 8% of the reader's CPU with a backlog,
	// when the queue stays full.
	ring     []entry
	head, n  int
	bytes    int           // guarded by mu; sum of sizes
	err      error         // guarded by mu; set once by close
	notEmpty chan struct{} // capacity 1: "an item was pushed"
	notFull  chan struct{} // capacity 1: "room was made"
	done     chan struct{} // closed by close
	// blocked is set while push waits at the bound: the stream's watchdog
	// does not count that time as the source's silence.
	blocked atomic.Bool

	// The consumer's side, touched only by pop: the events it took from
	// the ring at once (out, served from next), whose outBytes stay counted
	// in bytes until it takes the next ones.
	out      []entry
	next     int
	outBytes int
}

// popBatch is the most events pop takes from the ring under one lock.
// Taking one at a time cost a lock and a signal per event, and with the
// queue at its bound under a backlog, a wake-up of the reader for each
// event it could add.
const popBatch = 64

func newQueue(max int) *queue {
	return &queue{max: max, notEmpty: make(chan struct{}, 1), notFull: make(chan struct{}, 1), done: make(chan struct{})}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// push adds ev, waiting while the queue is over its bound. An event larger
// than the bound is let in when the queue is empty.
func (q *queue) push(ctx context.Context, m binlog.Message, size int) error {
	size += eventOverhead
	for {
		q.mu.Lock()
		if q.err != nil {
			q.mu.Unlock()
			return q.err
		}
		if q.bytes == 0 || q.bytes+size <= q.max {
			if q.n == len(q.ring) {
				q.grow()
			}
			q.ring[(q.head+q.n)&(len(q.ring)-1)] = entry{m: m, size: size}
			q.n++
			q.bytes += size
			q.mu.Unlock()
			signal(q.notEmpty)
			return nil
		}
		q.mu.Unlock()
		q.blocked.Store(true)
		select {
		case <-q.notFull:
		case <-q.done:
		case <-ctx.Done():
			q.blocked.Store(false)
			return context.Cause(ctx)
		}
		q.blocked.Store(false)
	}
}

// pop returns the oldest event; once the queue is closed and drained, the
// error it was closed with.
func (q *queue) pop(ctx context.Context) (binlog.Message, error) {
	if q.next < len(q.out) {
		m := q.out[q.next].m
		q.out[q.next] = entry{} // not kept reachable
		q.next++
		return m, nil
	}
	for {
		q.mu.Lock()
		// Room made at three quarters of the bound or less wakes the
		// producer: waiting at the bound, it then adds a quarter of it in
		// one go, not one event per wake-up. An event fits by then or
		// waits for more room: each take below the mark signals again,
		// down to the empty queue that lets any event in.
		wake := q.outBytes > 0 && q.bytes-q.outBytes <= q.max-q.max/4
		q.bytes -= q.outBytes
		q.outBytes = 0
		if q.n > 0 {
			q.take()
			q.mu.Unlock()
			if wake {
				signal(q.notFull)
			}
			m := q.out[0].m
			q.out[0], q.next = entry{}, 1
			return m, nil
		}
		err := q.err
		q.mu.Unlock()
		if wake {
			signal(q.notFull)
		}
		if err != nil {
			return binlog.Message{}, err
		}
		select {
		case <-q.notEmpty:
		case <-q.done:
		case <-ctx.Done():
			return binlog.Message{}, ctx.Err()
		}
	}
}

// take moves up to popBatch of the oldest events from the ring to out
// (q.mu held).
func (q *queue) take() {
	k := min(q.n, popBatch)
	q.out = q.out[:0]
	for range k {
		e := q.ring[q.head]
		q.out = append(q.out, e)
		q.outBytes += e.size
		q.ring[q.head] = entry{}
		q.head = (q.head + 1) & (len(q.ring) - 1)
	}
	q.n -= k
	if q.n == 0 && len(q.ring) > keptRing {
		// A burst of tiny events grew the ring: let it go.
		q.ring, q.head = nil, 0
	}
}

// entry is a queued message and its size in the queue's accounting.
type entry struct {
	m    binlog.Message
	size int
}

// keptRing is the ring length an empty queue keeps.
const keptRing = 4 << 10

// grow doubles the ring, its entries moved to the front in order.
func (q *queue) grow() {
	ring := make([]entry, max(64, 2*len(q.ring)))
	for i := 0; i < q.n; i++ {
		ring[i] = q.ring[(q.head+i)&(len(q.ring)-1)]
	}
	q.ring, q.head = ring, 0
}

// close ends the queue with err (the first close wins): pop returns the
// remaining events, then err; push fails at once.
func (q *queue) close(err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return
	}
	q.err = err
	close(q.done)
}
