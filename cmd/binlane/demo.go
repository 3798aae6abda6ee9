package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/pause"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/verify"
	"github.com/binlane/binlane/internal/workload"
)

type demoFlags struct {
	live        time.Duration
	orders      int
	workers     int
	copyWorkers int
	sessions    int
	rate        int
	statusAddr  string
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "The whole job on throwaway local servers: copy into an empty target under load, replicate, analyze, verify online",
		Long: `Start a throwaway MariaDB source and target on free local ports. The source
gets a web shop (customers with a unique e-mail, items, orders and order
lines linked by cascading foreign keys) with a few hundred thousand rows,
and a live workload as a shop has it (balance updates, orders of 1-5 lines
with their stock, shipping, deletes of old orders) at --rate transactions
per second.

binlane then does its main job into the empty target, as the least-privilege
accounts the README documents: copy the tables online, catch up, and go on
replicating with the parallel applier, while the live status is shown (and
served on the status page). It analyzes the binlog the workload produced,
stops the load, waits for the target to catch up, compares both sides row
by row with an online verify, and prints a summary. The servers are removed
at the end, also on Ctrl-C.

Exit status: 0 equal, 1 source and target differ, 2 error or interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	fl := cmd.Flags()
	fl.DurationVar(&f.live, "duration", time.Minute, "how long the live status is shown after the copy started")
	fl.IntVar(&f.orders, "orders", 60000, "orders seeded before the copy (each with 1-5 lines; as many customers, a fifth as many items)")
	fl.IntVar(&f.workers, "threads", defaultWorkers, "binlane's applier threads (replicate's --threads)")
	deprecatedAlias(fl, "workers", "threads")
	fl.IntVar(&f.copyWorkers, "copy-threads", 2, "binlane's copy threads (replicate's --copy-threads)")
	deprecatedAlias(fl, "copy-workers", "copy-threads")
	fl.IntVar(&f.sessions, "sessions", 4, "concurrent workload sessions on the source")
	fl.IntVar(&f.rate, "rate", 300, "workload transactions per second (0: as fast as the source takes them)")
	fl.StringVar(&f.statusAddr, "metrics-addr", "127.0.0.1:0", "where the status page listens (port 0: any free port)")
	return cmd
}

// demo holds the demo's servers and connections.
type demo struct {
	out            io.Writer
	f              demoFlags
	src, dst       *sandbox.Server
	srcDSN, dstDSN dsn.DSN
	srcDB, dstDB   *sql.DB // root: the workload and the demo's own reads
	rules          filter.Rules
	obs            *replicate.Observer
	final          streamstatus.Snapshot // the apply phase's counters, for the summary
	invoiced       int                   // calls of shop.invoice_order during the load
}

func (d *demo) say(format string, args ...any) { fmt.Fprintf(d.out, format+"\n", args...) }

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	d := &demo{out: out, f: f, obs: &replicate.Observer{}}
	defer d.close()
	if err := d.start(ctx); err != nil {
		return err
	}
	start, err := d.seed(ctx)
	if err != nil {
		return err
	}

	// The workload runs from here to the end of the live phase.
	wlCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	loaded := d.load(wlCtx)

	repCtx, stopRep := context.WithCancel(ctx)
	var page errgroup.Group
	defer func() { stopRep(); _ = page.Wait() }()
	addr, err := startStatusPage(repCtx, &page, f.statusAddr, "demo", d.obs, 30*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	repErr := make(chan error, 1)
	began := time.Now()
	go func() { repErr <- d.replicate(repCtx) }()
	d.say("\nbinlane replicate --copy=auto into the empty target: %d copy workers, %d apply workers; %d trx/s of load on the source.",
		f.copyWorkers, f.workers, f.rate)
	d.say("status page: http://%s/  (also /status, /healthz, /metrics)\n", addr)
	if err := d.live(ctx, began, repErr); err != nil {
		return err
	}

	end := d.pos(ctx)
	d.say("\nbinlane analyze --start-gtid %s --stop-at-gtid %s (the workload's binlog):", start, end)
	if err := runAnalyze(ctx, out, io.Discard, analyzeFlags{source: d.src.URL(), fromGTID: start, toGTID: end,
		databases: []string{demoSchema}, workers: []int{1, 2, 4, 8, 16}}); err != nil {
		return fmt.Errorf("analyze: %w", err)
	}

	stopLoad()
	wl, err := loaded()
	if err != nil {
		return err
	}
	d.say("\nload stopped after %d transactions (%d rolled back by the source); waiting for the target to catch up...",
		wl.Committed.Load(), wl.Failed.Load())
	if err := d.caughtUp(ctx, repErr); err != nil {
		return err
	}
	d.say("caught up. Online verify (the stream keeps running; it holds a moment at each snapshot's position):")
	rep, err := d.verify(ctx)
	if err != nil {
		return err
	}
	if err := rep.Format(out); err != nil {
		return err
	}
	d.summary(began, rep)
	stopRep()
	if err := <-repErr; err != nil {
		return fmt.Errorf("replicate: %w", err)
	}
	if !rep.Equal() {
		return withExitCode(exitDiffer, errors.New("demo: source and target differ"))
	}
	d.say("\nsource and target are equal. Removing the servers.")
	return nil
}

// load runs the shop's workload and the invoice job on the source until
// ctx ends; wait returns the workload's counters once both ended.
func (d *demo) load(ctx context.Context) (wait func() (*workload.Stats, error)) {
	wlDone := make(chan error, 1)
	var wl *workload.Stats
	go func() {
		var err error
		cfg := d.shop()
		cfg.Seed, cfg.Sessions, cfg.Rate = time.Now().UnixNano(), d.f.sessions, d.f.rate
		wl, err = workload.Run(ctx, d.srcDB, cfg)
		wlDone <- err
	}()
	invDone := make(chan error, 1)
	go func() {
		var err error
		d.invoiced, err = d.invoices(ctx)
		invDone <- err
	}()
	return func() (*workload.Stats, error) {
		if err := <-wlDone; err != nil {
			return nil, fmt.Errorf("workload: %w", err)
		}
		if err := <-invDone; err != nil {
			return nil, err
		}
		return wl, nil
	}
}

// start starts the servers; binlane connects as its documented accounts.
func (d *demo) start(ctx context.Context) error {
	d.say("starting a throwaway source and target on free local ports...")
	var err error
	if d.src, err = sandbox.Start(ctx, sandbox.Options{Role: sandbox.Source, Name: "demo-source"}); err != nil {
		return err
	}
	if d.dst, err = sandbox.Start(ctx, sandbox.Options{Role: sandbox.Target, Name: "demo-target"}); err != nil {
		return err
	}
	srcURL, err := d.src.GrantBinlane(ctx, false, demoSchema)
	if err != nil {
		return err
	}
	// With the optional grants: SET USER creates the copied objects with
	// their DEFINER. A target that binlogs takes stored functions only
	// with log_bin_trust_function_creators (README: privileges).
	dstURL, err := d.dst.GrantBinlane(ctx, true, demoSchema)
	if err != nil {
		return err
	}
	if err := d.dst.Exec(ctx, "SET GLOBAL log_bin_trust_function_creators = ON"); err != nil {
		return err
	}
	if d.srcDSN, err = dsn.Parse(srcURL); err != nil {
		return err
	}
	if d.dstDSN, err = dsn.Parse(dstURL); err != nil {
		return err
	}
	if d.srcDB, err = d.src.Open(""); err != nil {
		return err
	}
	d.srcDB.SetMaxOpenConns(d.f.sessions + 4)
	if d.dstDB, err = d.dst.Open(""); err != nil {
		return err
	}
	d.rules, err = filter.New([]string{demoSchema}, nil, nil)
	d.say("  source %s (MariaDB %s)\n  target %s\n  binlane connects as %s and %s (README: privileges)",
		d.src.Addr(), mariadbVersion(ctx, d.srcDB), d.dst.Addr(), sandbox.SourceUser, sandbox.TargetUser)
	return err
}

func (d *demo) close() {
	for _, db := range []*sql.DB{d.srcDB, d.dstDB} {
		if db != nil {
			db.Close()
		}
	}
	for _, s := range []*sandbox.Server{d.src, d.dst} {
		if s != nil {
			s.Close()
		}
	}
}

// demoSchema is the demo's database: the workload generator's shop.
const demoSchema = string(workload.Shop) // workload.Shop.Schema()

// shop is the demo's shop: --orders orders, as many customers, a fifth as
// many items.
func (d *demo) shop() workload.Config {
	return workload.Config{Mode: workload.Shop, SeedOrders: d.f.orders, Customers: max(100, d.f.orders),
		Items: max(20, d.f.orders/5)}
}

// seed creates the schema and its rows; it returns the position after.
func (d *demo) seed(ctx context.Context) (string, error) {
	t0 := time.Now()
	if err := workload.Prepare(ctx, d.srcDB, d.shop()); err != nil {
		return "", err
	}
	var rows int64
	if err := d.srcDB.QueryRowContext(ctx, `SELECT SUM(n) FROM (SELECT COUNT(*) n FROM shop.customer UNION ALL
		SELECT COUNT(*) FROM shop.item UNION ALL SELECT COUNT(*) FROM shop.orders UNION ALL
		SELECT COUNT(*) FROM shop.order_line) x`).Scan(&rows); err != nil {
		return "", err
	}
	d.say("seeded %d rows in %s (shop.customer, shop.item, shop.orders, shop.order_line).", rows, time.Since(t0).Round(time.Millisecond))
	if err := d.src.Exec(ctx, demoObjects...); err != nil {
		return "", err
	}
	d.say("and the objects a copy must not leave behind: sequence shop.invoice_no (the DEFAULT of shop.invoice),\n" +
		"  view shop.customer_totals, function shop.order_total, procedure shop.invoice_order, event shop.purge_shipped.")
	return d.pos(ctx), nil
}

// demoObjects are the shop's objects other than tables; invoices runs the
// procedure (and so the sequence) during the load.
var demoObjects = []string{
	"CREATE SEQUENCE shop.invoice_no START WITH 1000 CACHE 20",
	`CREATE TABLE shop.invoice (no BIGINT PRIMARY KEY DEFAULT NEXTVAL(shop.invoice_no), order_id BIGINT NOT NULL,
		total DECIMAL(12,2) NOT NULL, issued DATETIME(6) NOT NULL) ENGINE=InnoDB`,
	`CREATE FUNCTION shop.order_total(o BIGINT) RETURNS DECIMAL(12,2) READS SQL DATA
		RETURN (SELECT COALESCE(SUM(qty * price), 0) FROM shop.order_line WHERE order_id = o)`,
	`CREATE PROCEDURE shop.invoice_order(o BIGINT) MODIFIES SQL DATA
		INSERT INTO shop.invoice (order_id, total, issued) VALUES (o, shop.order_total(o), NOW(6))`,
	`CREATE VIEW shop.customer_totals AS SELECT c.id, c.email, COUNT(o.id) AS orders, COALESCE(SUM(o.total), 0) AS spent
		FROM shop.customer c LEFT JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.id, c.email`,
	`CREATE EVENT shop.purge_shipped ON SCHEDULE EVERY 1 DAY
		DO DELETE FROM shop.orders WHERE status = 'shipped' AND shipped < NOW() - INTERVAL 1 YEAR`,
}

// invoices calls shop.invoice_order for a recent order every 50 ms until
// ctx ends: the sequence is in use while the copy reads it.
func (d *demo) invoices(ctx context.Context) (int, error) {
	n := 0
	for {
		select {
		case <-ctx.Done():
			return n, nil
		case <-time.After(50 * time.Millisecond):
		}
		_, err := d.srcDB.ExecContext(ctx, "CALL shop.invoice_order((SELECT MAX(id) FROM shop.orders))")
		if ctx.Err() != nil {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("invoice: %w", err)
		}
		n++
	}
}

func (d *demo) replicate(ctx context.Context) error {
	return replicate.Run(ctx, replicate.Config{Source: d.srcDSN, Target: d.dstDSN, Stream: "demo", Rules: d.rules,
		HeartbeatPeriod: time.Second, Observer: d.obs, ReportPeriod: time.Second,
		Logger: slog.New(slog.DiscardHandler),
		Copy:   replicate.CopyConfig{Mode: "auto", Workers: d.f.copyWorkers},
		Apply:  apply.Config{Workers: d.f.workers, Mode: scheduler.ModeWriteset, MaxBatch: maxBatchFor(0)}})
}

// pos is the source's binlog position.
func (d *demo) pos(ctx context.Context) string {
	var p string
	d.srcDB.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&p)
	return p
}

// caughtUp waits until the stream's position holds the source's.
func (d *demo) caughtUp(ctx context.Context, repErr <-chan error) error {
	want, err := gtid.ParseSet(d.pos(ctx))
	if err != nil {
		return err
	}
	for {
		st, _, err := position.Load(ctx, d.dstDB, "demo")
		if err != nil {
			return err
		}
		if got, _ := gtid.ParseSet(st.GTID); got.ContainsSet(want) {
			return nil
		}
		select {
		case err := <-repErr:
			return fmt.Errorf("replicate stopped early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// verify compares both sides online, as the verify accounts would.
func (d *demo) verify(ctx context.Context) (*verify.Report, error) {
	src, err := d.srcDSN.OpenDB("")
	if err != nil {
		return nil, err
	}
	defer src.Close()
	tgt, err := d.dstDSN.OpenDB("")
	if err != nil {
		return nil, err
	}
	defer tgt.Close()
	meta, err := d.dstDSN.OpenDB("") // pause requests: a pool of their own
	if err != nil {
		return nil, err
	}
	defer meta.Close()
	return verify.Run(ctx, verify.Config{Source: src, Target: tgt, Rules: d.rules,
		Pair: (&pause.Pairer{Target: meta, Stream: "demo"}).Start})
}

func mariadbVersion(ctx context.Context, db *sql.DB) string {
	var v string
	db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
	return v
}
