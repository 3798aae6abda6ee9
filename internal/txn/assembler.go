package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/replica"
)

// Source yields decoded events in stream order (a replica.Stream, or a
// file reader for replays and tests).
type Source interface {
	Next(ctx context.Context) (*binlog.Event, error)
}

// Config tunes an Assembler.
type Config struct {
	Rules filter.Rules
	// MaxTxnBytes is the size beyond which a transaction is streamed to the
	// applier in parts instead of being held whole (default 64 MiB).
	MaxTxnBytes int
	// StopAt ends the stream right after the transaction that makes the
	// position contain it (empty: never).
	StopAt gtid.Set
	// Start is the position the stream starts after, to evaluate StopAt.
	Start  gtid.Set
	Logger *slog.Logger
}

// ErrStopped is returned by Run after the StopAt transaction was delivered.
var ErrStopped = errors.New("stop position reached")

// Assembler groups events into transactions.
type Assembler struct {
	src    Source
	cfg    Config
	log    *slog.Logger
	seq    uint64
	pos    gtid.Set // running position, to detect StopAt
	cur    *Txn
	body   *Body // where changes go: &cur.Body, or the part being filled
	values []binlog.Value
	bytes  int // held by the current part
	out    chan<- *Txn
	// selected caches the filter's verdict per table map.
	tableSel map[*binlog.TableMap]bool
	inTrx    bool // BEGIN seen (or a transactional MariaDB GTID)
	single   bool // standalone group: ends after its statement
	// Source liveness, readable from other goroutines (metrics, status).
	lastEvent     atomic.Int64 // unix nanos when the last event arrived
	lastSourceTS  atomic.Int64 // timestamp of the last event written by the source
	lastHeartbeat atomic.Int64
}

// NewAssembler reads events from src.
func NewAssembler(src Source, cfg Config) *Assembler {
	if cfg.MaxTxnBytes <= 0 {
		cfg.MaxTxnBytes = 64 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Assembler{src: src, cfg: cfg, log: cfg.Logger, pos: cfg.Start.Clone(), tableSel: map[*binlog.TableMap]bool{}}
}

// Liveness reports when the last event and heartbeat arrived and the
// source timestamp of the last real event (zero times when none).
func (a *Assembler) Liveness() (lastEvent, lastHeartbeat, sourceTS time.Time) {
	conv := func(n int64) time.Time {
		if n == 0 {
			return time.Time{}
		}
		return time.Unix(0, n)
	}
	return conv(a.lastEvent.Load()), conv(a.lastHeartbeat.Load()), conv(a.lastSourceTS.Load())
}

// Run reads events until ctx ends, the source fails, or StopAt is reached
// (ErrStopped), sending each complete transaction to out in order.
func (a *Assembler) Run(ctx context.Context, out chan<- *Txn) error {
	a.out = out
	for {
		ev, err := a.src.Next(ctx)
		if err != nil {
			a.abortPart(err)
			return err
		}
		done, err := a.handle(ctx, ev)
		if err != nil {
			a.abortPart(err)
			return err
		}
		if done == nil {
			continue
		}
		if done.More != nil {
			close(done.More)
		} else if err := send(ctx, out, done); err != nil {
			return err
		}
		if done.GTID.Flavor != 0 {
			a.pos.Add(done.GTID)
			if !a.cfg.StopAt.IsEmpty() && a.pos.ContainsSet(a.cfg.StopAt) {
				return ErrStopped
			}
		}
	}
}

func send[T any](ctx context.Context, ch chan<- T, v T) error {
	select {
	case ch <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// abortPart tells the applier of a streamed transaction that its rest will
// not come.
func (a *Assembler) abortPart(err error) {
	if a.cur != nil && a.cur.More != nil {
		select {
		case a.cur.More <- Body{Err: err}:
		default:
		}
		close(a.cur.More)
	}
	a.cur = nil
}

// handle processes one event and returns a transaction when the event
// completed one.
func (a *Assembler) handle(ctx context.Context, ev *binlog.Event) (*Txn, error) {
	if ev.Header.Timestamp != 0 && a.cur == nil {
		// Once per transaction (at its first event), not per event: a clock
		// read per event shows in profiles.
		a.lastEvent.Store(time.Now().UnixNano())
		a.lastSourceTS.Store(int64(ev.Header.Timestamp) * int64(time.Second))
	}
	switch d := ev.Data.(type) {
	case *replica.Restart:
		if a.cur != nil {
			a.log.Info("discarding partial transaction after reconnect", "gtid", a.cur.GTID.String(), "reason", d.Reason)
			if a.cur.More != nil {
				return nil, fmt.Errorf("source connection lost in the middle of streamed transaction %s: %s", a.cur.GTID, d.Reason)
			}
		}
		a.cur, a.inTrx, a.single = nil, false, false
		return nil, nil
	case *binlog.HeartbeatEvent:
		now := time.Now().UnixNano()
		a.lastHeartbeat.Store(now)
		a.lastEvent.Store(now)
		return nil, nil
	case *binlog.MariaGTIDEvent:
		return nil, a.startMaria(ev, d)
	case *binlog.MySQLGTIDEvent:
		return nil, a.startMySQL(ev, d)
	case *binlog.QueryEvent:
		return a.query(ctx, ev, d)
	case *binlog.XIDEvent:
		return a.end(ctx, ev)
	case *binlog.XAPrepareEvent:
		// Applied as a commit at prepare time; see Statement handling of XA.
		return a.end(ctx, ev)
	case *binlog.RowsEvent:
		return nil, a.rows(ctx, ev, d)
	case *binlog.IncidentEvent:
		return nil, fmt.Errorf("source binlog %s:%d: incident event %d (%s): the source lost events; replication cannot continue safely",
			ev.File, ev.Pos, d.Incident, d.Message)
	case *binlog.TransactionPayloadEvent:
		return a.payload(ctx, ev, d)
	}
	return nil, nil
}

func (a *Assembler) begin(ev *binlog.Event, g gtid.GTID) error {
	if a.cur != nil {
		return fmt.Errorf("source binlog %s:%d: transaction %s starts before %s ended", ev.File, ev.Pos, g, a.cur.GTID)
	}
	a.seq++
	a.cur = &Txn{Seq: a.seq, GTID: g, File: ev.File}
	a.body = &a.cur.Body
	a.values, a.bytes = nil, 0
	a.inTrx, a.single = false, false
	return nil
}

func (a *Assembler) startMaria(ev *binlog.Event, g *binlog.MariaGTIDEvent) error {
	if err := a.begin(ev, g.GTID); err != nil {
		return err
	}
	a.cur.CommitID = g.CommitID
	a.cur.Waited = g.Flags2&binlog.MariaFlWaited != 0
	a.single = g.Standalone()
	return nil
}

func (a *Assembler) startMySQL(ev *binlog.Event, g *binlog.MySQLGTIDEvent) error {
	if err := a.begin(ev, g.GTID); err != nil {
		return err
	}
	a.cur.LastCommitted, a.cur.SequenceNumber = g.LastCommitted, g.SequenceNumber
	// A MySQL group without BEGIN is a single DDL statement.
	a.single = true
	return nil
}

// end closes the current group at ev.
func (a *Assembler) end(ctx context.Context, ev *binlog.Event) (*Txn, error) {
	t := a.cur
	if t == nil {
		return nil, fmt.Errorf("source binlog %s:%d: %s event outside a transaction", ev.File, ev.Pos, ev.Header.Type)
	}
	if t.More != nil && len(a.body.Items) > 0 {
		// The last part; Run closes the channel after setting nothing more.
		if err := send(ctx, t.More, *a.body); err != nil {
			return nil, err
		}
	}
	// For a streamed transaction the applier reads these after More is
	// closed, which orders the writes before its reads.
	t.File, t.EndPos, t.Timestamp = ev.File, ev.NextPos(), ev.Header.Timestamp
	a.cur, a.body = nil, nil
	return t, nil
}

// payload handles MySQL's compressed transaction envelope by replaying its
// inner events.
func (a *Assembler) payload(ctx context.Context, ev *binlog.Event, p *binlog.TransactionPayloadEvent) (*Txn, error) {
	var done *Txn
	for _, inner := range p.Events {
		inner.File, inner.Pos = ev.File, ev.Pos
		inner.Header.EventSize = ev.Header.EventSize
		t, err := a.handle(ctx, inner)
		if t != nil && t.More == nil {
			t.EndPos = ev.NextPos()
		}
		if err != nil {
			return nil, err
		}
		if t != nil {
			done = t
		}
	}
	return done, nil
}
