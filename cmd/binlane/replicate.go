package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/copier"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/scheduler"
)

// Defaults chosen from the benchmark (see bench/README.md).
const (
	defaultWorkers  = 4
	defaultMaxBatch = 128
)

type replicateFlags struct {
	source, target             string
	sourcePassEnv, sourcePassF string
	targetPassEnv, targetPassF string
	sourceTLS, targetTLS       tlsFlags
	databases, tables, exclude []string
	stream                     string
	startGTID, stopAtGTID      string
	workers                    int
	mode                       string
	maxBatch, maxBatchBytes    int
	window                     int
	binlogApplied              bool
	serverID                   uint32
	heartbeat                  time.Duration
	maxTxnBytes                int
	lockWaitTimeout            int
	drainTimeout               time.Duration
	allowTriggers              bool
	windowBytes, queueBytes    int
	maxMemory                  int
	metricsAddr                string
	healthMaxLag               time.Duration
	logLevel, logFormat        string
	cpuProfile, memProfile     string
	copyMode                   string
	copyWorkers                int
	chunkTime                  time.Duration
	copyIndexes                string
	maxThreadsRunning          int
	maxReplicaLag              time.Duration
	targetReplicas             []string
	exitWhenCopied             bool
}

func newReplicateCmd() *cobra.Command {
	var f replicateFlags
	cmd := &cobra.Command{
		Use:   "replicate --source DSN --target DSN",
		Short: "Stream the source's binlog into the target, in parallel, exactly once",
		Long: `Read the source's binlog as a replica and apply every transaction of the
selected tables to the target with N workers. Conflicts are found from
writesets (primary, unique and foreign keys); commits happen strictly in
source order, each with the stream's position in the same transaction, so a
crash loses nothing and applies nothing twice.

The stream starts from --start-gtid, else from the position saved in the
target (binlane.streams). A stream with neither first copies the selected
tables into the (empty) target while it replicates (--copy=auto, see
"binlane copy"); with --copy=never it starts from the source's current
position and the tables must already be in sync. An unfinished copy
resumes where its checkpoints left it. SIGINT/SIGTERM finish or roll back
what is in flight and exit 0. --stop-at-gtid stops right after that
transaction.

Exit status: 0 stopped by SIGINT/SIGTERM or at --stop-at-gtid (position
saved), 2 any error that stopped the stream, or bad options.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplicate(cmd.Context(), cmd, f)
		},
	}
	withConfig(cmd)
	addStreamFlags(cmd, &f)
	return cmd
}

// newCopyCmd is replicate that ends once the copy is done and caught up.
func newCopyCmd() *cobra.Command {
	f := replicateFlags{exitWhenCopied: true}
	cmd := &cobra.Command{
		Use:   "copy --source DSN --target DSN",
		Short: "Copy the selected tables into an empty target online, catch up from the binlog, and exit",
		Long: `Copy the selected tables of a live source into an empty target: chunks of
rows read in consistent snapshots, each applied at its exact place in the
binlog stream, which runs at the same time, --copy-workers of them written
at once; then catch up and exit 0 once every table is copied and the
target has applied everything the source had committed by then. The tables
are created on the target from the source's definitions (without
triggers), without the secondary indexes that can wait: each table gets
them with one ALTER TABLE once its rows are in, before it counts as copied
(--copy-indexes=inline keeps them from the start).

Run "binlane replicate" with the same --stream afterwards to keep the target
in sync from where copy stopped; or run replicate from the start, which
copies the same way and goes on replicating. A copy stopped or killed
resumes from its checkpoints (binlane.copy) with the next copy or
replicate.

Exit status: 0 copied and caught up (or stopped by SIGINT/SIGTERM with its
position saved), 2 any error.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runReplicate(cmd.Context(), cmd, f)
		},
	}
	withConfig(cmd)
	addStreamFlags(cmd, &f)
	return cmd
}

func addStreamFlags(cmd *cobra.Command, f *replicateFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.source, "source", "", "source server address (mysql://user@host:port/ or user@tcp(host:port)/)")
	fl.StringVar(&f.target, "target", "", "target server address")
	addPasswordFlags(fl, "source", &f.sourcePassEnv, &f.sourcePassF)
	addPasswordFlags(fl, "target", &f.targetPassEnv, &f.targetPassF)
	addTLSFlags(fl, "source-", "source", &f.sourceTLS)
	addTLSFlags(fl, "target-", "target", &f.targetTLS)
	fl.StringSliceVar(&f.databases, "databases", nil, "databases to replicate (comma-separated, wildcards allowed)")
	fl.StringSliceVar(&f.tables, "tables", nil, "tables to replicate, as db.table")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "databases or db.tables to skip")
	fl.StringVar(&f.stream, "stream", "default", "name of the stream (its state lives in binlane.streams on the target)")
	fl.StringVar(&f.startGTID, "start-gtid", "", "start after this GTID position instead of the saved one")
	fl.StringVar(&f.stopAtGTID, "stop-at-gtid", "", "stop right after the transaction that reaches this GTID position")
	fl.IntVar(&f.workers, "workers", defaultWorkers, "target connections applying transactions at once (1: serial)")
	fl.StringVar(&f.mode, "parallel-mode", "writeset", "how independent transactions are found: writeset, commit-order or serial")
	fl.IntVar(&f.maxBatch, "max-batch", defaultMaxBatch, "source transactions merged into one target transaction (1: no merging)")
	fl.IntVar(&f.maxBatchBytes, "max-batch-bytes", 4<<20, "bound on the size of a merged target transaction")
	fl.IntVar(&f.window, "window", 0, "transactions in flight at most (0: derived from workers and batch)")
	fl.BoolVar(&f.binlogApplied, "binlog-applied", true, "let the target binlog what binlane applies (false needs SUPER/BINLOG ADMIN)")
	fl.Uint32Var(&f.serverID, "server-id", 0, "server_id binlane uses as a replica of the source (0: derived from the stream name)")
	fl.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "heartbeat period asked of the source; three missed ones mean a dead connection")
	fl.IntVar(&f.maxTxnBytes, "max-txn-bytes", 64<<20, "transactions larger than this are streamed, not held in memory")
	fl.IntVar(&f.lockWaitTimeout, "lock-wait-timeout", 20, "innodb_lock_wait_timeout of binlane's target sessions (seconds)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "on stop, how long to wait for transactions in flight")
	fl.BoolVar(&f.allowTriggers, "allow-target-triggers", false,
		"replicate into tables that have triggers on the target (they fire for every replicated row: only for triggers that may run twice)")
	fl.IntVar(&f.windowBytes, "window-bytes", 128<<20, "bytes of transactions in flight at most (memory bound of the applier)")
	fl.IntVar(&f.queueBytes, "queue-bytes", 32<<20, "bytes of binlog events read ahead of the applier")
	fl.IntVar(&f.maxMemory, "max-memory", 384<<20, "soft limit of the process's heap in bytes (the garbage collector works harder near it; 0: none)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "",
		"serve the status page (/), /status, /healthz and Prometheus /metrics on this address (e.g. 127.0.0.1:9797)")
	fl.DurationVar(&f.healthMaxLag, "health-max-lag", 30*time.Second, "/healthz fails once the stream lags this much behind the source")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the run to this file")
	_ = fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.memProfile, "mem-profile", "", "write a Go allocation profile at exit to this file")
	_ = fl.MarkHidden("mem-profile")
	fl.StringVar(&f.copyMode, "copy", "auto", "auto: copy the tables first when the stream has no position and no --start-gtid; never: assume the target is in sync")
	fl.IntVar(&f.copyWorkers, "copy-workers", 4, "chunks written on the target at once during the copy (twice as many source connections read them)")
	fl.StringVar(&f.copyIndexes, "copy-indexes", "after", "after: create copied tables without the secondary indexes that can wait and build them once each table's rows are in; inline: maintain them row by row")
	fl.DurationVar(&f.chunkTime, "chunk-time", 500*time.Millisecond, "time a copied chunk should take; chunk sizes adapt to it")
	fl.IntVar(&f.maxThreadsRunning, "max-threads-running", 0, "hold the copy back while the source's Threads_running is above this (0: no limit; reloaded on SIGHUP)")
	fl.DurationVar(&f.maxReplicaLag, "max-replica-lag", 0, "hold the copy back while a --target-replica lags more than this (0: no limit; reloaded on SIGHUP)")
	fl.StringSliceVar(&f.targetReplicas, "target-replica", nil, "a replica of the target, watched for --max-replica-lag (repeatable; the target's password and TLS options apply)")
}

func parseMode(s string) (scheduler.Mode, error) {
	switch s {
	case "writeset":
		return scheduler.ModeWriteset, nil
	case "commit-order":
		return scheduler.ModeCommitOrder, nil
	case "serial":
		return scheduler.ModeSerial, nil
	}
	return 0, fmt.Errorf("--parallel-mode %q: want writeset, commit-order or serial", s)
}

func runReplicate(ctx context.Context, cmd *cobra.Command, f replicateFlags) error {
	log, err := newLogger(cmd.ErrOrStderr(), f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	src, err := resolveServer("source", f.source, f.sourcePassEnv, f.sourcePassF, f.sourceTLS)
	if err != nil {
		return err
	}
	tgt, err := resolveServer("target", f.target, f.targetPassEnv, f.targetPassF, f.targetTLS)
	if err != nil {
		return err
	}
	rules, err := filter.New(f.databases, f.tables, f.exclude)
	if err != nil {
		return err
	}
	mode, err := parseMode(f.mode)
	if err != nil {
		return err
	}
	if f.workers < 1 || f.maxBatch < 1 {
		return fmt.Errorf("--workers and --max-batch must be at least 1")
	}
	if f.copyMode != "auto" && f.copyMode != "never" {
		return fmt.Errorf("--copy %q: want auto or never", f.copyMode)
	}
	if f.exitWhenCopied && f.copyMode != "auto" {
		return fmt.Errorf("binlane copy needs --copy=auto")
	}
	if f.copyIndexes != "after" && f.copyIndexes != "inline" {
		return fmt.Errorf("--copy-indexes %q: want after or inline", f.copyIndexes)
	}
	if f.copyWorkers < 1 {
		return fmt.Errorf("--copy-workers must be at least 1")
	}
	if f.healthMaxLag <= 0 {
		return fmt.Errorf("--health-max-lag must be positive")
	}
	var replicas []dsn.DSN
	for _, r := range f.targetReplicas {
		d, err := resolveServer("target-replica", r, f.targetPassEnv, f.targetPassF, f.targetTLS)
		if err != nil {
			return err
		}
		replicas = append(replicas, d)
	}
	limits := copier.NewLimits(f.maxThreadsRunning, f.maxReplicaLag)
	go reloadLimitsOnHUP(ctx, cmd, limits, log)
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if f.memProfile != "" {
		defer func() {
			if pf, err := os.Create(f.memProfile); err == nil {
				pprof.Lookup("allocs").WriteTo(pf, 0)
				pf.Close()
			}
		}()
	}
	// Memory is bounded by the queues (bytes), not by the GC: trading a
	// larger heap for fewer collections leaves more CPU to the target,
	// which shares the machine more often than not. The soft limit keeps
	// that trade from growing the heap past what the bounds promise.
	debug.SetGCPercent(400)
	if f.maxMemory > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(f.maxMemory))
	}
	obs := &replicate.Observer{}
	// Bars on a terminal (text logs only: JSON logs are for machines).
	if errOut, ok := cmd.ErrOrStderr().(*os.File); ok && f.copyMode == "auto" && f.logFormat == "text" && onTerminal(errOut) {
		obs.CopyBars = true
		go showCopyBars(ctx, obs, errOut)
	}
	if f.metricsAddr != "" {
		if _, err := startStatusPage(ctx, f.metricsAddr, f.stream, obs, f.healthMaxLag, log); err != nil {
			return err
		}
	}
	return replicate.Run(ctx, replicate.Config{
		Source: src, Target: tgt, Stream: f.stream, Rules: rules,
		StartGTID: f.startGTID, StopAtGTID: f.stopAtGTID, ServerID: f.serverID,
		HeartbeatPeriod: f.heartbeat, MaxTxnBytes: f.maxTxnBytes, QueueBytes: f.queueBytes, DrainTimeout: f.drainTimeout,
		AllowTriggers: f.allowTriggers, Logger: log, Observer: obs,
		Copy: replicate.CopyConfig{Mode: f.copyMode, Workers: f.copyWorkers, ChunkTime: f.chunkTime, InlineIndexes: f.copyIndexes == "inline",
			Limits: limits, Replicas: replicas, ExitWhenDone: f.exitWhenCopied},
		Apply: apply.Config{Workers: f.workers, Mode: mode, MaxBatch: f.maxBatch, MaxBatchBytes: f.maxBatchBytes,
			Window: f.window, WindowBytes: f.windowBytes, SkipBinlog: !f.binlogApplied, LockWaitTimeout: f.lockWaitTimeout},
	})
}
