package replica

import (
	"context"
	"sync"
)

// eventOverhead is added to an event's raw size in queue accounting, so a
// flood of tiny events is bounded too.
const eventOverhead = 256

// queue carries decoded events (and restarts) from the reader goroutine to Next. It is
// bounded in bytes rather than events: one 1 GiB row event and a million
// small ones must both fit in memory. It has exactly one producer and one
// consumer.
type queue struct {
	max      int
	mu       sync.Mutex
	items    []Message     // guarded by mu; head at index 0
	sizes    []int         // guarded by mu; parallel to items
	bytes    int           // guarded by mu; sum of sizes
	err      error         // guarded by mu; set once by close
	notEmpty chan struct{} // capacity 1: "an item was pushed"
	notFull  chan struct{} // capacity 1: "an item was popped"
	done     chan struct{} // closed by close
}

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
func (q *queue) push(ctx context.Context, m Message, size int) error {
	size += eventOverhead
	for {
		q.mu.Lock()
		if q.err != nil {
			q.mu.Unlock()
			return q.err
		}
		if q.bytes == 0 || q.bytes+size <= q.max {
			q.items = append(q.items, m)
			q.sizes = append(q.sizes, size)
			q.bytes += size
			q.mu.Unlock()
			signal(q.notEmpty)
			return nil
		}
		q.mu.Unlock()
		select {
		case <-q.notFull:
		case <-q.done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// pop returns the oldest event; once the queue is closed and drained, the
// error it was closed with.
func (q *queue) pop(ctx context.Context) (Message, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			m := q.items[0]
			q.bytes -= q.sizes[0]
			q.items[0] = Message{}
			q.items, q.sizes = q.items[1:], q.sizes[1:]
			if len(q.items) == 0 {
				// Let the backing arrays go rather than creep forward.
				q.items, q.sizes = nil, nil
			}
			q.mu.Unlock()
			signal(q.notFull)
			return m, nil
		}
		err := q.err
		q.mu.Unlock()
		if err != nil {
			return Message{}, err
		}
		select {
		case <-q.notEmpty:
		case <-q.done:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
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
