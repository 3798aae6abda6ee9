package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/verify"
)

// runResult is one contender's drain of a backlog.
type runResult struct {
	Name     string
	Kind     string // "binlane" or "mariadb"
	Elapsed  time.Duration
	TrxPerS  float64
	Verified string // "equal", "DIFFERENT", "skipped"
	Detail   string
	All      []time.Duration // every repetition
	// CPU is what one run cost each process, averaged over repetitions.
	CPU cpuUse
	// PeakLag is the median over repetitions of the run's peak lag (see
	// peakLag); zero when not measured.
	PeakLag time.Duration
}

type scenarioResult struct {
	Spec    scenarioSpec
	Backlog int
	Runs    []runResult
	// Predicted is analyze's prediction for the backlog (nil: not run).
	Predicted *prediction
}

// drained is one drain of the backlog: the time taken, notes, the
// target's position over the drain, and the CPU it cost.
type drained struct {
	elapsed time.Duration
	detail  string
	samples []sample
	cpu     cpuUse
}

// drainFunc drains the backlog into dst.
type drainFunc func(context.Context, *sandbox.Server) (drained, error)

func runScenario(ctx context.Context, c config, spec scenarioSpec, b *backlog, bin string, log *slog.Logger) (scenarioResult, error) {
	spec.title = spec.heading(c)
	res := scenarioResult{Spec: spec, Backlog: b.txns}
	type contender struct {
		name, kind string
		run        drainFunc
	}
	var list []contender
	for _, w := range c.workers {
		list = append(list, contender{fmt.Sprintf("binlane workers=%d", w), "binlane",
			func(ctx context.Context, dst *sandbox.Server) (drained, error) {
				return runBinlane(ctx, c, bin, spec, b, dst, w)
			}})
	}
	if c.baseline != "" {
		// The same backlog drained by another build: an A/B in one run.
		for _, w := range c.workers {
			list = append(list, contender{fmt.Sprintf("baseline workers=%d", w), "baseline",
				func(ctx context.Context, dst *sandbox.Server) (drained, error) {
					return runBinlane(ctx, c, c.baseline, spec, b, dst, w)
				}})
		}
	}
	for _, n := range spec.native(c) {
		if n == "rowevents" {
			list = append(list, contender{"row events as BINLOG statements (reference)", "reference",
				func(ctx context.Context, dst *sandbox.Server) (drained, error) {
					return runRowEvents(ctx, b, dst)
				}})
			continue
		}
		mode, threads, live := parseNative(n)
		name := "mariadb serial"
		if threads > 0 {
			name = fmt.Sprintf("mariadb %s threads=%d", mode, threads)
		}
		kind := "mariadb"
		if live {
			// Not one of the goals' contenders (they fetch first): a
			// reference for how a replica catching up runs.
			name, kind = name+", fetching as it applies", "reference"
		}
		list = append(list, contender{name, kind,
			func(ctx context.Context, dst *sandbox.Server) (drained, error) {
				return runNative(ctx, b, dst, mode, threads, live)
			}})
	}
	names := make([]string, len(list))
	kinds := make([]string, len(list))
	for i, ct := range list {
		names[i], kinds[i] = ct.name, ct.kind
	}
	lags := make([][]time.Duration, len(list))
	var err error
	cpus := make([]cpuUse, len(list))
	res.Runs, err = interleave(c, spec.name, names, kinds, float64(b.txns), func(i int) (time.Duration, string, string, error) {
		d, ver, err := runOne(ctx, c, spec, b, list[i].name, list[i].run)
		if at, ok := firstApplied(d.samples, seqOf(b.start)); err == nil && ok {
			d.detail += fmt.Sprintf("; first transaction applied after %.2f s", at.Seconds())
		}
		if err == nil && spec.app != nil {
			lag, at := peakLag(b.written, d.samples, seqOf(b.start), seqOf(b.end))
			lags[i] = append(lags[i], lag)
			if at > 0 {
				d.detail += fmt.Sprintf("; peak lag at transaction %d of %d", at-seqOf(b.start), b.txns)
			}
		}
		cpus[i] = cpus[i].add(d.cpu)
		return d.elapsed, d.detail, ver, err
	}, log)
	if err != nil {
		return res, err
	}
	for i := range res.Runs {
		if len(lags[i]) > 0 {
			res.Runs[i].PeakLag = median(lags[i])
		}
		res.Runs[i].CPU = cpus[i].div(max(1, c.repeat))
	}
	if c.analyze {
		p := b.predicted[spec.durable]
		res.Predicted = &p
	}
	return res, nil
}

// interleave runs every contender c.repeat times, interleaved (every
// contender once, then again), so that a slow spell of the machine does
// not land on one contender only; the median counts. work is what a run
// does (transactions, rows): the rate is work per second.
func interleave(c config, scenario string, names, kinds []string, work float64,
	run func(i int) (elapsed time.Duration, detail, verified string, err error), log *slog.Logger) ([]runResult, error) {
	times := make([][]time.Duration, len(names))
	details := make([]string, len(names))
	verified := make([]string, len(names))
	for rep := 0; rep < max(1, c.repeat); rep++ {
		// Each repetition starts with another contender: with a fixed
		// order the first contender's target cost 4-16% more CPU per
		// transaction (pinned, 2026-11-29: build A first, then build B
		// first, both showed it).
		for j := range names {
			i := (j + rep) % len(names)
			name := names[i]
			log.Info("running", "scenario", scenario, "contender", name, "repetition", rep+1, "run", c.progress.next())
			elapsed, detail, ver, err := run(i)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", scenario, name, err)
			}
			times[i] = append(times[i], elapsed)
			details[i] = detail
			if verified[i] == "" || ver != "equal" && ver != "skipped" {
				verified[i] = ver
			}
			log.Info("done", "scenario", scenario, "contender", name, "seconds", fmt.Sprintf("%.1f", elapsed.Seconds()),
				"per_second", fmt.Sprintf("%.0f", work/elapsed.Seconds()), "verify", ver, "detail", detail)
		}
	}
	out := make([]runResult, len(names))
	for i := range names {
		med := median(times[i])
		out[i] = runResult{Name: names[i], Kind: kinds[i], Elapsed: med, TrxPerS: work / med.Seconds(),
			Detail: details[i], Verified: verified[i], All: times[i]}
	}
	return out, nil
}

// runOne starts a target from the baseline, runs one contender on it and
// verifies the result.
func runOne(ctx context.Context, c config, spec scenarioSpec, b *backlog, name string, run drainFunc) (
	d drained, ver string, err error) {
	dst, err := sandbox.Start(ctx, sandbox.Options{Role: sandbox.Target, Name: "bench-target", DataFrom: b.baseline,
		Durable: spec.durable, Extra: serverOptions(c, spec.durable)})
	if err != nil {
		return d, "", err
	}
	defer dst.Close()
	if c.pin {
		if err := pin(dst.PID(), targetCore); err != nil {
			return d, "", err
		}
		if err := pin(b.src.PID(), otherCores); err != nil {
			return d, "", err
		}
	}
	stopPerf, err := recordTarget(ctx, c.perfDir, spec.name+"-"+name, dst.PID())
	if err != nil {
		return d, "", err
	}
	d, err = run(ctx, dst)
	if perr := stopPerf(); err == nil && perr != nil {
		return d, "", perr
	}
	if err != nil {
		return d, "", err
	}
	if d, err = purgeTail(ctx, dst, d); err != nil {
		return d, "", err
	}
	ver = "skipped"
	if !c.skipVerify {
		if ver, err = verifyTables(ctx, b.src, dst, spec.database()); err != nil {
			return d, "", err
		}
	}
	return d, ver, nil
}

// purgeTail adds to a drain's target CPU what the target spends after it
// purging the undo its changes left (InnoDB's history list), waiting up to
// 30 s for the list to shrink to what a quiet server keeps. A drain that
// ends fast leaves that work outside its window, a slow one pays it
// inside (bulk, non-durable, 6,000 transactions: MariaDB serial's target
// spent 0.4 CPU-s purging after a drain of 1.2-1.5). Counted for every
// contender alike.
func purgeTail(ctx context.Context, dst *sandbox.Server, d drained) (drained, error) {
	db, err := sql.Open("mysql", dst.DSN(""))
	if err != nil {
		return d, err
	}
	defer db.Close()
	cpu0, t0 := processCPU(dst.PID()), time.Now()
	for time.Since(t0) < 30*time.Second {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT COUNT FROM information_schema.INNODB_METRICS WHERE NAME = 'trx_rseg_history_len'").Scan(&n); err != nil {
			return d, fmt.Errorf("purge: %w", err)
		}
		if n <= purgedHistory {
			break
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	tail := processCPU(dst.PID()) - cpu0
	d.cpu.Target += tail
	d.detail += fmt.Sprintf("; purge after the drain: target CPU %.2f s more (counted in the per-transaction figures)", tail.Seconds())
	return d, nil
}

// purgedHistory is the history list length taken as purged: a few
// transactions' undo that purge leaves until more arrives.
const purgedHistory = 64

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// parseNative reads serial or mode:threads, with +live for a replica
// whose IO thread fetches while its SQL threads apply (runNative).
func parseNative(s string) (mode string, threads int, live bool) {
	s, live = strings.CutSuffix(s, "+live")
	if s == "serial" {
		return "none", 0, live
	}
	mode, n, _ := strings.Cut(s, ":")
	threads, _ = strconv.Atoi(n)
	return mode, threads, live
}

// runBinlane drains the backlog with the binlane binary; its position is
// read from its table on the target every 25 ms.
func runBinlane(ctx context.Context, c config, bin string, spec scenarioSpec, b *backlog, dst *sandbox.Server, workers int) (
	drained, error) {
	args := []string{"replicate", "--source", b.src.URL(), "--target", dst.URL(), "--stream", "bench",
		"--start-gtid", b.start, "--stop-at-gtid", b.end, "--threads", strconv.Itoa(workers), "--databases", spec.database(),
		"--log-level", "warn", "--server-id", strconv.Itoa(c.progress.serverID())}
	if c.maxBatch > 0 {
		args = append(args, "--max-batch", strconv.Itoa(c.maxBatch))
	}
	if c.window > 0 {
		args = append(args, "--window", strconv.Itoa(c.window))
	}
	args = append(args, strings.Fields(c.binlaneFlags)...)
	if c.profileDir != "" {
		stamp := time.Now().UnixNano()
		args = append(args, "--cpu-profile", fmt.Sprintf("%s/binlane-w%d-%d.pprof", c.profileDir, workers, stamp),
			"--mem-profile", fmt.Sprintf("%s/binlane-w%d-%d.mprof", c.profileDir, workers, stamp))
	}
	db, err := sql.Open("mysql", dst.DSN(""))
	if err != nil {
		return drained{}, err
	}
	defer db.Close()
	// binlane's own tables (binlane.streams and the rest) exist before the
	// clock starts, as MariaDB's mysql.gtid_slave_pos does in the baseline
	// and its CHANGE MASTER runs before its clock: creating them is a
	// first start's cost, not a drain's (about 100 ms of the target's CPU,
	// most of it InnoDB creating five tablespaces: 6-9% of a drain of
	// 30,000 small transactions here).
	if err := position.Ensure(ctx, db); err != nil {
		return drained{}, fmt.Errorf("creating binlane's tables before the drain: %w", err)
	}
	var samples []sample
	cores := ""
	if c.pin {
		cores = otherCores
	}
	if err := warmPages(dst.Dir, warmMiB); err != nil {
		return drained{}, err
	}
	stmts0 := targetCounters(ctx, db)
	name, args := pinned(cores, bin, args...)
	r, err := timedCommandCPU(exec.CommandContext(ctx, name, args...), dst, b.src, "binlane", func(t0 time.Time) func() {
		s := startSampler(ctx, t0, queryPos(db, "SELECT gtid_pos FROM binlane.streams WHERE name = 'bench'"))
		return func() { samples = s.Stop() }
	})
	if err != nil {
		return drained{}, err
	}
	// The end: the position the process exited at.
	samples = append(samples, sample{r.elapsed, seqOf(b.end)})
	stmts := targetCounters(ctx, db)
	for i := range stmts {
		stmts[i] -= stmts0[i]
	}
	txns := float64(max(1, seqOf(b.end)-seqOf(b.start)))
	detail := r.detail + fmt.Sprintf("; target row statements per transaction %.2f (insert %.2f, update %.2f, delete %.2f, "+
		"replace %.2f, load %.2f), %.0f bytes received per transaction",
		float64(stmts[0]+stmts[1]+stmts[2]+stmts[3]+stmts[4])/txns, float64(stmts[0])/txns, float64(stmts[1])/txns, float64(stmts[2])/txns,
		float64(stmts[3])/txns, float64(stmts[4])/txns, float64(stmts[5])/txns)
	return drained{elapsed: r.elapsed, detail: workerLoad(ctx, dst) + "; " + detail, samples: samples, cpu: r.cpu}, nil
}

// targetCounters reads the target's counts of INSERT (upserts included),
// UPDATE, DELETE, REPLACE and LOAD DATA statements run, those inside
// compound statements included, and the bytes it received (statement
// text, files): what the drain made it parse.
func targetCounters(ctx context.Context, db *sql.DB) [6]int64 {
	var out [6]int64
	names := []string{"com_insert", "com_update", "com_delete", "com_replace", "com_load", "bytes_received"}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Com_insert','Com_update','Com_delete','Com_replace','Com_load','Bytes_received')")
	if err != nil {
		return out
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int64
		if rows.Scan(&name, &n) != nil {
			continue
		}
		if i := slices.Index(names, strings.ToLower(name)); i >= 0 {
			out[i] = n
		}
	}
	return out
}

// workerLoad summarizes binlane's last status report: per-worker busy and
// commit-wait shares.
func workerLoad(ctx context.Context, dst *sandbox.Server) string {
	db, err := sql.Open("mysql", dst.DSN(""))
	if err != nil {
		return ""
	}
	defer db.Close()
	var stats string
	db.QueryRowContext(ctx, "SELECT COALESCE(stats,'') FROM binlane.streams WHERE name='bench'").Scan(&stats)
	return summarizeStats(stats)
}

// runNative drains the backlog with MariaDB's own replica: the IO thread
// fetches everything first, then the SQL thread(s) are timed. live: both
// start together and are timed together, as on a replica catching up (the
// source's dump and the IO thread's relay log writes in the timed phase,
// as binlane's reading is).
func runNative(ctx context.Context, b *backlog, dst *sandbox.Server, mode string, threads int, live bool) (drained, error) {
	db, err := sql.Open("mysql", dst.DSN(""))
	if err != nil {
		return drained{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	setup := []string{
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_USE_GTID=slave_pos", b.src.Port),
		"SET GLOBAL gtid_slave_pos = " + sqlquote.String(b.start),
		fmt.Sprintf("SET GLOBAL slave_parallel_threads=%d", threads),
		"SET GLOBAL slave_parallel_mode = " + sqlquote.String(mode),
	}
	if !live {
		setup = append(setup, "START SLAVE IO_THREAD")
	}
	for _, q := range setup {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return drained{}, fmt.Errorf("%s: %w", q, err)
		}
	}
	start := "START SLAVE"
	if !live {
		if err := waitRelayFetched(ctx, db, b.src); err != nil {
			return drained{}, err
		}
		start = "START SLAVE SQL_THREAD"
	}
	if err := warmPages(dst.Dir, warmMiB); err != nil {
		return drained{}, err
	}
	want, _ := gtid.ParseSet(b.end)
	meter := startCPU(dst, b.src)
	t0 := time.Now()
	if _, err := db.ExecContext(ctx, start); err != nil {
		return drained{}, err
	}
	var samples []sample
	for {
		var pos string
		if err := db.QueryRowContext(ctx, "SELECT @@gtid_slave_pos").Scan(&pos); err != nil {
			return drained{}, err
		}
		if n := len(samples); n == 0 || samples[n-1].seq != seqOf(pos) {
			samples = append(samples, sample{time.Since(t0), seqOf(pos)})
		}
		if got, err := gtid.ParseSet(pos); err == nil && got.ContainsSet(want) {
			break
		}
		if err := sqlThreadError(ctx, db); err != nil {
			return drained{}, err
		}
		select {
		case <-ctx.Done():
			return drained{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	elapsed := time.Since(t0)
	cpu := meter.stop(0)
	db.ExecContext(ctx, "STOP SLAVE")
	return drained{elapsed: elapsed, detail: fmt.Sprintf("CPU s: target %.1f", cpu.Target.Seconds()), samples: samples, cpu: cpu}, nil
}

// waitRelayFetched waits until the IO thread has read the source's binlog
// to its end.
func waitRelayFetched(ctx context.Context, db *sql.DB, src *sandbox.Server) error {
	sdb, err := sql.Open("mysql", src.DSN(""))
	if err != nil {
		return err
	}
	defer sdb.Close()
	var file string
	var pos int64
	var ignore1, ignore2 sql.NullString
	if err := sdb.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&file, &pos, &ignore1, &ignore2); err != nil {
		return fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	for {
		st, err := slaveStatus(ctx, db)
		if err != nil {
			return err
		}
		if st["Master_Log_File"] == file && st["Read_Master_Log_Pos"] == strconv.FormatInt(pos, 10) {
			return nil
		}
		if e := st["Last_IO_Error"]; e != "" {
			return fmt.Errorf("replica IO thread: %s", e)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func sqlThreadError(ctx context.Context, db *sql.DB) error {
	st, err := slaveStatus(ctx, db)
	if err != nil {
		return err
	}
	if e := st["Last_SQL_Error"]; e != "" {
		return fmt.Errorf("replica SQL thread: %s", e)
	}
	return nil
}

func slaveStatus(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	out := map[string]string{}
	if rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, c := range cols {
			out[c] = vals[i].String
		}
	}
	return out, rows.Err()
}

// verifyTables compares the tables of a database on source and target.
func verifyTables(ctx context.Context, src, dst *sandbox.Server, database string) (string, error) {
	s, err := sql.Open("mysql", src.DSN(""))
	if err != nil {
		return "", err
	}
	defer s.Close()
	d, err := sql.Open("mysql", dst.DSN(""))
	if err != nil {
		return "", err
	}
	defer d.Close()
	s.SetMaxOpenConns(8)
	d.SetMaxOpenConns(8)
	rules, _ := filter.New([]string{database}, nil, nil)
	rep, err := verify.Run(ctx, verify.Config{Source: s, Target: d, Rules: rules, Parallel: 2})
	if err != nil {
		return "", err
	}
	if rep.Equal() {
		return "equal", nil
	}
	return "DIFFERENT", nil
}

// processCPU reads a process's user+system CPU time from /proc.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil || pid <= 0 {
		return 0
	}
	// Fields after the command name (which may contain spaces).
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ=100)
}
