package txn

import (
	"context"
	"errors"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/binlog/binlogtest"
	"github.com/binlane/binlane/internal/gtid"
)

// script is a Source that plays events, then returns err; before playing
// event i it runs hooks[i].
type script struct {
	evs   []*binlog.Event
	hooks map[int]func()
	err   error
	i     int
}

func (s *script) Next(ctx context.Context) (binlog.Message, error) {
	if h := s.hooks[s.i]; h != nil {
		h()
	}
	if s.i >= len(s.evs) {
		return binlog.Message{}, s.err
	}
	s.i++
	return binlog.Message{Event: s.evs[s.i-1]}, nil
}

func gtidEv(seq uint64) *binlog.Event {
	return &binlog.Event{File: "b.1", Pos: seq * 100, Header: binlog.Header{Timestamp: 1, EventSize: 10},
		Data: &binlog.MariaGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MariaDB, Domain: 0, ServerID: 1, Seq: seq}}}
}

func queryEv(q string) *binlog.Event {
	return &binlog.Event{File: "b.1", Header: binlog.Header{Timestamp: 1, EventSize: 10}, Data: &binlog.QueryEvent{Query: []byte(q)}}
}

func xidEv() *binlog.Event {
	return &binlog.Event{File: "b.1", Header: binlog.Header{Timestamp: 1, EventSize: 10}, Data: &binlog.XIDEvent{}}
}

// drain returns the parts in the pipe.
func drain(p *Pipe) []Part {
	p.Close()
	var out []Part
	for part := range p.C() {
		out = append(out, part)
	}
	return out
}

// TestStopWhileHandingOver stops the assembler (ctx cancelled) exactly when
// it hands a completed transaction to the applier. The transaction must
// not reach the applier in any form: it was not delivered, so the stream
// restarts before it. (It once arrived as a lone "last part" with an empty
// body, which the applier committed: the transaction's position advanced
// and its rows were lost.)
func TestStopWhileHandingOver(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	src := &script{evs: []*binlog.Event{gtidEv(1), queryEv("BEGIN"), xidEv(), gtidEv(2), queryEv("BEGIN"), xidEv()},
		hooks: map[int]func(){5: cancel}, err: context.Canceled}
	pipe := NewPipe(1 << 20)
	err := NewAssembler(src, Config{}).Run(ctx, pipe)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	parts := drain(pipe)
	if len(parts) != 1 || !parts[0].Whole() || parts[0].Txn.GTID.Seq != 1 {
		for _, p := range parts {
			t.Logf("part: gtid %s first %v last %v abort %v", p.Txn.GTID, p.First, p.Last, p.Abort)
		}
		t.Fatalf("got %d parts; want only transaction 1, whole", len(parts))
	}
}

// TestRestartDropsPartial checks that a reconnect in the middle of a
// transaction the applier has not seen drops it and numbers the resent one
// like the first try.
func TestRestartDropsPartial(t *testing.T) {
	msgs := []binlog.Message{
		{Event: gtidEv(1)}, {Event: queryEv("BEGIN")}, {Restart: &binlog.Restart{Reason: "test"}},
		{Event: gtidEv(1)}, {Event: queryEv("BEGIN")}, {Event: xidEv()},
	}
	i := 0
	src := sourceFunc(func(ctx context.Context) (binlog.Message, error) {
		if i == len(msgs) {
			return binlog.Message{}, context.Canceled
		}
		i++
		return msgs[i-1], nil
	})
	pipe := NewPipe(1 << 20)
	_ = NewAssembler(src, Config{}).Run(context.Background(), pipe)
	parts := drain(pipe)
	if len(parts) != 1 || parts[0].Txn.Seq != 1 || !parts[0].Whole() {
		t.Fatalf("got %d parts (%+v); want transaction seq 1 once", len(parts), parts)
	}
}

type sourceFunc func(ctx context.Context) (binlog.Message, error)

func (f sourceFunc) Next(ctx context.Context) (binlog.Message, error) { return f(ctx) }

// TestEveryEventKindAnswered: handle has a case for every kind of event
// the decoder makes, if only to say why it ignores it.
func TestEveryEventKindAnswered(t *testing.T) {
	binlogtest.RequireAnswered(t, "assembler.go", "handle")
}
