// Package replicate runs one stream: it reads the source's binlog as a
// replica, groups events into transactions and applies them to the target,
// starting from the position saved in the target and restarting from it
// after a lost connection. It owns the stream's life cycle (the lock that
// keeps a second process out, the claim of its tables among the target's
// streams, start position and whether the source has it, preflight checks
// of the target, the state row, graceful stop, retries); the work itself
// happens in replica, txn and apply.
//
// Goroutines, each with an owner that waits for it: Run owns the status
// reporter; each attempt (once) owns its watchers (the stream lock and the
// target's triggers, pause requests, the end of a copy) in an errgroup it
// waits for before it returns, and pipe owns the reader (replica.Stream
// feeding txn.Assembler), the drain bound and the copy's merger and
// readers. A stop (ctx cancelled, or a watcher's cause) ends the reader
// first; the applier then commits what it holds, in order, and returns. A
// failure of either side ends both; the saved position is always the last
// commit.
//
// Pause requests (package pause) are decided at the start of each
// attempt: run, run up to a position and stop there, or hold.
package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/throttle"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/wire"
)

// Config describes a stream.
type Config struct {
	Source, Target dsn.DSN
	Stream         string
	Rules          filter.Rules
	// StartGTID overrides the saved position; StopAtGTID ends the stream
	// right after the transaction that reaches it.
	StartGTID  string
	StopAtGTID string
	// SkipGTID names the next transaction at the start position, to be
	// recorded as applied without running it (see txn.Config.Skip).
	SkipGTID string
	// ServerID identifies binlane to the source as a replica (0: derived
	// from the stream name).
	ServerID        uint32
	HeartbeatPeriod time.Duration
	// MaxTxnBytes is the size beyond which a transaction streams;
	// QueueBytes bounds the decoded events read ahead of the assembler, and
	// PipeBytes the transactions between the assembler and the applier.
	MaxTxnBytes int
	QueueBytes  int
	PipeBytes   int
	Apply       apply.Config
	// AllowTriggers lets the target's replicated tables have triggers.
	AllowTriggers bool
	// DrainTimeout bounds how long a stop waits for in-flight transactions.
	DrainTimeout time.Duration
	// RetryMin and RetryMax bound the wait before a restart after a lost
	// connection; FirstTries bounds the attempts to make the very first
	// connections of a run (a mistyped host must fail, not retry forever).
	RetryMin, RetryMax time.Duration
	FirstTries         int
	Logger             *slog.Logger
	// Observer, when set, follows each run (metrics); the stream's row gets
	// a status report every ReportPeriod either way.
	Observer     *Observer
	ReportPeriod time.Duration
	// WatchPeriod is how often the target's triggers and the stream lock
	// are checked.
	WatchPeriod time.Duration
	// Copy is how an empty target is filled before (and while) replicating.
	Copy CopyConfig
	// Throttle holds the copy's chunks and the applier's next transaction
	// back while binlane's limits say so (nil: never).
	Throttle *throttle.Throttle
}

func (c *Config) defaults() {
	if c.Stream == "" {
		c.Stream = "default"
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 500 * time.Millisecond
	}
	if c.RetryMax <= 0 {
		c.RetryMax = 30 * time.Second
	}
	if c.FirstTries <= 0 {
		c.FirstTries = 3
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = &Observer{}
	}
	if c.ReportPeriod <= 0 {
		c.ReportPeriod = 5 * time.Second
	}
	if c.WatchPeriod <= 0 {
		c.WatchPeriod = 10 * time.Second
	}
	if c.PipeBytes <= 0 {
		c.PipeBytes = 32 << 20
	}
	if c.Copy.Workers <= 0 {
		c.Copy.Workers = 4
	}
	c.Apply.Stream = c.Stream
	if c.Apply.Logger == nil {
		c.Apply.Logger = c.Logger
	}
	hb := c.HeartbeatPeriod
	if hb <= 0 {
		hb = replica.DefaultHeartbeatPeriod
	}
	c.Observer.mu.Lock() // a status server may be reading it already
	c.Observer.heartbeat = hb
	c.Observer.throttle = c.Throttle
	c.Observer.mu.Unlock()
}

// run is the state of a Run across its restarts.
type run struct {
	cfg  Config
	log  *slog.Logger
	meta *sql.DB
	lock *position.Lock
	// owner is the current attempt's token: each attempt takes the stream
	// over anew, so that commits a broken connection of an earlier attempt
	// still finishes on the server can never follow ours. (Read by the
	// report goroutine.)
	owner atomic.Pointer[string]
	// started is set once an attempt got the stream going: from then on a
	// lost connection is retried without bound.
	started bool
	// claimed is set once the stream's selection of tables was recorded
	// (checked against the other streams of the target) in this run.
	claimed bool
	// newRow is set when this run created the stream's row (a new stream).
	newRow bool
	// pausing is the pause request the current attempt saw; pauseStops
	// says the attempt stops at it.
	pausing    position.PauseRequest
	pauseStops bool
}

// Run replicates until ctx ends (nil), the stop position is reached (nil),
// or an error no restart can fix.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	r := &run{cfg: cfg, log: cfg.Logger.With("stream", cfg.Stream)}
	meta, err := cfg.Target.OpenDB("")
	if err != nil {
		cfg.Observer.failed(err, true)
		return err
	}
	defer meta.Close()
	meta.SetMaxOpenConns(4)
	r.meta = meta
	defer func() { r.lock.Release() }() // r.lock is set later
	if err := checkServers(ctx, cfg, meta, r.log); err != nil {
		cfg.Observer.failed(err, true)
		return err
	}
	reportCtx, stopReport := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		cfg.Observer.report(reportCtx, meta, cfg.Stream, r.currentOwner, cfg.ReportPeriod, r.log)
	}()
	// The last report is written before meta closes.
	defer func() { stopReport(); <-reported }()
	bo := &backoff.ExponentialBackOff{InitialInterval: cfg.RetryMin, RandomizationFactor: 0.2, Multiplier: 2, MaxInterval: cfg.RetryMax}
	bo.Reset()
	tries := 0
	for {
		began := time.Now()
		err := r.once(ctx)
		switch {
		case ctx.Err() == nil && (errors.Is(err, errPauseChanged) || errors.Is(err, txn.ErrStopped) && r.pauseStops):
			continue // hold at the pause position, or go on from it
		case errors.Is(err, errCutOver):
			r.log.Info("the stream was cut over (binlane cutover): its target took over; nothing more to replicate")
			cfg.Observer.stopped()
			return nil
		case err == nil, errors.Is(err, txn.ErrStopped), errors.Is(err, errCopied), ctx.Err() != nil:
			r.saveState(position.StateStopped, "")
			cfg.Observer.stopped()
			if errors.Is(err, txn.ErrStopped) {
				r.log.Info("stop position reached", "stop_at", cfg.StopAtGTID)
			}
			return nil
		case !retryable(err, r.cfg.Apply.Flavor):
			r.saveState(position.StateError, redact.Text(err.Error()))
			cfg.Observer.failed(err, true)
			return err
		}
		tries++
		if !r.started && tries >= cfg.FirstTries {
			err = fmt.Errorf("giving up after %d attempts to start the stream (source %s, target %s): %w", tries, cfg.Source, cfg.Target, err)
			r.saveState(position.StateError, redact.Text(err.Error()))
			cfg.Observer.failed(err, true)
			return err
		}
		cfg.Observer.failed(err, false)
		if time.Since(began) > time.Minute {
			bo.Reset() // the stream ran a while: start from the shortest wait again
		}
		wait := bo.NextBackOff()
		r.logRetry(err, tries, wait)
		select {
		case <-ctx.Done():
			r.saveState(position.StateStopped, "")
			cfg.Observer.stopped()
			return nil
		case <-time.After(wait):
		}
	}
}

// logRetry says that the stream is retried after err. Until an attempt got
// it going there may be no saved position to restart from (a new stream):
// that is the first connection failing, bounded by FirstTries.
func (r *run) logRetry(err error, tries int, wait time.Duration) {
	reason, in := redact.Text(err.Error()), wait.Round(time.Millisecond)
	if r.started {
		r.log.Warn("restarting from the saved position", "reason", reason, "retry_in", in)
		return
	}
	r.log.Warn("the first connection failed: retrying", "error", reason, "attempt", tries, "of", r.cfg.FirstTries, "retry_in", in)
}

func (r *run) currentOwner() string {
	if p := r.owner.Load(); p != nil {
		return *p
	}
	return ""
}

// forgetRefused removes the row of a new stream whose tables another
// stream owns (err, an OverlapError): the refused start leaves nothing
// behind, and no state is saved for it after.
func (r *run) forgetRefused(ctx context.Context, err error) {
	var oe *OverlapError
	if !errors.As(err, &oe) || !r.newRow {
		return
	}
	if ferr := position.ForgetNew(ctx, r.meta, r.cfg.Stream, r.currentOwner()); ferr != nil {
		r.log.Warn("could not remove the refused stream's row", "error", ferr)
		return
	}
	r.owner.Store(nil)
}

// saveState records the stream's state, on behalf of the current owner.
func (r *run) saveState(state, msg string) {
	if r.currentOwner() == "" {
		return // never took the stream over: nothing of ours to record
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cut *position.CutOverError
	if err := position.SetState(ctx, r.meta, r.cfg.Stream, r.currentOwner(), state, msg); err != nil && !errors.As(err, &cut) {
		r.log.Warn("could not record the stream's state", "state", state, "error", err)
	}
}

// takeOver acquires the stream's lock (once per process, again after it was
// lost) and makes a new token of this attempt the stream's owner.
func (r *run) takeOver(ctx context.Context) error {
	if err := position.Ensure(ctx, r.meta); err != nil {
		return err
	}
	created, err := position.Create(ctx, r.meta, position.State{Name: r.cfg.Stream})
	if err != nil {
		return err
	}
	r.newRow = r.newRow || created
	if st, _, err := position.Load(ctx, r.meta, r.cfg.Stream); err != nil {
		return err
	} else if st.State == position.StateCutOver {
		return &position.CutOverError{Stream: r.cfg.Stream, Message: st.Message}
	}
	if r.lock != nil && r.lock.Check(ctx) != nil {
		r.lock.Release()
		r.lock = nil
	}
	if r.lock == nil {
		l, err := position.Acquire(ctx, r.meta, r.cfg.Stream)
		if err != nil {
			return err
		}
		r.lock = l
	}
	owner := position.NewOwnerToken()
	if err := position.TakeOver(ctx, r.meta, r.cfg.Stream, owner); err != nil {
		return err
	}
	r.owner.Store(&owner)
	return nil
}

// pipe runs the assembler and the applier together (see the package doc
// for the stop order). It returns once every goroutine it started ended.
func pipe(ctx context.Context, cfg Config, stopSource context.CancelFunc, asm *txn.Assembler, a *apply.Applier, start gtid.Set,
	cr *copyRun) error {
	p := txn.NewPipe(cfg.PipeBytes)
	// Each goroutine reports through its own variable, read after Wait:
	// the order of the errors decides what the attempt returns.
	var g errgroup.Group
	var sErr error
	// The stream is read from the assembler's first call on (replica.Open):
	// after the applier's connections are open, so that decoding does not
	// delay them.
	ready := make(chan struct{})
	markReady := sync.OnceFunc(func() { close(ready) })
	g.Go(func() error {
		<-ready
		sErr = asm.Run(ctx, p)
		p.Close()
		return nil
	})
	applyCtx, cancelApply := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelApply()
	in, copyErr := p, func() error { return nil }
	if cfg.Throttle != nil {
		in = gate(&g, ctx, applyCtx, cfg.Throttle, p)
	}
	if cr != nil {
		var stopCopy func()
		in, copyErr, stopCopy = runCopy(ctx, applyCtx, cfg, cr, in, stopSource)
		defer stopCopy()
	}
	g.Go(func() error {
		// A stop drains what is in flight, within a bound.
		select {
		case <-ctx.Done():
		case <-applyCtx.Done():
			return nil
		}
		select {
		case <-time.After(cfg.DrainTimeout):
			cancelApply()
		case <-applyCtx.Done():
		}
		return nil
	})
	applyErr := a.Run(applyCtx, in, apply.Start{GTID: start, FirstSeq: 1, Ready: markReady})
	stopSource()
	markReady()               // an applier that failed to start: the assembler ends with the source
	for part := range p.C() { // let the assembler finish after an apply failure
		p.Taken(&part)
	}
	cErr := copyErr()
	cancelApply() // the drain bound's goroutine ends
	_ = g.Wait()
	return pipeError(ctx.Err() != nil, cErr, applyErr, sErr)
}

// pipeError is what an attempt returns from its copy's, applier's and
// stream's errors (stopped: the attempt's context ended). The copy's own
// failure comes first; a copy that was only canceled because the applier
// stopped (the source's context ends with it) says less than the
// applier's error, which names the transaction. Errors that only echo a
// stop are no errors.
func pipeError(stopped bool, cErr, applyErr, sErr error) error {
	switch {
	case cErr != nil && !(applyErr != nil && errors.Is(cErr, context.Canceled)):
		return cErr
	case applyErr != nil && !(stopped && errors.Is(applyErr, txn.ErrStreamBroken)):
		return applyErr
	case cErr != nil:
		return cErr
	case sErr == nil, stopped && (errors.Is(sErr, context.Canceled) || errors.Is(sErr, txn.ErrStreamBroken)):
		return nil
	}
	return sErr
}

func replicaConfig(cfg Config, log *slog.Logger) (replica.Config, error) {
	id := cfg.ServerID
	if id == 0 {
		h := fnv.New32a()
		h.Write([]byte(cfg.Stream))
		id = 100000 + h.Sum32()%1000000000
	}
	wc, err := cfg.Source.WireConfig()
	if err != nil {
		return replica.Config{}, fmt.Errorf("source: %w", err)
	}
	return replica.Config{Config: wc, ServerID: id, HeartbeatPeriod: cfg.HeartbeatPeriod, QueueBytes: cfg.QueueBytes, Logger: log}, nil
}

// checkServers connects to both servers once before anything is written
// to the target, so that a refusal no retry can change ends the run with
// nothing created there (no stream row in error that status --check would
// report from then on): a TLS mode a server cannot meet, a certificate
// that fails its checks, a source the preflight refuses (binlog_format...)
// or that refuses the account. Other failures take the usual path: a
// server that is not up yet is waited for.
func checkServers(ctx context.Context, cfg Config, meta *sql.DB, log *slog.Logger) error {
	var te *dsn.TLSError
	if err := meta.PingContext(ctx); errors.As(err, &te) {
		return fmt.Errorf("target: %w", err)
	}
	rcfg, err := replicaConfig(cfg, log)
	if err != nil {
		return err
	}
	_, err = replica.Inspect(ctx, rcfg)
	var pfe *replica.PreflightError
	var ae *wire.AuthError
	switch err = cfg.Source.AnnotateTLS(err); {
	case errors.As(err, &te):
		return fmt.Errorf("source: %w", te)
	case errors.As(err, &pfe), errors.As(err, &ae):
		return fmt.Errorf("source %s: %w", cfg.Source, err)
	}
	return nil
}

// startPosition picks where to start: --start-gtid, else the saved
// position, else the source's current position (the tables are assumed to
// be in sync already).
func startPosition(ctx context.Context, cfg Config, meta *sql.DB, rcfg replica.Config, log *slog.Logger) (gtid.Set, position.State, error) {
	st, ok, err := position.Load(ctx, meta, cfg.Stream)
	if err != nil {
		return gtid.Set{}, st, err
	}
	if cfg.StartGTID != "" {
		set, err := gtid.ParseSet(cfg.StartGTID)
		if err != nil {
			return gtid.Set{}, st, fmt.Errorf("--start-gtid: %w", err)
		}
		if ok && st.GTID != "" && st.GTID != set.String() {
			log.Warn("--start-gtid overrides the saved position", "saved", st.GTID, "start", set.String())
		}
		return set, st, nil
	}
	if ok && (st.GTID != "" || st.Applied > 0) {
		set, err := gtid.ParseSet(st.GTID)
		if err != nil {
			return gtid.Set{}, st, fmt.Errorf("saved position of stream %q: %w", cfg.Stream, err)
		}
		return set, st, nil
	}
	pos, err := replica.CurrentPosition(ctx, rcfg)
	if err != nil {
		return gtid.Set{}, st, fmt.Errorf("read the source's current position: %w", err)
	}
	log.Warn("no saved position: starting from the source's current position, assuming the target is in sync",
		"position", pos.GTIDs.String())
	return pos.GTIDs, st, nil
}

// savedTempTables returns the source sessions' temporary tables saved with
// the position the stream starts from; none when it starts anywhere else
// (--start-gtid elsewhere, no saved position).
func savedTempTables(ctx context.Context, meta *sql.DB, stream string, st position.State, start gtid.Set) (string, error) {
	saved, err := gtid.ParseSet(st.GTID)
	if err != nil || st.GTID == "" || saved.String() != start.String() {
		return "", nil
	}
	return position.LoadTempTables(ctx, meta, stream)
}
