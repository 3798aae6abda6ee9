package main

// The copy benchmark: how long it takes to bring an empty, durable target
// (binlog on) to the source's sysbench tables, for binlane's online copy
// and for the offline tools a DBA would reach for, on the same source and
// the same kind of target, in one run:
//   - binlane copy --copy-workers N (timed from process start to exit: the
//     copy, the catch-up and the switch to the stream are inside);
//   - mariadb-dump --single-transaction | mariadb;
//   - mydumper -t N --rows R, then myloader -t N (both timed);
//   - the target's ceiling: the same rows, exported to local files before
//     the clock starts, loaded with N parallel LOAD DATA LOCAL INFILE.
// Then once more with the source under a steady sysbench write load for
// binlane (which must end caught up; the run is then verified) and mydumper
// (an offline snapshot: it ends behind the source, so it is not verified).

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// copySource is the prepared source of the copy benchmark.
type copySource struct {
	bin    string // the binlane binary
	src    *sandbox.Server
	tables []string
	rows   int
	dir    string // exported table files for the LOAD DATA ceiling
}

func runCopyBench(ctx context.Context, c config, bin, outDir string, log *slog.Logger) error {
	if c.copyScalesOnly {
		return runCopyScales(ctx, c, bin, outDir, log)
	}
	cs, err := prepareCopySource(ctx, c, c.tables, c.copyRows, log)
	if err != nil {
		return err
	}
	cs.bin = bin
	defer cs.close()
	res := scenarioResult{Spec: scenarioSpec{name: "copy", title: fmt.Sprintf(
		"copy of %d sysbench rows (%d tables) into an empty durable target (binlog on), source idle", c.tables*c.copyRows, c.tables)},
		Backlog: c.tables * c.copyRows}
	list := copyContenders(c, bin, cs)
	if err := runCopyContenders(ctx, c, cs, list, &res, false, log); err != nil {
		return err
	}
	all := []scenarioResult{res}
	if err := writeCopyResults(outDir, c, all); err != nil {
		return err
	}
	if c.copyLoadRate > 0 {
		loaded := scenarioResult{Spec: scenarioSpec{name: "copy-load", title: fmt.Sprintf(
			"the same copy with the source under sysbench oltp_write_only at %d trx/s", c.copyLoadRate)}, Backlog: res.Backlog}
		var busy []copyContender
		for _, ct := range list {
			if ct.underLoad {
				busy = append(busy, ct)
			}
		}
		if err := runCopyContenders(ctx, c, cs, busy, &loaded, true, log); err != nil {
			return err
		}
		all = append(all, loaded)
	}
	if err := writeCopyResults(outDir, c, all); err != nil {
		return err
	}
	cs.close()
	return runCopyScales(ctx, c, bin, outDir, log)
}

func (cs *copySource) close() {
	if cs.src != nil {
		cs.src.Close()
		cs.src = nil
	}
	os.RemoveAll(cs.dir)
}

func prepareCopySource(ctx context.Context, c config, tables, rows int, log *slog.Logger) (*copySource, error) {
	cs := &copySource{rows: rows}
	var err error
	if cs.dir, err = os.MkdirTemp("", "binlane-copybench-"); err != nil {
		return nil, err
	}
	cs.src, err = sandbox.Start(ctx, sandbox.Options{Role: sandbox.Source, Name: "copybench-source", Extra: serverOptions(c, false)})
	if err != nil {
		return nil, err
	}
	if err := cs.src.Exec(ctx, "CREATE DATABASE sbtest"); err != nil {
		return nil, err
	}
	log.Info("preparing sysbench tables", "tables", tables, "rows", rows)
	if err := sysbench(ctx, cs.src, "oltp_read_write", "prepare", tables, rows, 4, 0); err != nil {
		return nil, err
	}
	for i := 1; i <= tables; i++ {
		cs.tables = append(cs.tables, fmt.Sprintf("sbtest%d", i))
	}
	if err := exportTables(ctx, cs); err != nil {
		return nil, err
	}
	return cs, settle(ctx, cs.src, log)
}

// settle waits until the source has flushed the pages the load dirtied:
// until then its background writes take CPU from whichever contender runs
// first (the first run was a third slower without this).
func settle(ctx context.Context, src *sandbox.Server, log *slog.Logger) error {
	db, err := src.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "SET GLOBAL innodb_max_dirty_pages_pct = 0"); err != nil {
		return err
	}
	t0 := time.Now()
	for time.Since(t0) < 2*time.Minute {
		var name string
		var dirty int64
		if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &dirty); err != nil {
			return err
		}
		if dirty == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	time.Sleep(5 * time.Second) // purge and the change buffer settle too
	log.Info("source settled", "after", time.Since(t0).Round(time.Second))
	return nil
}

// exportTables writes every table as a LOAD DATA file (tab-separated,
// backslash escapes, \N for NULL) for the ceiling.
func exportTables(ctx context.Context, cs *copySource) error {
	db, err := cs.src.Open("sbtest")
	if err != nil {
		return err
	}
	defer db.Close()
	for _, t := range cs.tables {
		if err := exportTable(ctx, db, t, filepath.Join(cs.dir, t+".tsv")); err != nil {
			return fmt.Errorf("export %s: %w", t, err)
		}
	}
	return nil
}

func exportTable(ctx context.Context, db *sql.DB, table, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	rows, err := db.QueryContext(ctx, "SELECT * FROM `"+table+"`")
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	esc := strings.NewReplacer("\\", "\\\\", "\t", "\\t", "\n", "\\n", "\x00", "\\0")
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				w.WriteByte('\t')
			}
			if v == nil {
				w.WriteString(`\N`)
			} else {
				esc.WriteString(w, string(v))
			}
		}
		w.WriteByte('\n')
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return w.Flush()
}

type copyContender struct {
	name, kind string
	underLoad  bool // also run with the source under load
	verify     bool // the result must equal the source
	run        func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error)
}

func copyContenders(c config, bin string, cs *copySource) []copyContender {
	var list []copyContender
	// Under load binlane runs with its default copy workers (4) when the
	// list has it, else with the most.
	best := c.copyWorkers[len(c.copyWorkers)-1]
	if slices.Contains(c.copyWorkers, 4) {
		best = 4
	}
	for _, w := range c.copyWorkers {
		list = append(list, copyContender{name: fmt.Sprintf("binlane copy workers=%d", w), kind: "binlane",
			underLoad: w == best, verify: true,
			run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
				return runBinlaneCopy(ctx, c, bin, cs, dst, w, true)
			}})
	}
	// What building the secondary indexes after the rows gains: the same
	// copy maintaining them row by row.
	list = append(list, copyContender{name: fmt.Sprintf("binlane copy workers=%d, indexes inline", best), kind: "binlane", verify: true,
		run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
			return runBinlaneCopy(ctx, c, bin, cs, dst, best, true, "--copy-indexes", "inline")
		}})
	list = append(list, copyContender{name: "mariadb-dump piped to mariadb", kind: "mariadb", verify: true,
		run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
			return runDumpPipe(ctx, cs, dst)
		}})
	for _, w := range c.copyWorkers {
		list = append(list, copyContender{name: fmt.Sprintf("mydumper+myloader threads=%d", w), kind: "mariadb",
			underLoad: w == 2, verify: true,
			run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
				return runMydumper(ctx, cs, dst, w, true)
			}})
	}
	for _, w := range c.copyWorkers {
		if w < 2 {
			continue
		}
		list = append(list, copyContender{name: fmt.Sprintf("ceiling: LOAD DATA threads=%d", w), kind: "ceiling", verify: true,
			run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
				return runLoadData(ctx, cs, dst, w, true, false)
			}})
		list = append(list, copyContender{name: fmt.Sprintf("ceiling: LOAD DATA threads=%d, indexes after", w), kind: "ceiling", verify: true,
			run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
				return runLoadData(ctx, cs, dst, w, true, true)
			}})
	}
	if c.noBinlog {
		// The same with the target's binlog off for the copied rows:
		// myloader's default, and binlane's --binlog-applied=false. Kinds of
		// their own, so that the ratios above compare binlogged runs only.
		w := best
		list = append(list,
			copyContender{name: fmt.Sprintf("binlane copy workers=%d, binlog off", w), kind: "binlane", verify: true,
				run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
					return runBinlaneCopy(ctx, c, bin, cs, dst, w, false)
				}},
			copyContender{name: fmt.Sprintf("mydumper+myloader threads=%d, binlog off", w), kind: "mariadb-nobinlog", verify: true,
				run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
					return runMydumper(ctx, cs, dst, w, false)
				}},
			copyContender{name: fmt.Sprintf("ceiling: LOAD DATA threads=%d, binlog off", w), kind: "ceiling-nobinlog", verify: true,
				run: func(ctx context.Context, dst *sandbox.Server) (time.Duration, string, error) {
					return runLoadData(ctx, cs, dst, w, false, false)
				}})
	}
	return onlyMatching(c, list)
}

// onlyMatching keeps the contenders --only selects.
func onlyMatching(c config, list []copyContender) []copyContender {
	if c.only == nil {
		return list
	}
	kept := list[:0]
	for _, ct := range list {
		if c.only.MatchString(ct.name) {
			kept = append(kept, ct)
		}
	}
	return kept
}

// runCopyContenders runs the contenders (see interleave), each on a fresh
// empty target; under load, a sysbench write load runs on the source during
// each run.
func runCopyContenders(ctx context.Context, c config, cs *copySource, list []copyContender, res *scenarioResult, load bool, log *slog.Logger) error {
	names := make([]string, len(list))
	kinds := make([]string, len(list))
	for i, ct := range list {
		names[i], kinds[i] = ct.name, ct.kind
	}
	runs, err := interleave(c, res.Spec.name, names, kinds, float64(res.Backlog), func(i int) (time.Duration, string, string, error) {
		return runCopyOne(ctx, c, cs, list[i], load)
	}, log)
	res.Runs = runs
	return err
}

func runCopyOne(ctx context.Context, c config, cs *copySource, ct copyContender, load bool) (time.Duration, string, string, error) {
	dst, err := sandbox.Start(ctx, sandbox.Options{Role: sandbox.Target, Name: "copybench-target", Durable: true,
		Extra: serverOptions(c, true)})
	if err != nil {
		return 0, "", "", err
	}
	defer dst.Close()
	var stopLoad func() error
	if load {
		stopLoad = startLoad(ctx, cs, c.copyLoadRate)
	}
	elapsed, detail, err := ct.run(ctx, dst)
	if stopLoad != nil {
		if lerr := stopLoad(); err == nil && lerr != nil {
			err = fmt.Errorf("write load: %w", lerr)
		}
	}
	if err != nil {
		return 0, "", "", err
	}
	ver := "skipped"
	switch {
	case c.skipVerify:
	case load && ct.kind != "binlane":
		ver = "n/a (offline snapshot)"
	default:
		if load {
			// The copy ended caught up with the source as it was then;
			// bring the target to the source's final position to compare.
			if err := catchUp(ctx, cs, dst); err != nil {
				return 0, "", "", err
			}
		}
		if ver, err = verifyTables(ctx, cs.src, dst, "sbtest"); err != nil {
			return 0, "", "", err
		}
	}
	return elapsed, detail, ver, nil
}

// startLoad runs sysbench oltp_write_only at a fixed rate until stopped.
func startLoad(ctx context.Context, cs *copySource, rate int) func() error {
	lctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(lctx, "sysbench", "oltp_write_only", "--db-driver=mysql", "--mysql-host=127.0.0.1",
		"--mysql-port="+strconv.Itoa(cs.src.Port), "--mysql-user=root", "--mysql-db=sbtest",
		"--tables="+strconv.Itoa(len(cs.tables)), "--table-size="+strconv.Itoa(cs.rows), "--threads=4",
		"--rate="+strconv.Itoa(rate), "--time=0", "--events=0", "--db-ps-mode=disable", "--rand-type=uniform", "run")
	err := cmd.Start()
	return func() error {
		cancel()
		if err != nil {
			return err
		}
		cmd.Wait() // killed: its exit status says nothing
		return nil
	}
}

// catchUp runs binlane replicate on a copied stream until the source's
// current position.
func catchUp(ctx context.Context, cs *copySource, dst *sandbox.Server) error {
	pos, err := gtidPos(ctx, cs.src)
	if err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, cs.bin, "replicate", "--source", cs.src.URL(), "--target", dst.URL(), "--stream", "bench",
		"--databases", "sbtest", "--stop-at-gtid", pos, "--log-level", "warn").CombinedOutput()
	if err != nil {
		return fmt.Errorf("catch up: %v\n%s", err, tail(string(out), 2000))
	}
	return nil
}

func runBinlaneCopy(ctx context.Context, c config, bin string, cs *copySource, dst *sandbox.Server, workers int, binlog bool, extra ...string) (time.Duration, string, error) {
	args := append([]string{"copy", "--source", cs.src.URL(), "--target", dst.URL(), "--stream", "bench",
		"--databases", "sbtest", "--copy-threads", strconv.Itoa(workers), "--log-level", "info", "--log-format", "json"}, extra...)
	if !binlog {
		args = append(args, "--binlog-applied=false")
	}
	if c.applyWorkers > 0 {
		args = append(args, "--threads", strconv.Itoa(c.applyWorkers))
	}
	if c.profileDir != "" {
		args = append(args, "--cpu-profile", fmt.Sprintf("%s/copy-w%d-%d.pprof", c.profileDir, workers, time.Now().UnixNano()))
	}
	return timedCommand(exec.CommandContext(ctx, bin, args...), dst, cs.src, "binlane")
}

func runDumpPipe(ctx context.Context, cs *copySource, dst *sandbox.Server) (time.Duration, string, error) {
	script := fmt.Sprintf("set -o pipefail; mariadb-dump -h127.0.0.1 -P%d -uroot --single-transaction --databases sbtest | mariadb -h127.0.0.1 -P%d -uroot",
		cs.src.Port, dst.Port)
	return timedCommand(exec.CommandContext(ctx, "bash", "-c", script), dst, cs.src, "dump+client")
}

func runMydumper(ctx context.Context, cs *copySource, dst *sandbox.Server, threads int, binlog bool) (time.Duration, string, error) {
	dir, err := os.MkdirTemp("", "binlane-mydumper-")
	if err != nil {
		return 0, "", err
	}
	defer os.RemoveAll(dir)
	t := strconv.Itoa(threads)
	dump := exec.CommandContext(ctx, "mydumper", "-h", "127.0.0.1", "-P", strconv.Itoa(cs.src.Port), "-u", "root",
		"-B", "sbtest", "-t", t, "--rows", "50000", "-o", dir)
	d1, _, err := timedCommand(dump, dst, cs.src, "mydumper")
	if err != nil {
		return 0, "", err
	}
	// -e: binlog the restored rows, like every other contender (myloader
	// turns the binlog off for its sessions by default).
	largs := []string{"-h", "127.0.0.1", "-P", strconv.Itoa(dst.Port), "-u", "root", "-t", t, "-d", dir}
	if binlog {
		largs = append(largs, "-e")
	}
	load := exec.CommandContext(ctx, "myloader", largs...)
	d2, cpu, err := timedCommand(load, dst, cs.src, "myloader")
	if err != nil {
		return 0, "", err
	}
	return d1 + d2, fmt.Sprintf("dump %.1f s + load %.1f s; load %s", d1.Seconds(), d2.Seconds(), cpu), nil
}

// timedCommand runs cmd and reports its wall time and the CPU it, the
// target and the source used; for binlane also its peak memory (RSS) and,
// from its log, what its copy cost the source in round trips. Each watch
// starts when the clock does and its stop function runs when the command
// has exited.
func timedCommand(cmd *exec.Cmd, dst, src *sandbox.Server, who string, watch ...func(t0 time.Time) (stop func())) (time.Duration, string, error) {
	r, err := timedCommandCPU(cmd, dst, src, who, watch...)
	return r.elapsed, r.detail, err
}

// commandRun is what timedCommandCPU measured.
type commandRun struct {
	elapsed time.Duration
	detail  string
	cpu     cpuUse
}

// timedCommandCPU is timedCommand with the CPU figures as numbers.
func timedCommandCPU(cmd *exec.Cmd, dst, src *sandbox.Server, who string, watch ...func(t0 time.Time) (stop func())) (commandRun, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	meter := startCPU(dst, src)
	t0 := time.Now()
	var stops []func()
	for _, w := range watch {
		stops = append(stops, w(t0))
	}
	peak, err := runWatched(cmd)
	elapsed := time.Since(t0)
	for _, stop := range stops {
		stop()
	}
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || out.Len() > 0 {
			return commandRun{}, fmt.Errorf("%s: %v\n%s", who, err, tail(out.String(), 3000))
		}
		return commandRun{}, fmt.Errorf("%s: %w", who, err)
	}
	cpu := meter.stop(cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime())
	detail := fmt.Sprintf("CPU s: %s %.1f, target %.1f, source %.1f", who, cpu.Binlane.Seconds(), cpu.Target.Seconds(), cpu.Source.Seconds())
	if who == "binlane" {
		detail += fmt.Sprintf("; peak RSS %.0f MiB", float64(peak)/(1<<20))
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			// The kernel's share: sockets, and the page faults of a heap
			// that grows (about 11 µs each on the benchmark VM).
			detail += fmt.Sprintf("; binlane's kernel CPU %.1f s, %d page faults", cmd.ProcessState.SystemTime().Seconds(), ru.Minflt)
		}
		detail += copyCost(out.String())
	}
	return commandRun{elapsed: elapsed, detail: detail, cpu: cpu}, nil
}

// copyCost reads the round trips binlane's copy cost the source from its
// JSON log line at the end of the copy.
func copyCost(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"copy done; the target has caught up"`) {
			continue
		}
		var v struct {
			Chunks     int64 `json:"chunks"`
			Trips      int64 `json:"source_round_trips"`
			Still      int64 `json:"chunks_binlog_still"`
			StillTrips int64 `json:"round_trips_binlog_still"`
			Behind     int64 `json:"snapshots_behind_stream"`
		}
		if json.Unmarshal([]byte(line), &v) != nil || v.Chunks == 0 {
			return ""
		}
		out := fmt.Sprintf("; %d chunks, %.2f source round trips per chunk", v.Chunks, float64(v.Trips)/float64(v.Chunks))
		if v.Still > 0 {
			out += fmt.Sprintf(" (binlog still: %d chunks, %.2f per chunk", v.Still, float64(v.StillTrips)/float64(v.Still))
			if moved := v.Chunks - v.Still; moved > 0 {
				out += fmt.Sprintf("; moved: %d chunks, %.2f per chunk, %d snapshots behind the stream", moved,
					float64(v.Trips-v.StillTrips)/float64(moved), v.Behind)
			}
			out += ")"
		}
		return out
	}
	return ""
}

// writeCopyResults writes copy.md and copy-chart.svg.
func writeCopyResults(dir string, c config, all []scenarioResult) error {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Copy: binlane vs mariadb-dump, mydumper/myloader and the LOAD DATA ceiling\n\n"+
		"%s, %s, %d CPUs, Go %s. sysbench `oltp_read_write` schema, %d tables x %d rows. Seconds are the median of %d interleaved runs (all runs in brackets). Machine speed at the start: %s.\n\n",
		time.Now().UTC().Format(time.RFC3339), host, runtime.NumCPU(), runtime.Version(), c.tables, c.copyRows, max(1, c.repeat), c.machine)
	for _, sc := range all {
		loader, ceiling := bestOf(sc, "mariadb"), bestOf(sc, "ceiling")
		fmt.Fprintf(&b, "## %s\n\n%d rows.\n\n| contender | seconds | rows/s | vs best dump tool | vs ceiling | verify | notes |\n|---|---:|---:|---:|---:|---|---|\n",
			sc.Spec.title, sc.Backlog)
		for _, r := range sc.Runs {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %s | %s | %s | %s |\n", r.Name, secondsCell(r), r.TrxPerS,
				ratio(r.TrxPerS, loader), ratio(r.TrxPerS, ceiling), r.Verified, r.Detail)
		}
		b.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "copy.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "copy-chart.svg"), []byte(chart(all, "rows/s")), 0o644)
}

func bestOf(sc scenarioResult, kind string) float64 {
	best := 0.0
	for _, r := range sc.Runs {
		if r.Kind == kind && r.TrxPerS > best {
			best = r.TrxPerS
		}
	}
	return best
}

func ratio(v, of float64) string {
	if of <= 0 {
		return ""
	}
	return fmt.Sprintf("%.2fx", v/of)
}
