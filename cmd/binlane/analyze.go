package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// analyzeFlags are the options of `binlane analyze`.
type analyzeFlags struct {
	source, passEnv, passFile  string
	tls                        tlsFlags
	schemaFrom                 string
	files                      []string
	fromGTID, toGTID           string
	databases, tables, exclude []string
	workers                    []int
	maxBatch, cores            int
	durable, json              bool
	serverID                   uint32
	logLevel, logFormat        string
}

func newAnalyzeCmd() *cobra.Command {
	var f analyzeFlags
	cmd := &cobra.Command{
		Use:   "analyze (--source DSN [--start-gtid A] [--stop-at-gtid B] | --file BINLOG [BINLOG...])",
		Short: "Predict how a binlog would replicate: dependencies, critical path, speedup per worker count",
		Long: `Read a range of a source's binlog (streamed as a replica, or from files) and
predict how binlane would apply it, without touching any target: transactions,
rows, bytes and tables; which transactions must run alone and why; the
dependency graph binlane's scheduler builds from the writesets and its critical
path; the hottest tables and keys (where transactions wait for earlier ones);
the time a backlog of these transactions would take with 1, 2, 4 ... 64
workers, simulated with the real scheduler in writeset and in commit-order
mode under a cost model calibrated on binlane's benchmark; and a recommended
worker count.

--source streams from --start-gtid (default: the oldest binlog the source
has) to --stop-at-gtid (default: the end of its binlog) and reads the tables'
definitions (unique and foreign keys, collations) from the source, as the
applier reads the target's. --file reads binlog files without a server; the
keys are then the primary keys the binlog carries (binlog_row_metadata=FULL)
unless --schema names a server to read definitions from.

Exit status: 0 the report was printed, 2 error or bad options.

` + configHelp + ` Here --server-id is read from the command line only (a
stream's server id would clash with the running stream).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && len(f.files) == 0 {
				return fmt.Errorf("unexpected arguments %q (binlog files follow --file)", args)
			}
			f.files = append(f.files, args...)
			if !cmd.Flags().Changed("log-level") {
				_ = cmd.Flags().Set("log-level", "warn") // the report is the output
			}
			f.logLevel, _ = cmd.Flags().GetString("log-level")
			f.logFormat, _ = cmd.Flags().GetString("log-format")
			return runAnalyze(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.source, "source", "", "source server: mysql://user[:pass]@host:port/ or user:pass@tcp(host:port)/")
	addPasswordFlags(fl, "source", &f.passEnv, &f.passFile)
	addTLSFlags(fl, "source-", "source", &f.tls)
	fl.StringSliceVar(&f.files, "file", nil, "read these binlog files (in order) instead of a server; more may follow as arguments")
	fl.StringVar(&f.schemaFrom, "schema", "", "with --file: server to read table definitions from (SELECT on the databases)")
	fl.StringVar(&f.fromGTID, "start-gtid", "", "start after this GTID position (default: the oldest binlog; with --file: the files' start)")
	deprecatedAlias(fl, "from-gtid", "start-gtid")
	fl.StringVar(&f.toGTID, "stop-at-gtid", "", "stop after the transaction that reaches this GTID position (default: the end)")
	deprecatedAlias(fl, "to-gtid", "stop-at-gtid")
	fl.StringSliceVar(&f.databases, "databases", nil, "databases to analyse (comma-separated, wildcards allowed)")
	fl.StringSliceVar(&f.tables, "tables", nil, "tables to analyse, as db.table")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "databases or db.tables to leave out")
	fl.IntSliceVar(&f.workers, "simulate-threads", analyze.DefaultWorkers, "thread counts (replicate's --threads) to simulate")
	deprecatedAlias(fl, "workers", "simulate-threads")
	fl.IntVar(&f.maxBatch, "max-batch", 0, "source transactions merged into one target transaction, as replicate's --max-batch (0: replicate's default for each simulated thread count)")
	fl.IntVar(&f.cores, "cores", 0, "cores the target (and binlane) can use; 0: one per worker")
	fl.BoolVar(&f.durable, "target-durable", true, "model a durable target (innodb_flush_log_at_trx_commit=1, sync_binlog=1)")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	fl.Uint32Var(&f.serverID, "server-id", 0, "replica server id to register with (default: random, above 2^30)")
	// A config file's workers is replicate's thread count, and its
	// server-id the running stream's.
	return withConfig(cmd, "server-id", "workers")
}

func runAnalyze(ctx context.Context, out, errOut io.Writer, f analyzeFlags) error {
	if (f.source == "") == (len(f.files) == 0) {
		return errors.New("give exactly one of --source and --file")
	}
	if f.schemaFrom != "" && f.source != "" {
		return errors.New("--schema is for --file: with --source the definitions are read from the source")
	}
	rules, err := filter.New(f.databases, f.tables, f.exclude)
	if err != nil {
		return err
	}
	var from, to gtid.Set
	if from, err = parseGTIDFlag("start-gtid", f.fromGTID); err != nil {
		return err
	}
	if to, err = parseGTIDFlag("stop-at-gtid", f.toGTID); err != nil {
		return err
	}
	for _, w := range f.workers {
		if w < 1 {
			return fmt.Errorf("--simulate-threads: %d is not a thread count", w)
		}
	}
	if f.logLevel == "" {
		f.logLevel, f.logFormat = "warn", "text"
	}
	log, err := newLogger(errOut, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}

	var src txn.Source
	schemaAddr, schemaPassEnv, schemaPassFile := f.schemaFrom, "", ""
	if f.source != "" {
		d, err := resolveServer("source", f.source, f.passEnv, f.passFile, f.tls)
		if err != nil {
			return err
		}
		wc, err := d.WireConfig()
		if err != nil {
			return d.AnnotateTLS(err)
		}
		cfg := replica.Config{Config: wc, ServerID: f.serverID, NonBlocking: true, Start: replica.StartAtGTID(from), Logger: log}
		if cfg.ServerID == 0 {
			cfg.ServerID = 1<<30 + rand.Uint32N(1<<30)
		}
		s, err := replica.Open(ctx, cfg)
		if err != nil {
			return serverError("source", d, d.AnnotateTLS(err))
		}
		defer s.Close()
		src = s
		schemaAddr, schemaPassEnv, schemaPassFile = f.source, f.passEnv, f.passFile
	} else {
		src = binlog.NewFiles(f.files)
	}

	planner, notes, closeDB, err := analyzePlanner(ctx, schemaAddr, schemaPassEnv, schemaPassFile, f.tls)
	if err != nil {
		return err
	}
	defer closeDB()
	collector := analyze.NewCollector(planner.get)
	if err := collect(ctx, src, txn.Config{Rules: rules, StopAt: to, Start: from, Logger: log}, from, collector); err != nil {
		return err
	}

	model := analyze.DefaultModel(f.durable)
	model.Cores, model.MaxBatch = f.cores, f.maxBatch
	rep := analyze.Analyze(collector.Txns(), analyze.Options{Model: model, Workers: f.workers, Namer: collector.Namer()})
	rep.Filtered = collector.Skipped()
	rep.Notes = append(append(notes, planner.notes()...), rep.Notes...)
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return printAnalysis(out, rep)
}

// collect runs the assembler over src and hands every part to c, leaving
// out transactions at or before skip (files start where they start).
func collect(ctx context.Context, src txn.Source, cfg txn.Config, skip gtid.Set, c *analyze.Collector) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pipe := txn.NewPipe(0)
	asm := txn.NewAssembler(src, cfg)
	done := make(chan error, 1)
	go func() {
		err := asm.Run(ctx, pipe)
		pipe.Close()
		done <- err
	}()
	var addErr error
	for p := range pipe.C() {
		pipe.Taken(&p)
		if addErr != nil || !skip.IsEmpty() && p.Txn.GTID.Flavor != 0 && skip.Contains(p.Txn.GTID) {
			continue
		}
		if addErr = c.Add(p); addErr != nil {
			cancel()
		}
	}
	err := <-done
	switch {
	case addErr != nil:
		return addErr
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, txn.ErrStopped):
		return nil
	}
	return err
}

// analyzePlanner plans tables from a server's definitions when addr is
// given, else from the binlog's table maps alone.
func analyzePlanner(ctx context.Context, addr, passEnv, passFile string, tf tlsFlags) (*planner, []string, func(), error) {
	p := &planner{fallback: map[string]string{}, hidden: map[string]bool{}}
	if addr == "" {
		return p, []string{"no server to read table definitions from: keys are the primary keys the binlog carries; " +
			"unique and foreign keys are not seen and strings compare as bytes, so fewer conflicts are found than the applier " +
			"would find (give --schema)"}, func() {}, nil
	}
	d, err := resolveServer("source", addr, passEnv, passFile, tf)
	if err != nil {
		return nil, nil, nil, err
	}
	db, err := d.OpenDB("")
	if err != nil {
		return nil, nil, nil, serverError("schema", d, err)
	}
	db.SetMaxOpenConns(2)
	colls, err := schema.LoadCollations(ctx, db)
	if err == nil {
		var cache *schema.Cache
		if cache, err = schema.NewCache(ctx, db); err == nil {
			p.builder = plan.NewBuilder(cache, colls, plan.Options{AllowTriggers: true})
		}
	}
	if err != nil {
		db.Close()
		return nil, nil, nil, serverError("schema", d, d.AnnotateTLS(err))
	}
	p.ctx = ctx
	return p, []string{"table definitions were read from " + d.String() + " now: a table changed since the binlog was " +
		"written is analysed with its current definition"}, func() { db.Close() }, nil
}

// planner builds plans the applier's way, from a server's definitions of
// the tables (the source's here: the target's are usually the same), and
// falls back to the binlog's table map for a table it cannot plan.
type planner struct {
	ctx      context.Context
	builder  *plan.Builder
	fallback map[string]string // table -> why its plan came from the binlog
	hidden   map[string]bool   // tables with foreign keys whose rules the account cannot see
	plans    map[*binlog.TableMap]*plan.Table
}

func (p *planner) get(tm *binlog.TableMap) (*plan.Table, error) {
	if p.builder == nil {
		return analyze.TableMapPlan(tm), nil
	}
	if pl, ok := p.plans[tm]; ok {
		return pl, nil
	}
	pl, err := p.builder.Get(p.ctx, tm)
	switch {
	case err != nil:
		if p.ctx.Err() != nil {
			return nil, err
		}
		name := tm.Schema + "." + tm.Table
		if _, ok := p.fallback[name]; !ok {
			p.fallback[name] = err.Error()
		}
		pl = analyze.TableMapPlan(tm)
	case pl.Serialize == plan.SerializeTriggers:
		// The source's triggers: the target's are what would serialize.
		c := *pl
		c.Serialize = ""
		pl = &c
	}
	if pl.Target != nil {
		for _, fk := range append(slices.Clip(pl.Target.ForeignKeys), pl.Target.ReferencedBy...) {
			if fk.RulesHidden {
				p.hidden[fk.ChildSchema+"."+fk.ChildTable] = true
			}
		}
	}
	if p.plans == nil {
		p.plans = map[*binlog.TableMap]*plan.Table{}
	}
	p.plans[tm] = pl
	return pl, nil
}

func (p *planner) notes() []string {
	var out []string
	for name, why := range p.fallback {
		out = append(out, fmt.Sprintf("table %s: keys from the binlog only (%s)", name, why))
	}
	if len(p.hidden) > 0 {
		out = append(out, fmt.Sprintf("the ON DELETE/ON UPDATE rules of the foreign keys of %s are hidden from this account "+
			"(information_schema.REFERENTIAL_CONSTRAINTS needs a privilege beyond SELECT, such as SHOW VIEW): they are taken "+
			"as cascading, so more conflicts may be found than the applier, which reads the target's, would find",
			strings.Join(slices.Sorted(maps.Keys(p.hidden)), ", ")))
	}
	return out
}

// printAnalysis prints a report as tables.
func printAnalysis(w io.Writer, r analyze.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	p := func(format string, a ...any) { fmt.Fprintf(tw, format, a...) }
	p("transactions\t%d\n", r.Transactions)
	if r.Filtered > 0 {
		p("left out by the filter\t%d\n", r.Filtered)
	}
	if r.Transactions == 0 {
		p("\nnothing to analyse in this range\n")
		return tw.Flush()
	}
	p("range\t%s .. %s\n", r.FirstGTID, r.LastGTID)
	p("rows\t%d\n", r.Rows)
	p("bytes\t%s\n", size(r.Bytes))
	p("tables\t%d\n", r.Tables)
	section := func(title string) { p("\n%s\n", title) }
	if len(r.TablesByRows) > 0 {
		section("busiest tables\trows")
		for _, c := range r.TablesByRows {
			p("  %s\t%d\n", c.Name, c.Count)
		}
	}
	section("run alone\ttransactions\tfirst")
	if len(r.Alone) == 0 {
		p("  none\t\t\n")
	}
	for _, a := range r.Alone {
		p("  %s\t%d\t%s\n", a.Reason, a.Count, a.First)
	}
	g := r.Graph
	section("dependencies")
	p("  transactions waiting for an earlier one\t%d (%.0f%%)\n", g.Waiting, 100*float64(g.Waiting)/float64(r.Transactions))
	p("  edges\t%d\n", g.Edges)
	p("  critical path\t%d transactions, %s (%s .. %s)\n", g.CriticalPath.Transactions, dur(g.CriticalPath.Cost),
		g.CriticalPath.First, g.CriticalPath.Last)
	p("  parallelism (work / critical path)\t%.1f\n", g.Parallelism)
	if len(r.HotTables) > 0 {
		section("hottest tables\tconflicts")
		for _, c := range r.HotTables {
			p("  %s\t%d\n", c.Name, c.Count)
		}
	}
	if len(r.HotKeys) > 0 {
		section("hottest keys\tconflicts")
		for _, c := range r.HotKeys {
			p("  %s\t%d\n", c.Name, c.Count)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := printSimulations(w, r); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nrecommended: %s: %s\n", analyze.Workers(r.Recommendation.Workers), r.Recommendation.Reason)
	if len(r.Notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range r.Notes {
			fmt.Fprintf(w, "  - %s\n", n)
		}
	}
	return nil
}

// batchBound says what bounded the simulated batches: --max-batch, or
// replicate's default.
func batchBound(set int) string {
	if set > 0 {
		return strconv.Itoa(set)
	}
	return fmt.Sprintf("%d (replicate's default)", scheduler.DefaultMaxBatch)
}

// printSimulations prints the model and the simulated drains, a row per
// number of workers.
func printSimulations(w io.Writer, r analyze.Report) error {
	m := r.Model
	cores := "one per worker"
	if m.Cores > 0 {
		cores = strconv.Itoa(m.Cores)
	}
	target := "non-durable"
	if m.Durable {
		target = "durable"
	}
	fmt.Fprintf(w, "\nsimulated backlog drain (%s target; per transaction %s, per row %s, commit %s + %s/row + sync %s; intake %s + %s/row; cores: %s; batches up to %s)\n",
		target, dur(m.PerTxn), dur(m.PerRow), dur(m.Commit), dur(m.CommitPerRow), dur(m.Sync), dur(m.Intake), dur(m.IntakePerRow), cores, batchBound(m.MaxBatch))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workers\twriteset trx/s\tspeedup\ttrx/commit\tbusy\tcommit wait\tlimit\tcommit-order trx/s\tspeedup\tlimit\t")
	for _, s := range r.Simulations {
		ws, co := s.Writeset, s.CommitOrder
		fmt.Fprintf(tw, "%d\t%.0f\t%.2fx\t%.1f\t%.0f%%\t%.0f%%\t%s\t%.0f\t%.2fx\t%s\t\n", s.Workers, ws.TxnPerSec, ws.Speedup,
			ws.TxnPerCommit, 100*(ws.Busy+ws.Commit), 100*ws.CommitWait, ws.Bottleneck, co.TxnPerSec, co.Speedup, co.Bottleneck)
	}
	return tw.Flush()
}

func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func dur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}
