package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// scenarioSpec says which backlog a scenario replays and how the target
// is configured.
type scenarioSpec struct {
	name     string
	title    string
	workload string       // sysbench test
	app      *appScenario // instead: binlane's workload generator
	threads  int          // 0: the --threads flag
	tables   int          // 0: the --tables flag
	rows     int          // rows per table; 0: the --table-size flag
	durable  bool
}

// database is the database the scenario writes.
func (s scenarioSpec) database() string {
	if s.app != nil {
		return s.app.mode.Schema()
	}
	return "sbtest"
}

// native returns the MariaDB configurations to run: the --native flag's,
// else the scenario's own, else the sysbench scenarios' default.
func (s scenarioSpec) native(c config) []string {
	switch {
	case len(c.native) == 1 && c.native[0] == "none":
		return nil
	case len(c.native) > 0:
		return c.native
	case s.app != nil:
		return s.app.native
	}
	return []string{"serial", "optimistic:4", "optimistic:8", "optimistic:16"}
}

// shape returns the scenario's tables, rows per table and client threads.
func (s scenarioSpec) shape(c config) (tables, rows, threads int) {
	tables, rows, threads = c.tables, c.tableSize, c.threads
	if s.tables > 0 {
		tables = s.tables
	}
	if s.rows > 0 {
		rows = s.rows
	}
	if s.threads > 0 {
		threads = s.threads
	}
	return tables, rows, threads
}

// backlogKey names the backlog a scenario replays: scenarios with the same
// workload and shape share one.
func (s scenarioSpec) backlogKey(c config) string {
	if s.app != nil {
		return "app/" + s.app.name
	}
	tables, rows, threads := s.shape(c)
	return fmt.Sprintf("%s/%d/%d/%d", s.workload, tables, rows, threads)
}

var scenarioSpecs = withApps(map[string]scenarioSpec{
	"durable": {name: "durable", workload: "oltp_write_only", durable: true,
		title: "oltp_write_only, durable target (innodb_flush_log_at_trx_commit=1, sync_binlog=1, log_slave_updates)"},
	"nondurable": {name: "nondurable", workload: "oltp_write_only", durable: false,
		title: "oltp_write_only, non-durable target (innodb_flush_log_at_trx_commit=2, sync_binlog=0)"},
	"worstcase": {name: "worstcase", workload: "oltp_update_index", threads: 1, durable: true,
		title: "single-threaded oltp_update_index, durable target"},
	// Every transaction updates one of 16 rows: nearly every transaction
	// conflicts with one just before it, so writesets find little to run at
	// once. More workers must then cost next to nothing.
	"hotrows": {name: "hotrows", workload: "oltp_update_index", tables: 1, rows: 16, durable: true,
		title: "hot rows: oltp_update_index on 1 table of 16 rows, durable target"},
})

func withApps(m map[string]scenarioSpec) map[string]scenarioSpec {
	for name, s := range appSpecs() {
		m[name] = s
	}
	return m
}

// backlog is a source holding a generated backlog, and the data directory
// every target starts from.
type backlog struct {
	src      *sandbox.Server
	baseline string // data directory of the state before the backlog
	start    string // GTID position before the backlog
	end      string // after it
	txns     int
	dir      string
	// written is the source's position over the backlog's generation.
	written []sample
	// predicted is analyze's prediction, by durability.
	predicted map[bool]prediction
}

func (b *backlog) close() {
	if b.src != nil {
		b.src.Close()
	}
	os.RemoveAll(b.dir)
}

// serverOptions are the options every benchmark server runs with.
func serverOptions(c config, durable bool) []string {
	opts := []string{"innodb-buffer-pool-size=" + c.bufferPool, "innodb-log-file-size=1G", "max-connections=1000",
		"innodb-io-capacity=2000"}
	if durable {
		opts = append(opts, "innodb-doublewrite=1")
	}
	return append(opts, c.serverOpts...)
}

// makeBacklog prepares the sysbench tables on a fresh source, keeps a copy
// of that state, and runs the workload to build the backlog.
func makeBacklog(ctx context.Context, c config, spec scenarioSpec, log *slog.Logger) (*backlog, error) {
	b := &backlog{}
	var err error
	if b.dir, err = os.MkdirTemp("", "binlane-bench-"); err != nil {
		return nil, err
	}
	b.src, err = sandbox.Start(ctx, sandbox.Options{Role: sandbox.Source, Name: "bench-source", Extra: serverOptions(c, false)})
	if err != nil {
		return nil, err
	}
	srcDB, err := sql.Open("mysql", b.src.DSN(""))
	if err != nil {
		return nil, err
	}
	defer func() { srcDB.Close() }()
	tables, rows, threads := spec.shape(c)
	if spec.app != nil {
		log.Info("preparing the workload's tables", "mode", spec.app.mode)
		if err := prepareApp(ctx, c, spec.app, srcDB); err != nil {
			return nil, err
		}
	} else {
		if err := b.src.Exec(ctx, "CREATE DATABASE sbtest"); err != nil {
			return nil, err
		}
		log.Info("preparing sysbench tables", "tables", tables, "rows", rows)
		if err := sysbench(ctx, b.src, spec.workload, "prepare", tables, rows, 4, 0); err != nil {
			return nil, err
		}
	}
	if err := analyzeTables(ctx, srcDB, spec.database()); err != nil {
		return nil, err
	}
	if b.start, err = gtidPos(ctx, b.src); err != nil {
		return nil, err
	}
	// The baseline: the source's data as it is now, without its binlogs.
	if err := b.src.Stop(); err != nil {
		return nil, err
	}
	b.baseline = filepath.Join(b.dir, "baseline")
	if out, err := exec.CommandContext(ctx, "cp", "-a", b.src.DataDir(), b.baseline).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy baseline: %v: %s", err, out)
	}
	if err := dropBinlogs(b.baseline); err != nil {
		return nil, err
	}
	if err := b.src.Start(ctx); err != nil {
		return nil, err
	}
	srcDB.Close() // its connections died with the restart
	if srcDB, err = sql.Open("mysql", b.src.DSN("")); err != nil {
		return nil, err
	}
	t0 := time.Now()
	if spec.app != nil {
		wc := workloadConfig(c, spec.app)
		log.Info("generating the backlog", "mode", spec.app.mode, "transactions", wc.Transactions, "sessions", wc.Sessions,
			"rate", wc.Rate)
		// The source's position over time, for the peak lag.
		written := startSampler(ctx, t0, queryPos(srcDB, "SELECT @@gtid_binlog_pos"))
		err = generateApp(ctx, c, spec.app, srcDB, log)
		b.written = written.Stop()
	} else {
		log.Info("generating the backlog", "workload", spec.workload, "transactions", c.transactions, "threads", threads)
		err = sysbench(ctx, b.src, spec.workload, "run", tables, rows, threads, c.transactions)
	}
	if err != nil {
		return nil, err
	}
	if b.end, err = gtidPos(ctx, b.src); err != nil {
		return nil, err
	}
	b.txns = seqDiff(b.start, b.end)
	log.Info("backlog ready", "from", b.start, "to", b.end, "transactions", b.txns,
		"source_trx_per_s", fmt.Sprintf("%.0f", float64(b.txns)/time.Since(t0).Seconds()))
	return b, nil
}

// analyzeTables refreshes the persistent statistics of the database's
// tables before the baseline is taken. InnoDB recalculates them in the
// background some seconds after a table changes, and the source stops
// right after its load: without this the baseline (and every target
// started from it) would keep the statistics of the empty tables, which a
// server that has run for a while does not have. The optimizer then takes
// a table of 200,000 rows for one of 0 and answers DELETE ... IN (500 keys)
// with a full scan (bulk, 2026-11-29: 30 million rows examined by the
// deletes of one drain). MariaDB's replica finds rows through the handler,
// without the optimizer, so only binlane paid for it.
func analyzeTables(ctx context.Context, db *sql.DB, database string) error {
	rules, err := filter.New([]string{database}, nil, nil)
	if err != nil {
		return err
	}
	tables, err := schema.SelectedTables(ctx, db, rules)
	if err != nil || len(tables) == 0 {
		return err
	}
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = sqlquote.Qualified(t[0], t[1])
	}
	// ANALYZE answers with a result set (a row per table), which must be read.
	rows, err := db.QueryContext(ctx, "ANALYZE TABLE "+strings.Join(names, ", "))
	if err != nil {
		return fmt.Errorf("analyze %s: %w", database, err)
	}
	defer rows.Close()
	for rows.Next() {
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("analyze %s: %w", database, err)
	}
	return nil
}

// dropBinlogs removes binlog files from a copied data directory, so a
// target started from it begins a binlog of its own.
func dropBinlogs(dir string) error {
	files, _ := filepath.Glob(filepath.Join(dir, "binlog.*"))
	for _, f := range files {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	return nil
}

func sysbench(ctx context.Context, s *sandbox.Server, test, cmd string, tables, size, threads, events int) error {
	args := []string{test, "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(s.Port),
		"--mysql-user=root", "--mysql-db=sbtest", "--tables=" + strconv.Itoa(tables), "--table-size=" + strconv.Itoa(size),
		"--threads=" + strconv.Itoa(threads), "--db-ps-mode=disable"}
	if cmd == "run" {
		args = append(args, "--events="+strconv.Itoa(events), "--time=0", "--rand-type=uniform")
	}
	args = append(args, cmd)
	out, err := exec.CommandContext(ctx, "sysbench", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("sysbench %s %s: %v\n%s", test, cmd, err, tail(string(out), 2000))
	}
	return nil
}

func gtidPos(ctx context.Context, s *sandbox.Server) (string, error) {
	db, err := sql.Open("mysql", s.DSN(""))
	if err != nil {
		return "", err
	}
	defer db.Close()
	var pos string
	err = db.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos)
	return pos, err
}

// seqDiff counts transactions between two single-domain positions.
func seqDiff(a, b string) int {
	seq := func(s string) int {
		i := strings.LastIndexByte(s, '-')
		n, _ := strconv.Atoi(s[i+1:])
		return n
	}
	return seq(b) - seq(a)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// buildBinlane compiles the binlane binary once for all runs, into a
// folder of its own that the caller removes.
func buildBinlane(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "binlane-bench-bin-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "binlane")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/binlane").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build binlane: %v\n%s", err, out)
	}
	return bin, nil
}
