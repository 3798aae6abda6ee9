package replicate

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/txn"
)

// once runs the stream from the saved position until it stops or fails.
// Its steps, in order: own the stream, prepare the copy (it creates the
// target's tables, which the checks and definitions read next see), read
// the target and the start position, bound the attempt, open the source,
// then apply until a watcher or the stream ends it.
func (r *run) once(ctx context.Context) error {
	cfg := &r.cfg
	if err := r.own(ctx); err != nil {
		return err
	}
	rcfg, err := replicaConfig(*cfg, r.log)
	if err != nil {
		return err
	}
	cr, err := r.prepareCopy(ctx, rcfg)
	if err != nil {
		return err
	}
	defer cr.close()
	tgt, err := inspectTarget(ctx, r.meta, cfg)
	if err != nil {
		return err
	}
	if cr != nil {
		cr.setPending(tgt.cache)
	}
	start, st, err := startPosition(ctx, *cfg, r.meta, rcfg, r.log)
	if err != nil {
		return err
	}
	if err := r.keepStart(ctx, st, start); err != nil {
		return err
	}
	temps, err := savedTempTables(ctx, r.meta, cfg.Stream, st, start)
	if err != nil {
		return err
	}
	stop, skip, err := r.bounds(ctx, start, cr != nil)
	if err != nil {
		return err
	}
	if err := checkSourceHas(ctx, *cfg, start); err != nil {
		return err
	}
	srcCtx, stopSource := context.WithCancel(ctx)
	defer stopSource()
	rcfg.Start = replica.StartAtGTID(start)
	if cr != nil && (rcfg.HeartbeatPeriod == 0 || rcfg.HeartbeatPeriod > copyHeartbeat) {
		// An idle stream learns where it stands from heartbeats, and a chunk
		// placed by binlog coordinate waits for that (see copier.Merger).
		rcfg.HeartbeatPeriod = copyHeartbeat
	}
	stream, err := replica.Open(srcCtx, rcfg)
	if err != nil {
		return cfg.Source.AnnotateTLS(err)
	}
	defer stream.Close()
	formatNotice(r.log, stream.Source())
	if err := r.recordSource(ctx, stream.Source(), st, start, temps); err != nil {
		return err
	}
	tables, err := newSourceTables(cfg.Source)
	if err != nil {
		return err
	}
	defer tables.close()
	acfg := cfg.Apply
	acfg.Target, acfg.Flavor, acfg.Owner, acfg.RecoveredDDL, acfg.Source = cfg.Target, tgt.flavor, r.currentOwner(), st.DDL, tables
	if cr != nil {
		acfg.Copy, acfg.MaxChunkWrites = cr.state, cfg.Copy.Workers
		cr.begin(cfg, start, r.log)
		cfg.Observer.AttachCopy(cr.copier, cr.state)
	}
	applier := apply.New(acfg, plan.NewBuilder(tgt.cache, tgt.collations, plan.Options{AllowTriggers: cfg.AllowTriggers}), r.meta)
	asm := txn.NewAssembler(stream, txn.Config{Rules: cfg.Rules, MaxTxnBytes: cfg.MaxTxnBytes, StopAt: stop,
		Start: start, Logger: r.log, Marks: cr != nil, Names: txn.Names{Charset: tgt.collations.Charset}, TempTables: temps, Skip: skip})
	cfg.Observer.Attach(applier, asm)
	r.log.Info("replicating", "from", start.String(), "workers", acfg.Workers, "mode", acfg.Mode.String(),
		"source", cfg.Source.String(), "target", cfg.Target.String())
	return r.watched(ctx, rcfg, stopSource, asm, applier, start, cr)
}

// own takes the stream over and, once per process, claims its tables.
func (r *run) own(ctx context.Context) error {
	if err := r.takeOver(ctx); err != nil {
		return err
	}
	if r.claimed {
		return nil
	}
	if err := r.claimTables(ctx); err != nil {
		r.forgetRefused(ctx, err)
		return err
	}
	r.claimed = true
	return nil
}

// bounds reads where the attempt stops (--stop-at-gtid, or where a pause
// request holds it) and the transaction it skips (--skip-gtid). It
// returns txn.ErrStopped when start is at or past the stop already.
func (r *run) bounds(ctx context.Context, start gtid.Set, copying bool) (stop gtid.Set, skip gtid.GTID, err error) {
	cfg := &r.cfg
	stop, err = gtid.ParseSet(cfg.StopAtGTID)
	if err != nil {
		return stop, skip, fmt.Errorf("--stop-at-gtid: %w", err)
	}
	if cfg.SkipGTID != "" {
		if skip, err = gtid.Parse(cfg.SkipGTID); err != nil {
			return stop, skip, fmt.Errorf("--skip-gtid: %w", err)
		}
	}
	if stop, err = r.pauseStop(ctx, stop, start, copying); err != nil {
		return stop, skip, err
	}
	if !stop.IsEmpty() && start.ContainsSet(stop) {
		r.log.Info("already at or past the stop position", "position", start.String())
		return stop, skip, txn.ErrStopped
	}
	return stop, skip, nil
}

// keepStart saves --start-gtid at once when the stream has no position
// yet: a run that fails before it reads the source (a source down, a
// mistyped option) otherwise leaves a stream without one, and the next run
// without --start-gtid would start from the source's current position,
// skipping every transaction in between. A start that overrides a saved
// position is saved once the source is read (recordSource): a run that
// fails before that keeps the position it had.
func (r *run) keepStart(ctx context.Context, st position.State, start gtid.Set) error {
	if r.cfg.StartGTID == "" || st.GTID != "" || st.Applied > 0 {
		return nil
	}
	return position.KeepStart(ctx, r.meta, r.cfg.Stream, r.currentOwner(), start.String())
}

// recordSource saves which server the stream reads from, and from where;
// from then on a restart resumes from what has been applied, not from
// --start-gtid again.
func (r *run) recordSource(ctx context.Context, src replica.SourceInfo, st position.State, start gtid.Set, temps string) error {
	cfg := &r.cfg
	sourceID := src.ServerUUID
	if sourceID == "" {
		sourceID = fmt.Sprintf("server_id=%d", src.ServerID)
	}
	if st.SourceID != "" && st.SourceID != sourceID {
		// A failover (or a new address): fine by GTID, and checked before
		// (checkSourceHas); said once, so the operator sees where it reads.
		r.log.Warn("the stream's source changed: going on from the saved position by GTID", "was", st.SourceID, "now", sourceID,
			"position", start.String())
	}
	if err := position.RecordSource(ctx, r.meta, cfg.Stream, r.currentOwner(), sourceID, src.Flavor.String(), start.String(), temps); err != nil {
		return err
	}
	cfg.StartGTID = ""
	r.started = true
	return nil
}

// watched runs the pipe with the attempt's watchers beside it. The
// watchers stop the attempt gracefully, through stopWatch (the stream
// drains what it holds); the attempt joins them before it returns, so
// none outlives it.
func (r *run) watched(ctx context.Context, rcfg replica.Config, stopSource context.CancelFunc, asm *txn.Assembler,
	applier *apply.Applier, start gtid.Set, cr *copyRun) error {
	cfg := &r.cfg
	watchCtx, stopWatch := context.WithCancelCause(ctx)
	var watchers errgroup.Group
	watchers.Go(func() error { r.watch(watchCtx, stopWatch); return nil })
	pausing := r.pausing
	watchers.Go(func() error { r.watchPause(watchCtx, stopWatch, pausing); return nil })
	if cfg.Copy.ExitWhenDone {
		// A stream whose copy was done before this run (killed before it
		// could exit) ends once caught up, too.
		readDone := closedChan
		if cr != nil {
			cr.readDone = make(chan struct{})
			readDone = cr.readDone
		}
		watchers.Go(func() error {
			if err := r.waitCopied(watchCtx, cr, rcfg, readDone); err != nil {
				stopWatch(err)
			}
			return nil
		})
	}
	err := pipe(watchCtx, *cfg, stopSource, asm, applier, start, cr)
	stopWatch(nil) // a cause set by a watcher stays
	_ = watchers.Wait()
	if cause := context.Cause(watchCtx); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause // the watcher stopped the run (after a graceful drain): that is the reason
	}
	return err
}
