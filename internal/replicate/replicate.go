// Package replicate runs one stream: it reads the source's binlog as a
// replica, groups events into transactions and applies them to the target,
// starting from the position saved in the target and restarting from it
// after a lost target connection. It owns the stream's life cycle (start
// position, state row, graceful stop, retries); the work itself happens in
// replica, txn and apply.
//
// Goroutines: Run starts a reader (replica.Stream feeding txn.Assembler)
// and the applier. A stop (ctx cancelled) ends the reader first; the
// applier then commits what it holds, in order, and returns. A failure of
// either side ends both; the saved position is always the last commit.
package replicate

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
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
	// ServerID identifies binlane to the source as a replica (0: derived
	// from the stream name).
	ServerID        uint32
	HeartbeatPeriod time.Duration
	// MaxTxnBytes is the size beyond which a transaction streams.
	MaxTxnBytes int
	Apply       apply.Config
	// DrainTimeout bounds how long a stop waits for in-flight transactions.
	DrainTimeout time.Duration
	// RetryMin and RetryMax bound the wait before a restart after a lost
	// target connection.
	RetryMin, RetryMax time.Duration
	Logger             *slog.Logger
	// Observer, when set, follows each run (metrics); the stream's row gets
	// a status report every ReportPeriod either way.
	Observer     *Observer
	ReportPeriod time.Duration
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
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Observer == nil {
		c.Observer = &Observer{}
	}
	if c.ReportPeriod <= 0 {
		c.ReportPeriod = 5 * time.Second
	}
	c.Apply.Stream = c.Stream
	if c.Apply.Logger == nil {
		c.Apply.Logger = c.Logger
	}
}

// Run replicates until ctx ends (nil), the stop position is reached (nil),
// or an error no restart can fix.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	log := cfg.Logger.With("stream", cfg.Stream)
	meta, err := cfg.Target.OpenDB("")
	if err != nil {
		return err
	}
	defer meta.Close()
	meta.SetMaxOpenConns(4)
	if err := checkTLS(ctx, cfg, meta, log); err != nil {
		return err
	}
	reportCtx, stopReport := context.WithCancel(ctx)
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		cfg.Observer.report(reportCtx, meta, cfg.Stream, cfg.ReportPeriod, log)
	}()
	// The last report is written before meta closes.
	defer func() { stopReport(); <-reported }()
	wait := cfg.RetryMin
	for {
		err := runOnce(ctx, &cfg, meta, log)
		switch {
		case err == nil, errors.Is(err, txn.ErrStopped), ctx.Err() != nil:
			saveState(meta, cfg.Stream, position.StateStopped, "", log)
			if errors.Is(err, txn.ErrStopped) {
				log.Info("stop position reached", "stop_at", cfg.StopAtGTID)
			}
			return nil
		case retryable(err):
			log.Warn("connection lost; restarting from the saved position", "error", err, "retry_in", wait)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
			wait = min(2*wait, cfg.RetryMax)
		default:
			saveState(meta, cfg.Stream, position.StateError, err.Error(), log)
			return err
		}
	}
}

func saveState(meta *sql.DB, stream, state, msg string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := position.SetState(ctx, meta, stream, state, msg); err != nil {
		log.Warn("could not record the stream's state", "state", state, "error", err)
	}
}

// runOnce runs the stream from the saved position until it stops or fails.
func runOnce(ctx context.Context, cfg *Config, meta *sql.DB, log *slog.Logger) error {
	if err := position.Ensure(ctx, meta); err != nil {
		return err
	}
	rcfg, err := replicaConfig(*cfg, log)
	if err != nil {
		return err
	}
	owner := newOwnerToken()
	start, st, err := startPosition(ctx, *cfg, meta, rcfg, owner, log)
	if err != nil {
		return err
	}
	stop, err := gtid.ParseSet(cfg.StopAtGTID)
	if err != nil {
		return fmt.Errorf("--stop-at-gtid: %w", err)
	}
	if !stop.IsEmpty() && start.ContainsSet(stop) {
		log.Info("already at or past the stop position", "position", start.String())
		return txn.ErrStopped
	}
	colls, err := schema.LoadCollations(ctx, meta)
	if err != nil {
		return err
	}
	srcCtx, stopSource := context.WithCancel(ctx)
	defer stopSource()
	rcfg.Start = replica.StartAtGTID(start)
	stream, err := replica.Open(srcCtx, rcfg)
	if err != nil {
		return cfg.Source.AnnotateTLS(err)
	}
	defer stream.Close()
	if err := recordSource(ctx, meta, cfg.Stream, stream.Source(), start); err != nil {
		return err
	}
	// --start-gtid is now the saved position; a restart resumes from what
	// has been applied since, not from the option again.
	cfg.StartGTID = ""
	acfg := cfg.Apply
	if acfg.Target, err = cfg.Target.DriverConfig(""); err != nil {
		return err
	}
	acfg.RecoveredDDL = st.DDLGTID
	acfg.Owner = owner
	applier := apply.New(acfg, plan.NewBuilder(schema.NewCache(meta), colls), meta)
	asm := txn.NewAssembler(stream, txn.Config{Rules: cfg.Rules, MaxTxnBytes: cfg.MaxTxnBytes, StopAt: stop,
		Start: start, Logger: log})
	cfg.Observer.Attach(applier, asm)
	log.Info("replicating", "from", start.String(), "workers", acfg.Workers, "mode", acfg.Mode.String(),
		"source", cfg.Source.String(), "target", cfg.Target.String())
	return pipe(ctx, *cfg, stopSource, asm, applier, start)
}

// pipe runs the assembler and the applier together (see the package doc
// for the stop order).
func pipe(ctx context.Context, cfg Config, stopSource context.CancelFunc, asm *txn.Assembler, a *apply.Applier, start gtid.Set) error {
	ch := make(chan *txn.Txn, 256)
	srcErr := make(chan error, 1)
	go func() {
		err := asm.Run(ctx, ch)
		close(ch)
		srcErr <- err
	}()
	applyCtx, cancelApply := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelApply()
	go func() {
		// A stop drains what is in flight, within a bound.
		select {
		case <-ctx.Done():
		case <-applyCtx.Done():
			return
		}
		select {
		case <-time.After(cfg.DrainTimeout):
			cancelApply()
		case <-applyCtx.Done():
		}
	}()
	applyErr := a.Run(applyCtx, ch, apply.Start{GTID: start, FirstSeq: 1})
	stopSource()
	for range ch { // let the assembler finish after an apply failure
	}
	sErr := <-srcErr
	switch {
	case applyErr != nil:
		return applyErr
	case sErr == nil, errors.Is(sErr, context.Canceled) && ctx.Err() != nil:
		return nil
	}
	return sErr
}

// newOwnerToken identifies one run of a stream in binlane.streams.owner.
func newOwnerToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}

func replicaConfig(cfg Config, log *slog.Logger) (replica.Config, error) {
	id := cfg.ServerID
	if id == 0 {
		h := fnv.New32a()
		h.Write([]byte(cfg.Stream))
		id = 100000 + h.Sum32()%1000000000
	}
	tlsCfg, tlsOptional, err := cfg.Source.WireTLS()
	if err != nil {
		return replica.Config{}, fmt.Errorf("source: %w", err)
	}
	return replica.Config{Addr: cfg.Source.Addr(), User: cfg.Source.User, Password: cfg.Source.Password,
		TLS: tlsCfg, TLSOptional: tlsOptional, ServerID: id, HeartbeatPeriod: cfg.HeartbeatPeriod, Logger: log}, nil
}

// checkTLS connects to both servers once before anything is written to
// the target, so that a TLS mode a server cannot meet (or a certificate
// that fails its checks) ends the run with nothing created there. Other
// failures take the usual path: a server that is not up yet is waited for.
func checkTLS(ctx context.Context, cfg Config, meta *sql.DB, log *slog.Logger) error {
	var te *dsn.TLSError
	if err := meta.PingContext(ctx); errors.As(err, &te) {
		return fmt.Errorf("target: %w", err)
	}
	rcfg, err := replicaConfig(cfg, log)
	if err != nil {
		return err
	}
	if _, err := replica.Inspect(ctx, rcfg); errors.As(cfg.Source.AnnotateTLS(err), &te) {
		return fmt.Errorf("source: %w", te)
	}
	return nil
}

// startPosition picks where to start: --start-gtid, else the saved
// position, else the source's current position (the tables are assumed to
// be in sync already).
func startPosition(ctx context.Context, cfg Config, meta *sql.DB, rcfg replica.Config, owner string, log *slog.Logger) (gtid.Set, position.State, error) {
	if err := position.Create(ctx, meta, position.State{Name: cfg.Stream}); err != nil {
		return gtid.Set{}, position.State{}, err
	}
	if err := position.TakeOver(ctx, meta, cfg.Stream, owner); err != nil {
		return gtid.Set{}, position.State{}, err
	}
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

// recordSource creates the stream's row (or checks it belongs to this
// source) and marks it running.
func recordSource(ctx context.Context, meta *sql.DB, stream string, src replica.SourceInfo, start gtid.Set) error {
	id := src.ServerUUID
	if id == "" {
		id = fmt.Sprintf("server_id=%d", src.ServerID)
	}
	if err := position.Create(ctx, meta, position.State{Name: stream, SourceID: id, Flavor: src.Flavor.String(),
		GTID: start.String()}); err != nil {
		return err
	}
	if _, err := meta.ExecContext(ctx, "UPDATE "+position.Table+" SET gtid_pos = ?, source_id = ?, flavor = ? WHERE name = ?",
		start.String(), id, src.Flavor.String(), stream); err != nil {
		return fmt.Errorf("record stream %q: %w", stream, err)
	}
	return position.SetState(ctx, meta, stream, position.StateRunning, "")
}
