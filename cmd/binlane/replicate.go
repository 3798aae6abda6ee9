package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/hugeheap"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/scheduler"
)

// Defaults chosen from the benchmark (see bench/README.md).
const defaultWorkers = 4

// maxBatchFor is --max-batch as set, or its default
// (scheduler.DefaultMaxBatch: the one place that chooses it).
func maxBatchFor(set int) int {
	if set > 0 {
		return set
	}
	return scheduler.DefaultMaxBatch
}

type replicateFlags struct {
	pairFlags
	stream                  string
	startGTID, stopAtGTID   string
	skipGTID                string
	threads                 int
	mode                    string
	maxBatch, maxBatchBytes int
	renderAhead             bool
	window                  int
	binlogApplied           bool
	serverID                uint32
	heartbeat               time.Duration
	maxTxnBytes             int
	lockWaitTimeout         time.Duration
	drainTimeout            time.Duration
	allowTriggers           bool
	windowBytes, queueBytes int
	maxMemory               int
	metricsAddr             string
	readyMaxLag             time.Duration
	statusInterval          time.Duration
	cpuProfile, memProfile  string
	execTrace               string
	copyMode                string
	copyThreads             int
	chunkTime               time.Duration
	limits                  limitFlags
	copyIndexes             string
	definer, copyEvents     string
	exitWhenCopied          bool
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
	addStreamFlags(cmd, &f)
	return withConfig(cmd)
}

// newCopyCmd is replicate that ends once the copy is done and caught up.
func newCopyCmd() *cobra.Command {
	f := replicateFlags{exitWhenCopied: true}
	cmd := &cobra.Command{
		Use:   "copy --source DSN --target DSN",
		Short: "Copy the selected tables into an empty target online, catch up from the binlog, and exit",
		Long: `Copy the selected tables of a live source into an empty target: chunks of
rows read in consistent snapshots, each applied at its exact place in the
binlog stream, which runs at the same time, --copy-threads of them written
at once; then catch up and exit 0 once every table is copied and the
target has applied everything the source had committed by then. The tables
are created on the target from the source's definitions (without
triggers), without the secondary indexes that can wait: each table gets
them with one ALTER TABLE once its rows are in, before it counts as copied
(--copy-indexes=inline keeps them from the start). Sequences (with their
state), views, stored routines and events (disabled until the cut-over;
--copy-events) are created too, with their definers (--definer); a view
the target cannot take is named in a warning at start.

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
	addStreamFlags(cmd, &f)
	return withConfig(cmd)
}

func addStreamFlags(cmd *cobra.Command, f *replicateFlags) {
	fl := cmd.Flags()
	addPairFlags(fl, &f.pairFlags, pairHelp{
		source:    "source server address (mysql://user@host:port/, user@tcp(host:port)/ or user@unix(/path/to.sock)/)",
		target:    "target server address",
		databases: "databases to replicate (comma-separated, wildcards allowed)",
		tables:    "tables to replicate, as db.table",
		exclude:   "databases or db.tables to skip",
	})
	fl.StringVar(&f.stream, "stream", "default", "name of the stream (its state lives in binlane.streams on the target)")
	fl.StringVar(&f.startGTID, "start-gtid", "", "start after this GTID position instead of the saved one")
	fl.StringVar(&f.stopAtGTID, "stop-at-gtid", "", "stop right after the transaction that reaches this GTID position")
	fl.StringVar(&f.skipGTID, "skip-gtid", "", "record this transaction, which must be the next one at the saved position, as applied without "+
		"running it: the way past one binlane refused, after fixing the target by hand")
	fl.IntVar(&f.threads, "threads", defaultWorkers, "target connections applying transactions at once (1: serial)")
	deprecatedAlias(fl, "workers", "threads")
	fl.StringVar(&f.mode, "parallel-mode", "writeset", "how independent transactions are found: writeset, commit-order or serial")
	fl.IntVar(&f.maxBatch, "max-batch", 0, "source transactions merged into one target transaction (0: 256; 1: no merging)")
	sizeVar(fl, &f.maxBatchBytes, "max-batch-bytes", 4<<20, "bound on the size of a merged target transaction")
	fl.BoolVar(&f.renderAhead, "render-ahead", true, "render a thread's next merged transaction while the target commits the one before")
	_ = fl.MarkHidden("render-ahead")
	fl.IntVar(&f.window, "window", 0, "transactions in flight at most (0: derived from threads and batch, sized by the threads kept busy)")
	fl.BoolVar(&f.binlogApplied, "binlog-applied", true, "let the target binlog what binlane applies (false needs SUPER/BINLOG ADMIN)")
	fl.Uint32Var(&f.serverID, "server-id", 0, "server_id binlane uses as a replica of the source (0: derived from the stream name)")
	fl.DurationVar(&f.heartbeat, "heartbeat", 5*time.Second, "heartbeat period asked of the source; three missed ones mean a dead connection")
	sizeVar(fl, &f.maxTxnBytes, "max-txn-bytes", 64<<20, "transactions larger than this are streamed, not held in memory")
	secondsVar(fl, &f.lockWaitTimeout, "lock-wait-timeout", 20*time.Second, "innodb_lock_wait_timeout of binlane's target sessions (whole seconds)")
	fl.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Second, "on stop, how long to wait for transactions in flight")
	fl.BoolVar(&f.allowTriggers, "allow-target-triggers", false,
		"replicate into tables that have triggers on the target (they fire for every replicated row: only for triggers that may run twice)")
	sizeVar(fl, &f.windowBytes, "window-bytes", 128<<20, "transactions in flight at most, in bytes (memory bound of the applier)")
	sizeVar(fl, &f.queueBytes, "queue-bytes", replica.DefaultQueueBytes, "binlog events read ahead of the applier, in bytes")
	sizeVar(fl, &f.maxMemory, "max-memory", 384<<20, "soft limit of the process's heap (the garbage collector works harder near it; 0: none); by default raised to what the byte bounds may hold with many threads")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "",
		"serve the status page (/), /status, /history, /healthz, /readyz and Prometheus /metrics on this address (e.g. 127.0.0.1:9797)")
	fl.DurationVar(&f.readyMaxLag, "ready-max-lag", 30*time.Second, "/readyz fails once the stream lags this much behind the source")
	deprecatedAlias(fl, "health-max-lag", "ready-max-lag")
	fl.DurationVar(&f.statusInterval, "status-interval", time.Minute,
		"once copied, log a status line (state, position, lag, transactions/s) this often (0: never)")
	fl.StringVar(&f.cpuProfile, "cpu-profile", "", "write a Go CPU profile of the run to this file")
	_ = fl.MarkHidden("cpu-profile")
	fl.StringVar(&f.memProfile, "mem-profile", "", "write a Go allocation profile at exit to this file")
	fl.StringVar(&f.execTrace, "exec-trace", "", "write a Go execution trace of the run to this file (where goroutines wait: go tool trace -pprof=sched)")
	_ = fl.MarkHidden("exec-trace")
	_ = fl.MarkHidden("mem-profile")
	fl.StringVar(&f.copyMode, "copy", "auto", "auto: copy the tables first when the stream has no position and no --start-gtid; never: assume the target is in sync")
	fl.IntVar(&f.copyThreads, "copy-threads", 4, "chunks written on the target at once during the copy (twice as many source connections read them)")
	deprecatedAlias(fl, "copy-workers", "copy-threads")
	fl.StringVar(&f.copyIndexes, "copy-indexes", "after", "after: create copied tables without the secondary indexes that can wait and build them once each table's rows are in; inline: maintain them row by row")
	fl.StringVar(&f.definer, "definer", "source", "source: create copied views, routines and events with the source's DEFINER (the target needs the accounts, and binlane SET USER); current: with binlane's target account as their DEFINER")
	fl.StringVar(&f.copyEvents, "copy-events", "disabled", "disabled: create copied events DISABLE ON SLAVE, as MariaDB's replica does (the cut-over enables them); source: with the source's status")
	fl.DurationVar(&f.chunkTime, "chunk-time", 500*time.Millisecond, "time a copied chunk should take; chunk sizes adapt to it")
	addLimitFlags(fl, &f.limits, "the copy and the applier")
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

// checkPositionFlags parses the GTID options up front: replicate.Run reads
// them only once both servers answered, after retries.
func checkPositionFlags(f replicateFlags) error {
	if _, err := parseGTIDFlag("start-gtid", f.startGTID); err != nil {
		return err
	}
	if _, err := parseGTIDFlag("stop-at-gtid", f.stopAtGTID); err != nil {
		return err
	}
	if f.skipGTID != "" {
		if _, err := gtid.Parse(f.skipGTID); err != nil {
			return gtidFlagError("skip-gtid", err)
		}
	}
	return nil
}

func runReplicate(ctx context.Context, cmd *cobra.Command, f replicateFlags) error {
	// On a terminal the copy draws bars (text logs only: JSON logs are for
	// machines), and log lines go through the bars' writer, above them.
	errOut, _ := cmd.ErrOrStderr().(*os.File)
	logFormat, _ := cmd.Flags().GetString("log-format")
	bars := errOut != nil && f.copyMode == "auto" && logFormat == "text" && onTerminal(errOut)
	sink := &logSink{w: cmd.ErrOrStderr()}
	cmd.SetErr(sink)
	if err := checkPositionFlags(f); err != nil {
		return err
	}
	s, err := f.start(cmd)
	if err != nil {
		return err
	}
	mode, err := checkStreamFlags(f)
	if err != nil {
		return err
	}
	th, stopThrottle, err := startThrottle(ctx, cmd, f.limits, &f.pairFlags, s)
	if err != nil {
		return err
	}
	defer stopThrottle()
	// The helpers below run beside the stream in aux's goroutines, which
	// end with it: none outlives the command.
	auxCtx, stopAux := context.WithCancel(ctx)
	var aux errgroup.Group
	defer func() { stopAux(); _ = aux.Wait() }()
	stopProfiles, err := startProfiles(f.cpuProfile, f.memProfile, f.execTrace)
	if err != nil {
		return err
	}
	defer stopProfiles()
	tuneMemory(&f, cmd.Flags().Changed("max-memory"), s.log)
	obs := &replicate.Observer{}
	if bars {
		obs.CopyBars = true
		aux.Go(func() error { showCopyBars(auxCtx, obs, errOut, sink); return nil })
	}
	if f.metricsAddr != "" {
		if _, err := startStatusPage(auxCtx, &aux, f.metricsAddr, f.stream, obs, f.readyMaxLag, s.log); err != nil {
			return err
		}
	}
	if f.statusInterval > 0 {
		aux.Go(func() error { logStatus(auxCtx, obs, f.statusInterval, s.log); return nil })
	}
	return replicate.Run(ctx, replicate.Config{
		Source: s.src, Target: s.tgt, Stream: f.stream, Rules: s.rules,
		StartGTID: f.startGTID, StopAtGTID: f.stopAtGTID, SkipGTID: f.skipGTID, ServerID: f.serverID,
		HeartbeatPeriod: f.heartbeat, MaxTxnBytes: f.maxTxnBytes, QueueBytes: f.queueBytes, DrainTimeout: f.drainTimeout,
		AllowTriggers: f.allowTriggers, Logger: s.log, Observer: obs, Throttle: th,
		Copy: replicate.CopyConfig{Mode: f.copyMode, Workers: f.copyThreads, ChunkTime: f.chunkTime, InlineIndexes: f.copyIndexes == "inline",
			ExitWhenDone: f.exitWhenCopied,
			Objects:      provision.ObjectOptions{CurrentDefiner: f.definer == "current", EventsAsSource: f.copyEvents == "source"}},
		Apply: apply.Config{Workers: f.threads, Mode: mode, MaxBatch: maxBatchFor(f.maxBatch), MaxBatchBytes: f.maxBatchBytes, NoRenderAhead: !f.renderAhead,
			Window: f.window, WindowBytes: f.windowBytes, SkipBinlog: !f.binlogApplied, LockWaitTimeout: int(f.lockWaitTimeout / time.Second)},
	})
}

// checkStreamFlags checks the stream's own options (those no other command
// has) and returns the parallel mode.
func checkStreamFlags(f replicateFlags) (scheduler.Mode, error) {
	mode, err := parseMode(f.mode)
	if err != nil {
		return 0, err
	}
	switch {
	case f.threads < 1 || f.maxBatch < 0:
		return 0, fmt.Errorf("--threads must be at least 1 and --max-batch at least 0 (its default)")
	case f.copyMode != "auto" && f.copyMode != "never":
		return 0, fmt.Errorf("--copy %q: want auto or never", f.copyMode)
	case f.exitWhenCopied && f.copyMode != "auto":
		return 0, fmt.Errorf("binlane copy needs --copy=auto")
	case f.copyThreads < 1:
		return 0, fmt.Errorf("--copy-threads must be at least 1")
	case f.readyMaxLag <= 0:
		return 0, fmt.Errorf("--ready-max-lag must be positive")
	case f.lockWaitTimeout < time.Second || f.lockWaitTimeout%time.Second != 0:
		return 0, fmt.Errorf("--lock-wait-timeout %s: want whole seconds, at least 1s", f.lockWaitTimeout)
	case f.statusInterval < 0:
		return 0, fmt.Errorf("--status-interval must not be negative")
	case f.copyIndexes != "after" && f.copyIndexes != "inline":
		return 0, fmt.Errorf("--copy-indexes %q: want after or inline", f.copyIndexes)
	case f.definer != "source" && f.definer != "current":
		return 0, fmt.Errorf("--definer %q: want source or current", f.definer)
	case f.copyEvents != "disabled" && f.copyEvents != "source":
		return 0, fmt.Errorf("--copy-events %q: want disabled or source", f.copyEvents)
	}
	return mode, nil
}

// tuneMemory sets the garbage collector for a stream. Memory is bounded by
// the queues (bytes), not by the GC: trading a larger heap for fewer
// collections leaves more CPU to the target, which shares the machine more
// often than not. But every page of heap is paid once more, when first
// touched (a page fault, 20-40 µs each on the benchmark's VM): GOGC 400 let
// the heap grow to 5x its live ~10 MiB and a 30,000-transaction drain
// spent 0.3 s of binlane's 1.0 s faulting it in; 200 halves the faults
// for a few more collections of 2-6 ms each. GOGC from the environment
// wins, as GOMEMLIMIT does. The soft limit keeps that trade from growing
// the heap past what the bounds promise. explicit: --max-memory was given.
// The heap the bounds may use is then marked for transparent huge pages
// (hugeheap): where the kernel grants them, a first touch faults in 2 MiB
// at once (documents benchmark: 2,353 faults against 30,458).
func tuneMemory(f *replicateFlags, explicit bool, log *slog.Logger) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	limit, need := heapLimit(f, explicit)
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		if limit < need {
			log.Warn("--max-memory is below what the byte bounds may hold: the garbage collector will run often and cost CPU",
				"max_memory", limit, "bounds", need, "threads", f.threads)
		}
		debug.SetMemoryLimit(int64(limit))
	}
	_, marked := hugeheap.Reserve(int(min(int64(need), debug.SetMemoryLimit(-1))))
	log.Debug("heap marked for transparent huge pages", "bytes", marked)
}

// startProfiles starts the hidden profiling options' profiles; stop
// writes them.
func startProfiles(cpu, mem, execTrace string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if cpu != "" {
		pf, err := os.Create(cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			pf.Close()
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); pf.Close() })
	}
	if execTrace != "" {
		tf, err := os.Create(execTrace)
		if err != nil {
			stop()
			return nil, err
		}
		if err := trace.Start(tf); err != nil {
			tf.Close()
			stop()
			return nil, err
		}
		stops = append(stops, func() { trace.Stop(); tf.Close() })
	}
	if mem != "" {
		stops = append(stops, func() {
			if pf, err := os.Create(mem); err == nil {
				pprof.Lookup("allocs").WriteTo(pf, 0)
				pf.Close()
			}
		})
	}
	return stop, nil
}

// gcPercent is the collector's GOGC for a stream (see tuneMemory).
const gcPercent = 200

// Heap the process needs besides its byte bounds (decoding, writesets,
// the scheduler, the runtime), and per worker beside the window (its
// rendered round trip, the driver's copy, collapsed rows): measured, the
// bulk benchmark's 100,000-row transactions with 16 workers.
const heapBase, heapPerWorker = 128 << 20, 16 << 20

// heapLimit returns the soft heap limit and what the byte bounds may hold.
// A soft limit below what the bounds let the process hold makes the
// collector run nearly nonstop once they fill (16 workers on the bulk
// benchmark: binlane's CPU 2.3 s without a limit, 8.1 s under the default
// 384 MiB), so a limit the user did not set is raised to cover them; one
// the user set is kept (the caller warns).
func heapLimit(f *replicateFlags, explicit bool) (limit, need int) {
	need = f.windowBytes + f.queueBytes + f.threads*heapPerWorker + heapBase
	if explicit || f.maxMemory <= 0 {
		return f.maxMemory, need
	}
	return max(f.maxMemory, need), need
}
