package main

// The application scenarios (issue 17): backlogs from binlane's own
// workload generator (internal/workload) instead of sysbench, in the
// shapes people run: a web shop with cascading foreign keys, TPC-C-like
// order entry, 100,000-row updates and deletes among small transactions,
// wide rows and JSON documents. Each runs against a durable and a
// non-durable target. Beside the drain time, every run records how far
// the target's position had come over time, and the source's position over
// the backlog's generation, which together give the peak lag (peakLag).

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/workload"
)

// nativeAll is every MariaDB parallel mode at 4, 8 and 16 threads.
var nativeAll = []string{"serial", "conservative:4", "conservative:8", "conservative:16", "optimistic:4", "optimistic:8",
	"optimistic:16", "aggressive:4", "aggressive:8", "aggressive:16"}

// nativeFew is for the slow scenarios (large rows, bulk): every mode at 8
// threads, optimistic (MariaDB's default) at 4, 8 and 16.
var nativeFew = []string{"serial", "conservative:8", "optimistic:4", "optimistic:8", "optimistic:16", "aggressive:8"}

// appScenario is one application workload; it gives two scenarios, NAME
// (durable target) and NAME-nondurable.
type appScenario struct {
	name, title string
	mode        workload.Mode
	txns        int // transactions in the backlog
	rate        int // source transactions per second while generating (0: as fast as it takes them)
	native      []string
}

var appScenarios = []appScenario{
	{name: "shop", mode: workload.Shop, txns: 20000, native: nativeAll,
		title: "web shop with cascading foreign keys (100,000 customers, 20,000 items; 45% balance, 40% order of 1-5 lines, 12% ship, 3% delete)"},
	{name: "orderentry", mode: workload.OrderEntry, txns: 20000, native: nativeAll,
		title: "TPC-C-like order entry (4 warehouses x 10 districts; new-order, payment, delivery)"},
	// The source writes at a rate every contender keeps up with, so that
	// the peak lag is what the 100,000-row transactions cost.
	{name: "bulk", mode: workload.Bulk, txns: 20000, rate: 500, native: nativeFew,
		title: "bulk: the shop at 500 trx/s with a {bulk-rows}-row UPDATE or DELETE every {bulk-every} transactions"},
	{name: "docs", mode: workload.Docs, txns: 10000, native: nativeFew,
		title: "wide rows (60 columns) and JSON documents of 2-20 KB"},
	// Where an applier that regroups or nets out rows can go wrong: every
	// run is verified.
	{name: "slots", mode: workload.Slots, txns: 20000, native: nativeFew,
		title: "traps: unique codes freed and taken again, two rows swapping codes in one transaction, hot counters, RESTRICT foreign keys"},
}

// appSpecs returns the application scenarios' specs.
func appSpecs() map[string]scenarioSpec {
	out := map[string]scenarioSpec{}
	for _, a := range appScenarios {
		for _, durable := range []bool{true, false} {
			s := scenarioSpec{name: a.name, app: &a, durable: durable, title: a.title + ", durable target"}
			if !durable {
				s.name, s.title = a.name+"-nondurable", a.title+", non-durable target"
			}
			out[s.name] = s
		}
	}
	return out
}

// heading is the scenario's title with the flags it depends on.
func (s scenarioSpec) heading(c config) string {
	return strings.NewReplacer("{bulk-rows}", strconv.Itoa(c.bulkRows), "{bulk-every}", strconv.Itoa(c.bulkEvery)).Replace(s.title)
}

// scenarioGroups name sets of scenarios for --scenarios.
var scenarioGroups = map[string][]string{
	"sysbench": {"durable", "nondurable", "worstcase", "hotrows"},
	"apps": {"shop", "shop-nondurable", "orderentry", "orderentry-nondurable", "bulk", "bulk-nondurable",
		"docs", "docs-nondurable", "slots", "slots-nondurable"},
}

// expandScenarios replaces group names by their scenarios.
func expandScenarios(names []string) []string {
	var out []string
	for _, n := range names {
		if n == "all" {
			out = append(out, scenarioGroups["sysbench"]...)
			out = append(out, scenarioGroups["apps"]...)
		} else if g, ok := scenarioGroups[n]; ok {
			out = append(out, g...)
		} else {
			out = append(out, n)
		}
	}
	return out
}

// workloadConfig is the generator's configuration for an app scenario.
func workloadConfig(c config, a *appScenario) workload.Config {
	txns := a.txns
	if c.appTransactions > 0 {
		txns = c.appTransactions
	}
	return workload.Config{Mode: a.mode, Seed: 17, Sessions: c.appSessions, Transactions: txns, Rate: a.rate,
		BulkRows: c.bulkRows, BulkEvery: c.bulkEvery}
}

// prepareApp creates the scenario's schema and rows on the source.
func prepareApp(ctx context.Context, c config, a *appScenario, db *sql.DB) error {
	return workload.Prepare(ctx, db, workloadConfig(c, a))
}

// generateApp writes the backlog with the generator. Transactions the
// source rolled back (deadlocks between its sessions) are not in it.
func generateApp(ctx context.Context, c config, a *appScenario, db *sql.DB, log *slog.Logger) error {
	db.SetMaxOpenConns(c.appSessions + 2)
	st, err := workload.Run(ctx, db, workloadConfig(c, a))
	if err != nil {
		return err
	}
	log.Info("generator done", "committed", st.Committed.Load(), "rolled_back", st.Failed.Load())
	return nil
}

// sample is a position reached at a time since a start.
type sample struct {
	at  time.Duration
	seq int64
}

// sampler polls a position every 25 ms and keeps its changes.
type sampler struct {
	stop    context.CancelFunc
	done    chan struct{}
	samples []sample
}

// startSampler polls pos from now until Stop; errors (a table not there
// yet) are skipped.
func startSampler(ctx context.Context, start time.Time, pos func(context.Context) (int64, error)) *sampler {
	ctx, stop := context.WithCancel(ctx)
	s := &sampler{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		last := int64(-1)
		for {
			if seq, err := pos(ctx); err == nil && seq != last {
				s.samples = append(s.samples, sample{time.Since(start), seq})
				last = seq
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

// Stop ends the polling and returns the samples.
func (s *sampler) Stop() []sample {
	s.stop()
	<-s.done
	return s.samples
}

// firstApplied is when the samples first show a transaction after start
// applied: a contender's start-up (connecting, reading definitions) and
// its first commit, part of the drain's time.
func firstApplied(samples []sample, start int64) (time.Duration, bool) {
	for _, s := range samples {
		if s.seq > start {
			return s.at, true
		}
	}
	return 0, false
}

// seqOf returns the sequence number of a single-domain GTID position
// ("0-1-123"); -1 when there is none.
func seqOf(pos string) int64 {
	first, _, _ := strings.Cut(pos, ",")
	g, err := gtid.Parse(first)
	if err != nil {
		return -1
	}
	return int64(g.Seq)
}

// queryPos returns a position function reading one GTID position column.
func queryPos(db *sql.DB, query string) func(context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		var pos string
		if err := db.QueryRowContext(ctx, query).Scan(&pos); err != nil {
			return 0, err
		}
		return seqOf(pos), nil
	}
}

// peakLag is the worst lag a replica applying as this drain did would
// have shown had it replicated live while the source wrote the backlog:
// transaction g committed on the source at s(g) (since the backlog's
// start) and was applied at d(g) (since the drain's start); a live replica
// cannot start on h before s(h) and then needs d(g) - d(h) to get from h to
// g, so it applies g at A(g) = max over h <= g of s(h) + d(g) - d(h), and
// its lag is A(g) - s(g). s and d are read from the samples (the first
// sample at or past g). Transactions are first+1..last. It returns the
// peak and the transaction where it was.
func peakLag(src, dst []sample, first, last int64) (time.Duration, int64) {
	if len(src) == 0 || len(dst) == 0 || last <= first {
		return 0, 0
	}
	at := func(ss []sample, i *int, g int64) (time.Duration, bool) {
		for *i < len(ss) && ss[*i].seq < g {
			(*i)++
		}
		if *i == len(ss) {
			return 0, false
		}
		return ss[*i].at, true
	}
	var si, di int
	best := time.Duration(-1 << 62) // max over h of s(h) - d(h)
	var peak time.Duration
	var where int64
	for g := first + 1; g <= last; g++ {
		s, ok1 := at(src, &si, g)
		d, ok2 := at(dst, &di, g)
		if !ok1 || !ok2 {
			break
		}
		best = max(best, s-d)
		if lag := d - s + best; lag > peak {
			peak, where = lag, g
		}
	}
	return peak, where
}

// prediction is what `binlane analyze` predicts for a scenario's backlog.
type prediction struct {
	speedup     map[int]float64 // writeset mode, over one worker
	recommended int
	parallelism float64
	err         string
}

// predict runs `binlane analyze` on the backlog with the machine's cores,
// as the scenario's target is (durable or not).
func predict(ctx context.Context, c config, bin string, b *backlog, spec scenarioSpec) prediction {
	var workers []string
	for _, w := range c.workers {
		workers = append(workers, strconv.Itoa(w))
	}
	args := []string{"analyze", "--source", b.src.URL(), "--start-gtid", b.start, "--stop-at-gtid", b.end,
		"--databases", spec.database(), "--cores", strconv.Itoa(runtime.NumCPU()), "--simulate-threads", strings.Join(workers, ","),
		"--target-durable=" + strconv.FormatBool(spec.durable), "--json"}
	if c.maxBatch > 0 {
		args = append(args, "--max-batch", strconv.Itoa(c.maxBatch))
	}
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return prediction{err: fmt.Sprintf("analyze: %v: %s", err, tail(string(ee.Stderr), 500))}
		}
		return prediction{err: fmt.Sprintf("analyze: %v", err)}
	}
	var r analyze.Report
	if err := json.Unmarshal(out, &r); err != nil {
		return prediction{err: fmt.Sprintf("analyze output: %v", err)}
	}
	p := prediction{speedup: map[int]float64{}, recommended: r.Recommendation.Workers, parallelism: r.Graph.Parallelism}
	for _, s := range r.Simulations {
		p.speedup[s.Workers] = s.Writeset.Speedup
	}
	return p
}
