package replica

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
)

func TestQueueBoundsBytes(t *testing.T) {
	q := newQueue(3 * (100 + eventOverhead))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if err := q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: uint64(i)}}, 100); err != nil {
			t.Fatal(err)
		}
	}
	// The fourth waits for room.
	pushed := make(chan error, 1)
	go func() { pushed <- q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: 3}}, 100) }()
	select {
	case err := <-pushed:
		t.Fatalf("push over the bound returned %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	for i := 0; i < 4; i++ {
		m, err := q.pop(ctx)
		if err != nil || m.Event.Pos != uint64(i) {
			ev := m.Event
			t.Fatalf("pop %d: %v %v", i, ev, err)
		}
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
	// An event larger than the bound passes when the queue is empty (and
	// the events the consumer took are no longer counted: it takes the
	// next ones).
	go func() { pushed <- q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: 9}}, 1<<20) }()
	if m, _ := q.pop(ctx); m.Event.Pos != 9 {
		t.Fatal("big event lost")
	}
	if err := <-pushed; err != nil {
		t.Fatal(err)
	}
}

func TestQueueCloseDrainsThenFails(t *testing.T) {
	q := newQueue(1 << 20)
	ctx := context.Background()
	q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: 1}}, 10)
	q.close(io.EOF)
	q.close(errors.New("second close is ignored"))
	if m, err := q.pop(ctx); err != nil || m.Event.Pos != 1 {
		t.Fatalf("queued event lost: %v", err)
	}
	if _, err := q.pop(ctx); err != io.EOF {
		t.Fatalf("after drain: %v", err)
	}
	if err := q.push(ctx, binlog.Message{Event: &binlog.Event{}}, 1); err != io.EOF {
		t.Fatalf("push after close: %v", err)
	}
	// A blocked pop wakes up on close and on cancellation.
	q2 := newQueue(10)
	go func() { time.Sleep(20 * time.Millisecond); q2.close(ErrClosed) }()
	if _, err := q2.pop(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("blocked pop: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := newQueue(10).pop(cctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled pop: %v", err)
	}
}

// TestQueueRingOrder: events come out in the order they went in while the
// ring wraps and grows, and the byte count returns to zero.
func TestQueueRingOrder(t *testing.T) {
	q := newQueue(1 << 30)
	ctx := context.Background()
	next, want := 0, 0
	for round := 1; round <= 300; round++ {
		for i := 0; i < round%97; i++ { // uneven bursts: wraps at every ring size
			if err := q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: uint64(next)}}, 7); err != nil {
				t.Fatal(err)
			}
			next++
		}
		for i := 0; i < round%89 && want < next; i++ {
			m, err := q.pop(ctx)
			if err != nil || m.Event.Pos != uint64(want) {
				t.Fatalf("pop: got %v (%v), want position %d", m.Event, err, want)
			}
			want++
		}
	}
	for want < next {
		if m, _ := q.pop(ctx); m.Event.Pos != uint64(want) {
			t.Fatalf("drain: got %d, want %d", m.Event.Pos, want)
		}
		want++
	}
	// The events the last pop took stay counted until the next one.
	if q.bytes != q.outBytes || q.n != 0 || q.next != len(q.out) {
		t.Errorf("drained queue holds %d bytes (%d handed out), %d events", q.bytes, q.outBytes, q.n)
	}
}

// TestQueueWakesProducerBelowThreeQuarters: a producer waiting at the
// bound is woken once the consumer made room down to three quarters of
// it, not at every event, and events handed out stay counted until the
// consumer takes the next ones.
func TestQueueWakesProducerBelowThreeQuarters(t *testing.T) {
	const size, events = 100, 400
	q := newQueue(events * (size + eventOverhead))
	ctx := context.Background()
	for i := range events {
		if err := q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: uint64(i)}}, size); err != nil {
			t.Fatal(err)
		}
	}
	pushed := make(chan error, 1)
	go func() { pushed <- q.push(ctx, binlog.Message{Event: &binlog.Event{Pos: events}}, size) }()
	waiting := func(popped int) {
		t.Helper()
		select {
		case err := <-pushed:
			t.Fatalf("the producer pushed after %d of %d events were popped (%v)", popped, events, err)
		case <-time.After(30 * time.Millisecond):
		}
	}
	waiting(0)
	popped := 0
	for ; popped < events/4; popped++ {
		if m, err := q.pop(ctx); err != nil || m.Event.Pos != uint64(popped) {
			t.Fatalf("pop %d: %v %v", popped, m.Event, err)
		}
	}
	// A quarter handed out, but the last of them still counted.
	waiting(popped)
	for ; popped <= events/4+popBatch; popped++ {
		if _, err := q.pop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-pushed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the producer still waits with %d of %d events popped", popped, events)
	}
}

// BenchmarkQueue hands small events from a producer goroutine to the
// consumer through a full queue, as a backlog does: the consumer works on
// each event (as the assembler does), the producer outruns it, and the
// queue stays at its bound.
func BenchmarkQueue(b *testing.B) {
	q := newQueue(DefaultQueueBytes)
	ctx := context.Background()
	ev := &binlog.Event{}
	go func() {
		for i := 0; i < b.N; i++ {
			if err := q.push(ctx, binlog.Message{Event: ev}, 200); err != nil {
				return
			}
		}
		q.close(io.EOF)
	}()
	b.ResetTimer()
	sum := 0
	for {
		if _, err := q.pop(ctx); err != nil {
			break
		}
		for i := range 100 { // the consumer's work on an event
			sum = sum*31 + i
		}
	}
	queueSink = sum
}

// queueSink keeps BenchmarkQueue's work from being optimized away.
var queueSink int
