// Command bench measures how fast binlane drains a replication backlog,
// against MariaDB's own replica applying the same backlog to the same
// starting target, on throwaway local servers.
//
// Method (pause-load-resume, GTID-based timing): a backlog (sysbench, or
// binlane's workload generator for the application scenarios, apps.go) is
// generated on a source while no target runs; the target's starting state
// is a copy of the source's data directory taken before the backlog. Every
// contender starts from a fresh copy of that directory and applies the
// backlog from the GTID before it to the GTID after it:
//   - binlane: `binlane replicate --start-gtid P0 --stop-at-gtid P1`, timed
//     from process start to exit (connecting and reading the binlog over
//     the network included);
//   - MariaDB: the IO thread fetches the whole relay log first, then the
//     SQL thread(s) are started and timed until gtid_slave_pos reaches P1.
//
// Every run ends with `verify` of the scenario's database (source and
// target must be equal). Results go to a Markdown table and an SVG chart.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type config struct {
	transactions int
	tables       int
	tableSize    int
	threads      int
	scenarios    []string
	workers      []int
	native       []string
	out          string
	skipVerify   bool
	bufferPool   string
	serverOpts   []string // --server-options: more options of every server
	maxBatch     int
	binlaneFlags string
	window       int
	profileDir   string
	perfDir      string // --perf-dir: perf record of the target during each drain
	pin          bool   // --pin: see targetCore
	repeat       int
	machine      string
	mode         string
	copyRows     int
	copyWorkers  []int
	copyLoadRate int
	only         *regexp.Regexp // contenders to run (nil: all)
	applyWorkers int            // binlane --workers in the copy benchmark (0: its default)
	noBinlog     bool           // copy benchmark: also run with the target's binlog off
	// The application scenarios (apps.go).
	appTransactions int // transactions per backlog (0: each scenario's own)
	appSessions     int // generator sessions writing the backlog
	bulkRows        int
	bulkEvery       int
	analyze         bool // run binlane analyze on every backlog: predicted next to measured speedups
	progress        *progress
	// copyScales are the sizes the copy's time and memory are measured at
	// (after the comparison; copyScalesOnly: instead of it).
	copyScales     []copyScale
	copyScalesOnly bool
	// binlane is a binary to measure instead of one built from this tree
	// (an A/B of two versions on the same machine).
	binlane string
	// baseline is another build measured beside it (an A/B in one run).
	baseline string
}

func main() {
	var c config
	var scenarios, workers, native string
	flag.IntVar(&c.transactions, "transactions", 100000, "sysbench transactions in the backlog")
	flag.IntVar(&c.tables, "tables", 8, "sysbench tables")
	flag.IntVar(&c.tableSize, "table-size", 100000, "rows per sysbench table")
	flag.IntVar(&c.threads, "threads", 16, "sysbench client threads generating the backlog")
	flag.StringVar(&scenarios, "scenarios", "sysbench", "scenarios or groups, comma-separated. sysbench: durable, nondurable, worstcase "+
		"(single-threaded oltp_update_index, durable), hotrows (oltp_update_index on 16 rows, durable); apps: shop, orderentry, bulk, "+
		"docs (binlane's workload generator, durable target) and each with -nondurable; all: both groups")
	flag.StringVar(&workers, "workers", "1,2,4,8,16", "binlane worker counts")
	flag.StringVar(&native, "native", "", "MariaDB replica configurations, serial or mode:threads, or none; +live (serial+live) adds one whose IO thread fetches as it applies, timed from the start of both (a reference); rowevents adds the BINLOG-statement reference "+
		"(default: serial,optimistic:4,8,16 for sysbench; every mode at 4/8/16 for shop and orderentry, fewer for bulk and docs)")
	flag.IntVar(&c.appTransactions, "app-transactions", 0, "transactions in each application backlog (0: 20,000; docs 10,000)")
	flag.IntVar(&c.appSessions, "app-sessions", 8, "generator sessions writing the application backlogs")
	flag.IntVar(&c.bulkRows, "bulk-rows", 100000, "rows of each bulk UPDATE and DELETE (scenario bulk)")
	flag.IntVar(&c.bulkEvery, "bulk-every", 3000, "one bulk transaction in this many (scenario bulk)")
	flag.BoolVar(&c.analyze, "analyze", true, "run binlane analyze on every backlog and put its predicted speedups next to the measured ones")
	flag.StringVar(&c.out, "out", "bench/results", "folder for the results")
	flag.BoolVar(&c.skipVerify, "skip-verify", false, "skip the row-by-row comparison after each run")
	flag.StringVar(&c.bufferPool, "buffer-pool", "1G", "innodb_buffer_pool_size of every server")
	var serverOpts string
	flag.StringVar(&serverOpts, "server-options", "", "more options of every server, comma-separated (binlog-cache-size=4M,...)")
	flag.IntVar(&c.maxBatch, "max-batch", 0, "binlane --max-batch (0: its default)")
	flag.StringVar(&c.binlaneFlags, "binlane-flags", "", "more flags for binlane replicate, space-separated (e.g. '--max-txn-bytes 8MiB'); the baseline gets them too")
	flag.IntVar(&c.window, "window", 0, "binlane --window (0: its default)")
	flag.IntVar(&c.repeat, "repeat", 1, "runs of every contender (interleaved); the median counts")
	flag.StringVar(&c.profileDir, "profile-dir", "", "write a CPU profile of every binlane run into this folder")
	flag.StringVar(&c.perfDir, "perf-dir", "", "drain mode: record the target's mariadbd with perf during every drain (binlane's and MariaDB's replica's "+
		"alike) and write perf.data and its top symbols into this folder")
	flag.BoolVar(&c.pin, "pin", false, "drain mode: the target's mariadbd alone on core 1, the source and binlane on core 0 (taskset), "+
		"for binlane and MariaDB's replica alike: the target's core is everyone's ceiling")
	var copyWorkers string
	flag.StringVar(&c.mode, "mode", "drain", "drain: replay backlogs against MariaDB's replica; copy: copy an idle and a busy source into an empty target against mariadb-dump, mydumper and LOAD DATA")
	flag.IntVar(&c.copyRows, "copy-rows", 250000, "rows per sysbench table in the copy benchmark")
	flag.StringVar(&copyWorkers, "copy-workers", "1,2,4,8", "copy worker and tool thread counts (binlane also runs under load with 4, or the last)")
	flag.IntVar(&c.copyLoadRate, "copy-load-rate", 300, "sysbench trx/s on the source during the loaded copy runs (0: skip them)")
	flag.IntVar(&c.applyWorkers, "copy-apply-workers", 0, "binlane --workers (target connections writing chunks) in the copy benchmark (0: binlane's default)")
	flag.BoolVar(&c.noBinlog, "copy-nobinlog", false, "copy mode: also run binlane, myloader and LOAD DATA with the target's binlog off for the copied rows")
	scales := flag.String("copy-scales", "", "copy mode: measure binlane's copy and the LOAD DATA ceiling (indexes after) at these sizes: total rows over --tables tables, or ROWSxTABLES (e.g. 500k,2M,8M,8Mx1)")
	flag.BoolVar(&c.copyScalesOnly, "copy-scales-only", false, "copy mode: run only the --copy-scales measurements")
	flag.StringVar(&c.binlane, "binlane", "", "measure this binlane binary instead of building one from this tree")
	flag.StringVar(&c.baseline, "baseline", "", "drain mode: also measure this binlane binary (another build) on the same backlogs, as the contenders \"baseline workers=N\"")
	only := flag.String("only", "", "copy mode: run only the contenders whose name matches this regular expression (e.g. 'binlane.*=4|ceiling')")
	flag.Parse()
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: --only:", err)
			os.Exit(2)
		}
		c.only = re
	}
	var err error
	if c.copyScales, err = parseScales(*scales, c.tables); err != nil {
		fmt.Fprintln(os.Stderr, "bench: --copy-scales:", err)
		os.Exit(2)
	}
	for _, w := range split(copyWorkers) {
		var n int
		fmt.Sscan(w, &n)
		c.copyWorkers = append(c.copyWorkers, n)
	}
	if c.pin && runtime.NumCPU() < 2 {
		fmt.Fprintln(os.Stderr, "bench: --pin needs two cores")
		os.Exit(2)
	}
	if c.pin {
		// The bench itself (its polling during a drain, its runtime) stays
		// off the target's core too: unpinned, a docs drain showed ~850
		// switches from the target to the bench in 2.5 s (perf sched_switch).
		if err := pin(os.Getpid(), otherCores); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
	c.scenarios = expandScenarios(split(scenarios))
	c.native = split(native)
	c.serverOpts = split(serverOpts)
	for _, w := range split(workers) {
		var n int
		fmt.Sscan(w, &n)
		c.workers = append(c.workers, n)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, log); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func run(ctx context.Context, c config, log *slog.Logger) error {
	bin := c.binlane
	if bin == "" {
		var err error
		if bin, err = buildBinlane(ctx); err != nil {
			return err
		}
		defer os.RemoveAll(filepath.Dir(bin))
	}
	c.machine = machineSpeed(ctx)
	log.Info("machine", "speed", c.machine)
	stamp := time.Now().UTC().Format("20060102-150405")
	outDir := filepath.Join(c.out, stamp)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	if c.mode == "copy" {
		if err := runCopyBench(ctx, c, bin, outDir, log); err != nil {
			return err
		}
		log.Info("results written", "folder", outDir)
		return nil
	}
	c.progress = &progress{start: time.Now()}
	for _, sc := range c.scenarios {
		spec, ok := scenarioSpecs[sc]
		if !ok {
			return fmt.Errorf("unknown scenario %q", sc)
		}
		c.progress.total += (len(c.workers) + len(spec.native(c))) * max(1, c.repeat)
	}
	log.Info("plan", "scenarios", strings.Join(c.scenarios, ","), "runs", c.progress.total)
	var all []scenarioResult
	backlogs := map[string]*backlog{}
	defer func() {
		for _, b := range backlogs {
			b.close()
		}
	}()
	for _, sc := range c.scenarios {
		spec := scenarioSpecs[sc]
		key := spec.backlogKey(c)
		b := backlogs[key]
		if b == nil {
			var err error
			if b, err = makeBacklog(ctx, c, spec, log); err != nil {
				return err
			}
			backlogs[key] = b
		}
		if _, done := b.predicted[spec.durable]; c.analyze && !done {
			log.Info("analyze", "scenario", spec.name)
			if b.predicted == nil {
				b.predicted = map[bool]prediction{}
			}
			b.predicted[spec.durable] = predict(ctx, c, bin, b, spec)
		}
		res, err := runScenario(ctx, c, spec, b, bin, log)
		if err != nil {
			return err
		}
		all = append(all, res)
		if err := writeResults(outDir, c, all); err != nil {
			return err
		}
	}
	log.Info("results written", "folder", outDir)
	return nil
}

// progress counts the runs of a benchmark for its log.
type progress struct {
	start       time.Time
	total, done int
	ids         int // binlane runs started (serverID)
}

// serverID returns the server_id of the next binlane run, from 1001 (the
// sandboxes are 1 and 2): each run is a replica of its own, because a
// build that leaves its dump thread on the source (stop 45's and before)
// made the next run with the same server_id wait about 100 ms for the
// source to kill it.
func (p *progress) serverID() int {
	if p == nil {
		return 1000
	}
	p.ids++
	return 1000 + p.ids
}

// next counts a run starting and says where the benchmark stands.
func (p *progress) next() string {
	if p == nil || p.total == 0 {
		return ""
	}
	p.done++
	s := fmt.Sprintf("%d/%d, %s elapsed", p.done, p.total, time.Since(p.start).Round(time.Second))
	if p.done > 1 {
		per := time.Since(p.start) / time.Duration(p.done-1)
		s += fmt.Sprintf(", about %s left", (per * time.Duration(p.total-p.done+1)).Round(time.Minute))
	}
	return s
}
