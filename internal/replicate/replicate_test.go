package replicate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/verify"
	"github.com/binlane/binlane/internal/workload"
)

type env struct {
	src, dst *sandbox.Server
	srcDSN   dsn.DSN
	dstDSN   dsn.DSN
	start    string
}

// newEnv starts a source and a target and marks the source's position
// before any test data, so a stream can start there and replicate the
// schema too. binlane connects to both as the least-privilege accounts the
// README documents, with grants on the workload's database (grant adds
// more).
func newEnv(t *testing.T) *env { return newEnvWith(t) }

// newEnvWith is newEnv with extra options for the source server.
func newEnvWith(t *testing.T, sourceOptions ...string) *env {
	e := &env{
		src: sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, Extra: sourceOptions}),
		dst: sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}),
	}
	e.src.ExecT(t, "CREATE DATABASE marker")
	e.start = gtidPos(t, e.src)
	e.grant(t, workload.Schema)
	return e
}

// grant gives binlane's accounts the documented privileges on dbs.
func (e *env) grant(t *testing.T, dbs ...string) {
	t.Helper()
	ctx := context.Background()
	srcURL, err := e.src.GrantBinlane(ctx, false, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	dstURL, err := e.dst.GrantBinlane(ctx, false, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	if e.srcDSN, err = dsn.Parse(srcURL); err != nil {
		t.Fatal(err)
	}
	if e.dstDSN, err = dsn.Parse(dstURL); err != nil {
		t.Fatal(err)
	}
}

func gtidPos(t *testing.T, s *sandbox.Server) string {
	t.Helper()
	var pos string
	if err := s.OpenT(t, "").QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	return pos
}

func (e *env) config(t *testing.T, workers int) Config {
	return Config{
		Source: e.srcDSN, Target: e.dstDSN, Stream: "t", StartGTID: e.start,
		HeartbeatPeriod: 500 * time.Millisecond, RetryMin: 100 * time.Millisecond, RetryMax: time.Second,
		Logger: testutil.Logger(t), ReportPeriod: 200 * time.Millisecond,
		Apply: apply.Config{Workers: workers, MaxBatch: 16, Mode: scheduler.ModeWriteset},
	}
}

// runInBackground starts Run; stop cancels it and returns its error.
func runInBackground(ctx context.Context, cfg Config) (stop func() error) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- Run(runCtx, cfg) }()
	return func() error {
		cancel()
		return <-done
	}
}

func (e *env) workload(t *testing.T, ctx context.Context, cfg workload.Config) {
	t.Helper()
	db := e.src.OpenT(t, "")
	db.SetMaxOpenConns(cfg.Sessions + 2)
	if err := workload.Setup(ctx, db); err != nil {
		t.Fatal(err)
	}
	st, err := workload.Run(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workload: %d committed, %d rolled back on the source", st.Committed.Load(), st.Failed.Load())
	settle(t, context.WithoutCancel(ctx), db) // also after the caller cancelled the load
}

// settle waits until no statement runs on the source: a session the
// workload's deadline cut off mid-statement only closed its connection,
// and the server finishes (and binlogs) an ALTER after that. A stop
// position read before it would miss the ALTER the source then has.
func settle(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE COMMAND = 'Query' AND ID <> CONNECTION_ID() AND USER NOT IN ('system user', 'event_scheduler')`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d statements still run on the source a minute after the workload ended", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// verifyEqual compares the workload schema on both sides.
func (e *env) verifyEqual(t *testing.T) {
	t.Helper()
	verifyServers(t, e.src, e.dst, "wl")
}

// verifyServers compares the databases dbs row by row on src and dst.
func verifyServers(t *testing.T, src, dst *sandbox.Server, dbs ...string) {
	t.Helper()
	s, d := src.OpenT(t, ""), dst.OpenT(t, "")
	s.SetMaxOpenConns(8)
	d.SetMaxOpenConns(8)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := verify.Run(ctx, verify.Config{Source: s, Target: d, Rules: mustRules(t, dbs...)})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal() {
		var b strings.Builder
		rep.Format(&b)
		t.Fatalf("source and target differ:\n%s", b.String())
	}
}

func streamState(t *testing.T, db *sql.DB) position.State {
	st, ok, err := position.Load(context.Background(), db, "t")
	if err != nil || !ok {
		t.Fatalf("stream state: ok=%v err=%v", ok, err)
	}
	return st
}

func TestReplicateToStopPosition(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.workload(t, ctx, workload.Config{Seed: 7, Sessions: 6, Transactions: 1500, DDL: true, BigTxnRows: 30000})
	cfg := e.config(t, 4)
	cfg.StopAtGTID = gtidPos(t, e.src)
	cfg.MaxTxnBytes = 1 << 20    // the big transaction streams
	cfg.ReportPeriod = time.Hour // only the report at the stop can be there
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	st := streamState(t, e.dst.OpenT(t, ""))
	if st.GTID != cfg.StopAtGTID || st.State != position.StateStopped {
		t.Fatalf("stream at %q state %q, want %q stopped", st.GTID, st.State, cfg.StopAtGTID)
	}
	var snap streamstatus.Snapshot
	if err := json.Unmarshal([]byte(st.Stats), &snap); err != nil {
		t.Fatalf("stats after the stop: %v (%q)", err, st.Stats)
	}
	var txns uint64
	for _, w := range snap.Workers {
		txns += w.Txns
	}
	from, err1 := gtid.Parse(e.start)
	to, err2 := gtid.Parse(cfg.StopAtGTID)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if want := to.Seq - from.Seq; len(snap.Workers) != 4 || txns != want {
		t.Errorf("final report: %d workers, %d transactions; want 4 workers, %d", len(snap.Workers), txns, want)
	}
	e.verifyEqual(t)
}

func mustRules(t *testing.T, dbs ...string) filter.Rules {
	r, err := filter.New(dbs, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitCaughtUp waits until the stream's saved position contains the
// source's current one.
func (e *env) waitCaughtUp(t *testing.T, timeout time.Duration) {
	t.Helper()
	want, err := gtid.ParseSet(gtidPos(t, e.src))
	if err != nil {
		t.Fatal(err)
	}
	dst := e.dst.OpenT(t, "")
	deadline := time.Now().Add(timeout)
	for {
		st, ok, _ := position.Load(context.Background(), dst, "t")
		if ok {
			got, _ := gtid.ParseSet(st.GTID)
			if got.ContainsSet(want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("not caught up after %s: at %s, source at %s (state %s: %s)", timeout, st.GTID, want, st.State, st.Message)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestReplicateSurvivesRestarts(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stop := runInBackground(ctx, e.config(t, 8))

	wlDone := make(chan struct{})
	go func() {
		defer close(wlDone)
		e.workload(t, ctx, workload.Config{Seed: 11, Sessions: 4, Duration: 12 * time.Second})
	}()
	time.Sleep(3 * time.Second)
	t.Log("restarting the target")
	if err := e.dst.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := e.dst.Start(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	t.Log("restarting the source")
	if err := e.src.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	<-wlDone
	e.waitCaughtUp(t, 2*time.Minute)
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := streamState(t, e.dst.OpenT(t, "")); st.State != position.StateStopped {
		t.Fatalf("state after stop: %s (%s)", st.State, st.Message)
	}
	e.verifyEqual(t)
}

func TestGracefulStopAndResume(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.workload(t, ctx, workload.Config{Seed: 12, Sessions: 4, Transactions: 2000})
	end := gtidPos(t, e.src)
	saved := ""
	for i := 0; i < 3; i++ {
		cfg := e.config(t, 4)
		if saved != "" {
			cfg.StartGTID = "" // from the saved position
		}
		// (A run stopped before it reached the source saved nothing, as on
		// a loaded machine within 300 ms: the next starts where this one
		// was told to, as an operator would tell it again.)
		runCtx, stop := context.WithTimeout(ctx, time.Duration(300+i*200)*time.Millisecond)
		err := Run(runCtx, cfg)
		stop()
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		st := streamState(t, e.dst.OpenT(t, ""))
		saved = st.GTID
		t.Logf("stopped at %s after run %d", st.GTID, i)
	}
	if saved == "" {
		t.Fatal("no run saved a position")
	}
	cfg := e.config(t, 4)
	cfg.StartGTID = "" // resume from the saved position
	cfg.StopAtGTID = end
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}

func TestReplicateCrashWorkloadNoKill(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.workload(t, ctx, workload.Config{Seed: 99, Sessions: 4, Duration: 10 * time.Second, DDL: true, BigTxnRows: 40000})
	cfg := e.config(t, 4)
	cfg.MaxTxnBytes = 1 << 20
	cfg.StopAtGTID = gtidPos(t, e.src)
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}
