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
	"github.com/binlane/binlane/internal/redact"
)

// Source yields what the assembler consumes, in stream order: binlog
// events, and a restart after the source connection was re-established (a
// replica.Stream, or a file reader for replays and tests).
type Source interface {
	Next(ctx context.Context) (binlog.Message, error)
}

// Config tunes an Assembler.
type Config struct {
	Rules filter.Rules
	// MaxTxnBytes is the size beyond which a transaction is sent to the
	// applier in parts instead of being held whole (default 64 MiB).
	MaxTxnBytes int
	// StopAt ends the stream right after the transaction that makes the
	// position contain it (empty: never).
	StopAt gtid.Set
	// Start is the position the stream starts after, to evaluate StopAt.
	Start  gtid.Set
	Logger *slog.Logger
	// Names reads table names written in a client character set other
	// than UTF-8.
	Names Names
	// Marks sends a Part with Mark for every heartbeat between
	// transactions (for the copy's merger, which places chunks by binlog
	// coordinate and must learn where an idle stream stands).
	Marks bool
	// TempTables are the source sessions' temporary tables at Start, as
	// the position saved them (Txn.TempTables).
	TempTables string
	// Skip, when set and not in Start, must be the stream's first
	// transaction: it reaches the applier empty (its position recorded,
	// nothing of it applied). The way past a transaction binlane refused,
	// once the target was fixed by hand.
	Skip gtid.GTID
}

// ErrStopped is returned by Run after the StopAt transaction was delivered.
var ErrStopped = errors.New("stop position reached")

// ErrStreamBroken is returned (wrapped) when the source connection broke in
// the middle of a transaction whose first parts already went to the
// applier: the applier rolls them back, and the stream must restart from
// the saved position, where the source sends the transaction again.
var ErrStreamBroken = errors.New("the source connection broke in the middle of a transaction sent in parts")

// Assembler groups events into transactions.
type Assembler struct {
	src Source
	cfg Config
	log *slog.Logger
	seq uint64
	pos gtid.Set // running position, to detect StopAt
	cur *Txn
	// body is the part being filled: its items and changes are the
	// unused rest of blocks that earlier parts were carved from (see
	// handOver).
	body Body
	sent bool // the current transaction's first part went out
	// values is the current block of the decode buffer: the images of
	// parts handed over, then those of the part being filled (earlier
	// blocks may hold those of its first events, see decodeRows).
	values []binlog.Value
	// gen counts what the parts handed over took of the current blocks,
	// and sizes the next ones (see Blocks).
	gen   generation
	bytes int // held by the part being filled
	out   *Pipe
	// tableSel caches the filter's verdict per table map.
	tableSel map[*binlog.TableMap]bool
	single   bool // standalone group: ends after its statement
	// vars collects the Intvar, Rand and User_var events that precede the
	// statement they belong to.
	vars Vars
	// alter is the two-phase ALTER part the current group is.
	alter binlog.AlterPhase
	// temps are the source sessions' temporary tables (see temp.go);
	// tempsChanged says the next transaction to end carries them.
	temps        tempTables
	tempsChanged bool
	// loads are the files of statement-based LOAD DATA statements of the
	// current group, by file id.
	loads map[uint32][]byte
	// restarted says the source restarted since the last transaction.
	restarted bool
	// skipping is set while the transaction of Config.Skip is read;
	// skipChecked once the first transaction was compared with it.
	skipping, skipChecked bool
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
	return &Assembler{src: src, cfg: cfg, log: cfg.Logger, pos: cfg.Start.Clone(),
		tableSel: map[*binlog.TableMap]bool{}, temps: tempTables{}, gen: newGeneration()}
}

// Liveness reports when the last binlog event (sampled at the start of each
// transaction) and the last heartbeat arrived, and the source timestamp of
// that event (zero times when none). A source sends heartbeats only when it
// has nothing else to send: one after the last event means caught up.
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
// (ErrStopped), sending each transaction to out in order, as parts. It does
// not close out.
func (a *Assembler) Run(ctx context.Context, out *Pipe) error {
	a.out = out
	temps, err := decodeTempTables(a.cfg.TempTables)
	if err != nil {
		return err
	}
	a.temps = temps
	for {
		m, err := a.src.Next(ctx)
		if err != nil {
			return a.abort(ctx, err)
		}
		if m.Restart != nil {
			if err := a.restart(ctx, m.Restart); err != nil {
				return err
			}
			continue
		}
		done, err := a.handle(ctx, m.Event)
		if err != nil {
			return a.abort(ctx, err)
		}
		if done == nil {
			continue
		}
		if done.GTID.Flavor != 0 {
			a.pos.Add(done.GTID)
			if !a.cfg.StopAt.IsEmpty() && a.pos.ContainsSet(a.cfg.StopAt) {
				return ErrStopped
			}
		}
	}
}

// sendPart hands the part being filled to the applier and starts a new one.
// The transaction counts as started in the applier only once a part was
// actually handed over.
func (a *Assembler) sendPart(ctx context.Context, last bool, abort error) error {
	p := Part{Txn: a.cur, Body: a.handOver(), First: !a.sent, Last: last, Bytes: a.bytes, Abort: abort}
	if err := a.out.Send(ctx, p); err != nil {
		return err
	}
	a.sent = true
	a.bytes = 0
	return nil
}

// abort ends the stream with err. A transaction whose first parts the
// applier already has gets a last part saying it will not be completed.
func (a *Assembler) abort(ctx context.Context, err error) error {
	if a.cur != nil && a.sent {
		broken := fmt.Errorf("%w (transaction %s): %w", ErrStreamBroken, a.cur.GTID, err)
		if serr := a.sendPart(context.WithoutCancel(ctx), true, broken); serr != nil {
			return serr
		}
		err = broken
	}
	a.cur = nil
	return err
}

// restart drops a partial transaction after the source reconnected: the
// source sends it again from its start. One whose parts the applier already
// has cannot be taken back here: the stream restarts from the saved
// position.
func (a *Assembler) restart(ctx context.Context, r *binlog.Restart) error {
	if a.cur == nil {
		a.single = false
		return nil
	}
	if a.sent {
		return a.abort(ctx, errors.New(r.Reason))
	}
	a.log.Info("discarding partial transaction after reconnect", "gtid", a.cur.GTID.String(), "reason", r.Reason)
	a.seq--
	a.cur, a.single = nil, false
	return nil
}

// handle processes one event and returns the transaction it completed
// (after sending its last part), if any.
func (a *Assembler) handle(ctx context.Context, ev *binlog.Event) (*Txn, error) {
	if ev.Header.Timestamp != 0 && a.cur == nil {
		// Once per transaction (at its first event), not per event: a clock
		// read per event shows in profiles.
		a.lastEvent.Store(time.Now().UnixNano())
		a.lastSourceTS.Store(int64(ev.Header.Timestamp) * int64(time.Second))
	}
	switch d := ev.Data.(type) {
	case *binlog.HeartbeatEvent:
		a.lastHeartbeat.Store(time.Now().UnixNano())
		if a.cfg.Marks && a.cur == nil && d.File != "" {
			return nil, a.out.Send(ctx, Part{Mark: &BinlogPos{File: d.File, Pos: d.Pos}})
		}
		return nil, nil
	case *binlog.FormatDescriptionEvent:
		if d.CreateTimestamp != 0 && ev.Header.LogPos != 0 {
			// The first binlog of a source that just started (a resent
			// description has position 0): its sessions are gone.
			if len(a.temps) > 0 {
				a.temps.forget()
				a.tempsChanged = true
			}
			a.restarted = true
		}
	case *binlog.MariaGTIDEvent:
		return nil, a.startMaria(ev, d)
	case *binlog.MySQLGTIDEvent:
		return nil, a.startMySQL(ev, d)
	case *binlog.QueryEvent:
		return a.query(ctx, ev, d)
	case *binlog.XIDEvent:
		return a.end(ctx, ev)
	case *binlog.XAPrepareEvent:
		return a.xaPrepare(ctx, ev, d)
	case *binlog.RowsEvent:
		a.vars = Vars{} // they belonged to a statement logged as rows
		return nil, a.rows(ctx, ev, d)
	case *binlog.IntvarEvent:
		if d.Type == binlog.IntvarInsertID {
			a.vars.InsertID, a.vars.HasInsertID = d.Value, true
		} else {
			a.vars.LastInsertID, a.vars.HasLastInsertID = d.Value, true
		}
	case *binlog.RandEvent:
		r := *d
		a.vars.Rand = &r
	case *binlog.UserVarEvent:
		a.vars.User = append(a.vars.User, d)
	case *binlog.IncidentEvent:
		return nil, fmt.Errorf("source binlog %s:%d: incident event %d (%s): the source lost events; replication cannot continue safely",
			ev.File, ev.Pos, d.Incident, d.Message)
	case *binlog.TransactionPayloadEvent:
		return a.payload(ctx, ev, d)
	case *binlog.RotateEvent, *binlog.PreviousGTIDsEvent, *binlog.GTIDListEvent, *binlog.BinlogCheckpointEvent:
		// Ignored: files' positions and GTID states are the stream's
		// (replica.Tracker); a transaction's GTID is in its GTID event.
	case *binlog.TableMap:
		// Ignored: each rows event carries its table map.
	case *binlog.AnnotateRowsEvent, *binlog.RowsQueryEvent:
		// Ignored: the SQL behind rows events; the rows are what is applied.
	case *binlog.LoadBlockEvent:
		// The file of a statement-based LOAD DATA, for its statement (an
		// Execute_load_query event) later in the group.
		if a.loads == nil {
			a.loads = map[uint32][]byte{}
		}
		a.loads[d.FileID] = append(a.loads[d.FileID], d.Data...)
		a.bytes += len(d.Data)
	case *binlog.DeleteFileEvent:
		delete(a.loads, d.FileID)
	case *binlog.SkippedEvent:
		// Ignored: read past by the decoder (its Reason says why).
	}
	return nil, nil
}

func (a *Assembler) begin(ev *binlog.Event, g gtid.GTID) error {
	if a.cur != nil {
		return fmt.Errorf("source binlog %s:%d: transaction %s starts before %s ended", ev.File, ev.Pos, g, a.cur.GTID)
	}
	if err := a.checkSkip(g); err != nil {
		return err
	}
	a.seq++
	a.cur = &Txn{Seq: a.seq, GTID: g, File: ev.File, StartPos: ev.Pos, SessionsEnded: a.restarted}
	a.restarted = false
	a.sent, a.bytes = false, 0
	a.dropPart() // what a dropped transaction left
	a.single = false
	a.vars, a.alter = Vars{}, binlog.AlterNone
	a.loads = nil
	return nil
}

func (a *Assembler) startMaria(ev *binlog.Event, g *binlog.MariaGTIDEvent) error {
	if err := a.begin(ev, g.GTID); err != nil {
		return err
	}
	a.cur.CommitID = g.CommitID
	a.cur.Waited = g.Flags2&binlog.MariaFlWaited != 0
	a.single = g.Standalone()
	a.alter = g.AlterPhase()
	if g.XID != nil && g.Flags2&binlog.MariaFlPreparedXA != 0 {
		a.cur.XA = &XA{ID: g.XID.String(), Phase: XAPrepare}
	}
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

// end closes the current group at ev and sends its last part.
func (a *Assembler) end(ctx context.Context, ev *binlog.Event) (*Txn, error) {
	t := a.cur
	if t == nil {
		return nil, fmt.Errorf("source binlog %s:%d: %s event outside a transaction", ev.File, ev.Pos, ev.Header.Type)
	}
	// For a transaction sent in parts the applier reads these after it
	// receives the last part, which orders the writes before its reads.
	// (File was set at the start and stays: a group never spans files; the
	// applier may read it from the first part.)
	t.EndPos, t.Timestamp = ev.NextPos(), ev.Header.Timestamp
	a.skipping = false
	if a.tempsChanged {
		enc := a.temps.encode()
		t.TempTables, a.tempsChanged = &enc, false
	}
	if err := a.sendPart(ctx, true, nil); err != nil {
		return nil, err
	}
	a.cur = nil
	return t, nil
}

// payload handles MySQL's compressed transaction envelope by replaying its
// inner events.
func (a *Assembler) payload(ctx context.Context, ev *binlog.Event, p *binlog.TransactionPayloadEvent) (*Txn, error) {
	var done *Txn
	for _, inner := range p.Events {
		inner.File, inner.Pos = ev.File, ev.Pos
		// With the envelope's size, NextPos of an inner event is the
		// envelope's end: where a group that ends inside it ends.
		inner.Header.EventSize = ev.Header.EventSize
		t, err := a.handle(ctx, inner)
		if err != nil {
			return nil, err
		}
		if t != nil {
			done = t
		}
	}
	return done, nil
}

// logStatement logs a statement with its secrets hidden.
func (a *Assembler) logStatement(level slog.Level, msg, query string) {
	a.log.Log(context.Background(), level, msg, "gtid", a.curGTID(), "query", abbreviate(redact.Statement(query), 200))
}

// checkSkip compares the stream's first transaction with Config.Skip: the
// one to skip must be the next at the start position, so that nothing else
// is ever skipped by mistake.
func (a *Assembler) checkSkip(g gtid.GTID) error {
	skip := a.cfg.Skip
	if a.skipChecked || skip.Flavor == 0 || a.cfg.Start.Contains(skip) {
		return nil
	}
	a.skipChecked = true
	if g != skip {
		return fmt.Errorf("--skip-gtid %s is not the next transaction at the start position %s (the next is %s): nothing skipped",
			skip, a.cfg.Start, g)
	}
	a.skipping = true
	a.log.Warn("skipping a transaction as asked (--skip-gtid): its position is recorded, nothing of it is applied", "gtid", g)
	return nil
}
