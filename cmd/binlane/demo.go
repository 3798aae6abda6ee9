package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/verify"
	"github.com/binlane/binlane/internal/workload"
)

type demoFlags struct {
	duration time.Duration
	workers  int
	sessions int
}

func newDemoCmd() *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Replicate a live, conflict-heavy workload between two throwaway local servers, then verify",
		Long: `Start a throwaway MariaDB source and target on free local ports, run a
randomized workload on the source (hot rows, unique-key swaps, primary-key
changes, cascading foreign keys, case-variant values, DDL), replicate it live
with binlane, then compare both sides row by row. The servers are removed
at the end, also on Ctrl-C.

Exit status: 0 equal, 1 source and target differ, 2 error or interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(cmd.Context(), cmd.OutOrStdout(), f) },
	}
	cmd.Flags().DurationVar(&f.duration, "duration", 20*time.Second, "how long the workload runs")
	cmd.Flags().IntVar(&f.workers, "workers", defaultWorkers, "binlane workers")
	cmd.Flags().IntVar(&f.sessions, "sessions", 6, "concurrent workload sessions on the source")
	return cmd
}

func runDemo(ctx context.Context, out io.Writer, f demoFlags) error {
	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	say("starting a throwaway source and target on free local ports...")
	src, err := sandbox.Start(ctx, sandbox.Options{Role: sandbox.Source, Name: "demo-source"})
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := sandbox.Start(ctx, sandbox.Options{Role: sandbox.Target, Name: "demo-target"})
	if err != nil {
		return err
	}
	defer dst.Close()
	say("  source %s\n  target %s", src.URL(), dst.URL())
	srcDSN, err := dsn.Parse(src.URL())
	if err != nil {
		return err
	}
	dstDSN, err := dsn.Parse(dst.URL())
	if err != nil {
		return err
	}
	srcDB, err := srcDSN.OpenDB("")
	if err != nil {
		return err
	}
	defer srcDB.Close()
	srcDB.SetMaxOpenConns(f.sessions + 4)
	say("  MariaDB %s", mariadbVersion(ctx, srcDB))
	if err := src.Exec(ctx, "CREATE DATABASE demo_marker"); err != nil {
		return err
	}
	var start string
	if err := srcDB.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&start); err != nil {
		return err
	}
	rules, _ := filter.New([]string{workload.Schema}, nil, nil)
	obs := &replicate.Observer{}
	repCtx, stopRep := context.WithCancel(ctx)
	defer stopRep()
	repErr := make(chan error, 1)
	go func() {
		repErr <- replicate.Run(repCtx, replicate.Config{Source: srcDSN, Target: dstDSN, Stream: "demo", Rules: rules,
			StartGTID: start, HeartbeatPeriod: time.Second, Observer: obs, ReportPeriod: time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Apply:  apply.Config{Workers: f.workers, Mode: scheduler.ModeWriteset, MaxBatch: defaultMaxBatch}})
	}()
	say("replicating with %d workers while %d sessions write to the source for %s...", f.workers, f.sessions, f.duration)
	if err := workload.Setup(ctx, srcDB); err != nil {
		return err
	}
	wlDone := make(chan error, 1)
	var wlStats *workload.Stats
	go func() {
		var err error
		wlStats, err = workload.Run(ctx, srcDB, workload.Config{Seed: time.Now().UnixNano(), Sessions: f.sessions,
			Duration: f.duration, DDL: true, BigTxnRows: 50000})
		wlDone <- err
	}()
	dstDB, err := dstDSN.OpenDB("")
	if err != nil {
		return err
	}
	defer dstDB.Close()
	if err := demoProgress(ctx, out, srcDB, dstDB, obs, wlDone, repErr); err != nil {
		return err
	}
	say("workload done: %d transactions committed on the source (%d rolled back by it); target caught up.",
		wlStats.Committed.Load(), wlStats.Failed.Load())
	stopRep()
	if err := <-repErr; err != nil {
		return fmt.Errorf("replicate: %w", err)
	}
	say("\nverifying every table row by row...")
	rep, err := verify.Run(ctx, verify.Config{Source: srcDB, Target: dstDB, Rules: rules})
	if err != nil {
		return err
	}
	if err := rep.Format(out); err != nil {
		return err
	}
	if !rep.Equal() {
		return withExitCode(exitDiffer, errors.New("demo: source and target differ"))
	}
	say("\nsource and target are equal. Servers are being removed.")
	return nil
}

// demoProgress prints a line a second until the workload is over and the
// target has caught up with the source.
func demoProgress(ctx context.Context, out io.Writer, srcDB, dstDB *sql.DB, obs *replicate.Observer,
	wlDone <-chan error, repErr <-chan error) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	over := false
	var last uint64
	for {
		select {
		case err := <-wlDone:
			if err != nil {
				return fmt.Errorf("workload: %w", err)
			}
			over = true
			continue
		case err := <-repErr:
			return fmt.Errorf("replicate stopped early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		var srcPos string
		if err := srcDB.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&srcPos); err != nil {
			return err
		}
		st, _, err := position.Load(ctx, dstDB, "demo")
		if err != nil {
			return err
		}
		line := fmt.Sprintf("  source %-14s target %-14s", srcPos, st.GTID)
		if r, ok := obs.Read(); ok {
			line += fmt.Sprintf(" %5d trx/s  lag %4.1fs  workers busy %s", r.Snapshot.Committed-last, r.Lag.Seconds(), busyShares(r.Snapshot))
			last = r.Snapshot.Committed
		}
		fmt.Fprintln(out, line)
		want, _ := gtid.ParseSet(srcPos)
		got, _ := gtid.ParseSet(st.GTID)
		if over && got.ContainsSet(want) {
			return nil
		}
	}
}

// busyShares formats each worker's busy share since the start.
func busyShares(s apply.Snapshot) string {
	wall := s.At.Sub(s.Started).Seconds()
	var parts []string
	for _, w := range s.Workers {
		parts = append(parts, fmt.Sprintf("%.0f", 100*w.Busy.Seconds()/max(wall, 0.001)))
	}
	return strings.Join(parts, "/") + "%"
}

func mariadbVersion(ctx context.Context, db *sql.DB) string {
	var v string
	db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&v)
	return v
}
