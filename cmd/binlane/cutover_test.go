package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/cutover"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/workload"
)

// cutoverResult is binlane cutover --json's output, as a script reads it.
type cutoverResult struct {
	SourceGTID     string   `json:"source_gtid"`
	TargetGTID     string   `json:"target_gtid"`
	Verified       bool     `json:"verified"`
	Verify         string   `json:"verify"`
	ReverseStream  string   `json:"reverse_stream"`
	ReverseCommand string   `json:"reverse_command"`
	Created        []string `json:"created"`
	Replaced       []string `json:"replaced"`
	Dropped        []string `json:"dropped"`
	RolledBack     bool     `json:"rolled_back"`
	Steps          []string `json:"steps"`
	Error          string   `json:"error"`
	Timings        map[string]float64
}

// runCutoverCmd runs binlane cutover in-process and returns its output
// and exit status.
func runCutoverCmd(t *testing.T, ctx context.Context, args ...string) (string, int) {
	t.Helper()
	cmd := newCutoverCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, logs bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&logs)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	code := exitCode(err)
	if strings.Contains(out.String()+logs.String(), sandbox.AccountPassword) {
		t.Errorf("cutover printed a password")
	}
	if code != 0 {
		t.Logf("cutover exited %d: %v\n%s\n%s", code, err, out.String(), tail(logs.String(), 4000))
	}
	return out.String(), code
}

func parseCutover(t *testing.T, out string) cutoverResult {
	t.Helper()
	var r cutoverResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("cutover --json: %v\n%s", err, out)
	}
	return r
}

// cutoverServers starts a source and a target for a cut-over. Triggers
// move with the primary: creating and dropping them on a server that
// binlogs takes SUPER, or log_bin_trust_function_creators (README).
func cutoverServers(t *testing.T) (a, b *sandbox.Server) {
	trust := []string{"log-bin-trust-function-creators=ON"}
	return sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, Name: "a", Extra: trust}),
		sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Name: "b", Extra: trust})
}

// waitCaughtUp waits until stream's saved position on dst holds src's
// current one; the stream ending (done) fails the test.
func waitCaughtUp(t *testing.T, src, dst *sql.DB, stream string, done <-chan error) {
	t.Helper()
	end, _ := gtid.ParseSet(sourcePos(t, src))
	waitFor(t, time.Minute, "stream "+stream+" to catch up", func() bool {
		select {
		case err := <-done:
			t.Fatalf("stream %s ended: %v", stream, err)
		default:
		}
		st, _, _ := position.Load(context.Background(), dst, stream)
		at, _ := gtid.ParseSet(st.GTID)
		return at.ContainsSet(end)
	})
}

// cutoverURLs creates the cut-over's account on a and b with the grants
// on dbs and returns their addresses without the password, which the
// environment gives (BINLANE_SOURCE_PASSWORD, BINLANE_TARGET_PASSWORD).
func cutoverURLs(t *testing.T, a, b *sandbox.Server, dbs ...string) (aCut, bCut string) {
	t.Helper()
	var urls []string
	for _, s := range []*sandbox.Server{a, b} {
		u, err := s.GrantCutover(context.Background(), dbs...)
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, strings.Replace(u, ":"+sandbox.AccountPassword+"@", "@", 1))
	}
	t.Setenv("BINLANE_SOURCE_PASSWORD", sandbox.AccountPassword)
	t.Setenv("BINLANE_TARGET_PASSWORD", sandbox.AccountPassword)
	return urls[0], urls[1]
}

// appAccount creates the application's account on s: it writes the
// workload's tables and nothing else, so read_only stops it (root would
// bypass it).
func appAccount(t *testing.T, s *sandbox.Server) *sql.DB {
	t.Helper()
	s.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE USER IF NOT EXISTS app@'%' IDENTIFIED BY 'app-pw'",
		"GRANT ALL PRIVILEGES ON wl.* TO app@'%'")
	db, err := sql.Open("mysql", "app:app-pw@tcp("+s.Addr()+")/?charset=utf8mb4")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(8)
	t.Cleanup(func() { db.Close() })
	return db
}

// load runs the workload on db until stop is called.
type load struct {
	stop  context.CancelFunc
	done  chan error
	stats *workload.Stats
	mu    sync.Mutex
}

func startLoad(ctx context.Context, db *sql.DB, seed int64) *load {
	ctx, stop := context.WithCancel(ctx)
	l := &load{stop: stop, done: make(chan error, 1)}
	go func() {
		st, err := workload.Run(ctx, db, workload.Config{Seed: seed, Sessions: 2, Rate: 100, ReadOnlyOK: true})
		l.mu.Lock()
		l.stats = st
		l.mu.Unlock()
		l.done <- err
	}()
	return l
}

// end stops the load and returns how many transactions committed.
func (l *load) end(t *testing.T) int64 {
	t.Helper()
	l.stop()
	if err := <-l.done; err != nil {
		t.Fatalf("workload: %v", err)
	}
	return l.stats.Committed.Load()
}

// waitStreamReady waits until the stream's copy is done and it reported a
// small lag: what a cut-over's preflight asks.
func waitStreamReady(t *testing.T, db *sql.DB, stream string, done <-chan error) {
	t.Helper()
	waitFor(t, 3*time.Minute, "stream "+stream+" to be copied, caught up and reporting", func() bool {
		select {
		case err := <-done:
			t.Fatalf("replicate %s ended: %v", stream, err)
		default:
		}
		st, ok, _ := position.Load(context.Background(), db, stream)
		if !ok || st.ReportedAt.IsZero() || time.Since(st.ReportedAt) > 10*time.Second || st.LagMillis < 0 || st.LagMillis > 2000 {
			return false
		}
		tables, _ := position.LoadCopy(context.Background(), db, stream)
		for _, tb := range tables {
			if tb.State != position.CopyDone {
				return false
			}
		}
		return true
	})
}

func readOnly(t *testing.T, db *sql.DB) bool {
	var ro bool
	if err := db.QueryRow("SELECT @@global.read_only").Scan(&ro); err != nil {
		t.Fatal(err)
	}
	return ro
}

func triggers(t *testing.T, db *sql.DB) int {
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'wl'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCutoverAndBack moves an application from one server to another and
// back, with the workload writing throughout: replicate (with its copy)
// from A to B; cutover --reverse while the application still writes to A
// (its writes fail once A is read-only, as they would); the target equals
// the source at P and the stream's saved position is exactly P; the
// application then writes to B, the reverse stream brings A equal to B; a
// second cutover --reverse of the reverse stream returns the traffic to A,
// and the forward stream, prepared again, carries A's new writes to B.
// The source's triggers move with the primary. binlane runs as least-
// privilege accounts: the stream's, and the cut-over's on each server
// (the README's grants).
func TestCutoverAndBack(t *testing.T) {
	a, b := cutoverServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	aDB, bDB := a.OpenT(t, ""), b.OpenT(t, "")
	if err := workload.Setup(ctx, aDB); err != nil {
		t.Fatal(err)
	}
	a.ExecT(t, workload.TriggerDDL...)
	b.ExecT(t, "CREATE DATABASE wl")
	aApp, bApp := appAccount(t, a), appAccount(t, b)
	srcURL, dstURL := binlaneURL(t, a, "wl"), binlaneURL(t, b, "wl")
	aCut, bCut := cutoverURLs(t, a, b, "wl")

	// Forward: A -> B, copied while the application writes to A.
	loadA := startLoad(ctx, aApp, 1)
	_, fwdDone, stopFwd := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "move", "--databases", "wl",
		"--heartbeat", "500ms")
	defer stopFwd()
	waitStreamReady(t, bDB, "move", fwdDone)

	out, code := runCutoverCmd(t, ctx, "--source", aCut, "--target", bCut, "--stream", "move",
		"--databases", "wl", "--reverse", "--json", "--timeout", "30s")
	if code != 0 {
		t.Fatalf("cutover exited %d", code)
	}
	r := parseCutover(t, out)
	if !r.Verified || r.Verify != "equal" || r.SourceGTID == "" || r.TargetGTID == "" || r.ReverseStream != "move-reverse" {
		t.Fatalf("cutover result: %+v", r)
	}
	t.Logf("first cut-over: P %s, Q %s, timings %v, created %v, dropped %v", r.SourceGTID, r.TargetGTID, r.Timings, r.Created, r.Dropped)
	if committedA := loadA.end(t); committedA < 100 {
		t.Errorf("the application committed only %d transactions on A", committedA)
	}
	// The stream stopped by itself, exactly at P; A stayed read-only and
	// equal to B; the triggers moved to B.
	select {
	case err := <-fwdDone:
		if err != nil {
			t.Fatalf("the forward stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the forward stream still runs after its cut-over")
	}
	st, _, _ := position.Load(ctx, bDB, "move")
	p, _ := gtid.ParseSet(r.SourceGTID)
	if saved, _ := gtid.ParseSet(st.GTID); !saved.Equal(p) || st.State != position.StateCutOver {
		t.Fatalf("forward stream after the cut-over: %s at %s, want cut over at %s", st.State, st.GTID, p)
	}
	if !readOnly(t, aDB) || readOnly(t, bDB) {
		t.Fatal("A should be read-only and B writable")
	}
	// B is the primary now: compared as the source, whose triggers A, a
	// replica, must not have.
	verifyEqual(t, bDB, aDB, "wl")
	if triggers(t, aDB) != 0 || triggers(t, bDB) != len(workload.TriggerDDL) {
		t.Fatalf("triggers: A %d, B %d", triggers(t, aDB), triggers(t, bDB))
	}
	// A second replicate of the stream refuses to start.
	if _, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "move", "--databases", "wl"); true {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "cut over") {
				t.Fatalf("replicate of a cut-over stream: %v", err)
			}
		case <-time.After(30 * time.Second):
			stop()
			t.Fatal("replicate of a cut-over stream started")
		}
	}

	// Reverse: the application writes to B; the printed command runs the
	// reverse stream B -> A.
	fields := strings.Fields(r.ReverseCommand)
	if len(fields) < 3 || fields[0] != "binlane" || fields[1] != "replicate" {
		t.Fatalf("reverse command %q", r.ReverseCommand)
	}
	loadB := startLoad(ctx, bApp, 2)
	_, revDone, stopRev := startReplicate(t, ctx, append(fields[2:], "--heartbeat", "500ms")...)
	defer stopRev()
	waitStreamReady(t, aDB, "move-reverse", revDone)

	// Back: the reverse stream's cut-over returns the traffic to A while
	// the application still writes to B.
	out, code = runCutoverCmd(t, ctx, "--source", bCut, "--target", aCut, "--stream", "move-reverse",
		"--databases", "wl", "--reverse", "--json", "--timeout", "30s")
	if code != 0 {
		t.Fatalf("cutover back exited %d", code)
	}
	back := parseCutover(t, out)
	if !back.Verified || back.ReverseStream != "move" {
		t.Fatalf("cutover back: %+v", back)
	}
	t.Logf("second cut-over: P %s, Q %s, timings %v", back.SourceGTID, back.TargetGTID, back.Timings)
	if committedB := loadB.end(t); committedB < 100 {
		t.Errorf("the application committed only %d transactions on B", committedB)
	}
	if err := <-revDone; err != nil {
		t.Fatalf("the reverse stream ended with %v", err)
	}
	verifyEqual(t, aDB, bDB, "wl")
	if readOnly(t, aDB) || !readOnly(t, bDB) || triggers(t, aDB) != len(workload.TriggerDDL) || triggers(t, bDB) != 0 {
		t.Fatalf("after the way back: A read-only %v, B read-only %v, triggers A %d B %d", readOnly(t, aDB), readOnly(t, bDB),
			triggers(t, aDB), triggers(t, bDB))
	}

	// The forward stream, prepared again at the second hand-over's Q,
	// carries what the application now writes to A.
	fields = strings.Fields(back.ReverseCommand)
	loadA = startLoad(ctx, aApp, 3)
	_, againDone, stopAgain := startReplicate(t, ctx, append(fields[2:], "--heartbeat", "500ms")...)
	defer stopAgain()
	time.Sleep(2 * time.Second)
	loadA.end(t)
	waitCaughtUp(t, aDB, bDB, "move", againDone)
	verifyEqual(t, aDB, bDB, "wl")
}

// TestCutoverRollsBack: a cut-over that cannot finish changes nothing, or
// undoes what it changed. Missing privileges are named before anything
// changes; --dry-run changes nothing; a source transaction held open longer
// than --timeout makes it roll back with exit status 3 (the source writable
// again, the stream running, and the held transaction then commits); Ctrl-C
// rolls back too. Then --freeze none (the application stopped) cuts over,
// with the triggers and events written to --deferred-out.
func TestCutoverRollsBack(t *testing.T) {
	a, b := cutoverServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	aDB, bDB := a.OpenT(t, ""), b.OpenT(t, "")
	a.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v INT)", "INSERT INTO wl.t SELECT seq, 0 FROM wl.seq_1_to_100",
		"CREATE TRIGGER wl.t_ai AFTER INSERT ON wl.t FOR EACH ROW SET @inserted = NEW.id",
		"CREATE EVENT wl.nightly ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM wl.t WHERE v < 0")
	aApp := appAccount(t, a)
	srcURL, dstURL := binlaneURL(t, a, "wl"), binlaneTargetURL(t, b, "wl")
	aCut, err := a.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	bCut, err := b.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	_, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "rb", "--databases", "wl", "--heartbeat", "500ms")
	defer stop()
	waitStreamReady(t, bDB, "rb", done)
	args := []string{"--stream", "rb", "--databases", "wl"}
	cut := slices.Concat(args, []string{"--source", aCut, "--target", bCut})
	unchanged := func(what string) {
		t.Helper()
		st, _, _ := position.Load(ctx, bDB, "rb")
		var journal string
		bDB.QueryRow("SELECT state FROM binlane.cutover WHERE stream = 'rb'").Scan(&journal)
		if readOnly(t, aDB) || st.State != position.StateRunning || st.PauseAt != "" ||
			journal != "" && journal != position.CutoverRolledBack {
			t.Fatalf("%s: source read-only %v, stream %s (pause %q), journal %q", what, readOnly(t, aDB), st.State, st.PauseAt, journal)
		}
	}

	// The stream's own accounts lack what the freeze needs: named, and
	// nothing changes.
	out, code := runCutoverCmd(t, ctx, slices.Concat(args, []string{"--source", srcURL, "--target", dstURL})...)
	if code != exitFailed {
		t.Fatalf("cut-over without the privileges: exit %d\n%s", code, out)
	}
	unchanged("missing privileges")

	// --dry-run: the plan, and no change, not even to the source's binlog.
	before := sourcePos(t, aDB)
	out, code = runCutoverCmd(t, ctx, slices.Concat(cut, []string{"--dry-run"})...)
	if code != 0 || !strings.Contains(out, "nothing was changed") || !strings.Contains(out, "SET GLOBAL read_only = ON") {
		t.Fatalf("dry run: exit %d\n%s", code, out)
	}
	unchanged("dry run")
	if after := sourcePos(t, aDB); after != before {
		t.Fatalf("the dry run wrote to the source: %s -> %s", before, after)
	}

	// A transaction held open on the source past --timeout.
	held, err := aApp.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	for _, q := range []string{"BEGIN", "UPDATE wl.t SET v = 42 WHERE id = 1"} {
		if _, err := held.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	out, code = runCutoverCmd(t, ctx, slices.Concat(cut, []string{"--timeout", "2s", "--json"})...)
	if r := parseCutover(t, out); code != exitTimeout || !r.RolledBack || !strings.Contains(r.Error, "still open") {
		t.Fatalf("cut-over with a transaction held open: exit %d after %s: %+v", code, time.Since(began), r)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the timed-out cut-over took %s", took)
	}
	unchanged("timeout")
	if _, err := held.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatalf("the held transaction could not commit after the rollback: %v", err)
	}
	waitFor(t, 30*time.Second, "the held transaction on the target", func() bool {
		var v int
		bDB.QueryRow("SELECT v FROM wl.t WHERE id = 1").Scan(&v)
		return v == 42
	})

	// Ctrl-C while the freeze waits.
	for _, q := range []string{"BEGIN", "UPDATE wl.t SET v = 43 WHERE id = 2"} {
		if _, err := held.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	intr, interrupt := context.WithCancel(ctx)
	time.AfterFunc(1500*time.Millisecond, interrupt)
	if _, code = runCutoverCmd(t, intr, slices.Concat(cut, []string{"--timeout", "30s"})...); code != exitFailed {
		t.Fatalf("interrupted cut-over: exit %d", code)
	}
	unchanged("Ctrl-C")
	if _, err := held.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}

	// The application stopped: --freeze none; the triggers and events go
	// to a file.
	file := filepath.Join(t.TempDir(), "objects.sql")
	out, code = runCutoverCmd(t, ctx, slices.Concat(cut, []string{"--freeze", "none", "--quiet-for", "1s", "--deferred-out", file, "--json"})...)
	r := parseCutover(t, out)
	if code != 0 || !r.Verified || r.SourceGTID != sourcePos(t, aDB) {
		t.Fatalf("cut-over with --freeze none: exit %d: %+v", code, r)
	}
	script, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TRIGGER wl.t_ai AFTER INSERT ON wl.t", "EVENT `nightly`", "USE `wl`;;", "DELIMITER ;;"} {
		if !strings.Contains(string(script), want) {
			t.Errorf("--deferred-out lacks %q:\n%s", want, script)
		}
	}
	if readOnly(t, aDB) || triggers(t, bDB) != 0 {
		t.Errorf("--freeze none made the source read-only (%v), or triggers were created on the target (%d)", readOnly(t, aDB), triggers(t, bDB))
	}
	if st, _, _ := position.Load(ctx, bDB, "rb"); st.State != position.StateCutOver || st.GTID != r.SourceGTID {
		t.Fatalf("stream after the cut-over: %s at %s", st.State, st.GTID)
	}
	// The script creates them on the target.
	cmd := exec.CommandContext(ctx, "mariadb", "--no-defaults", "-h127.0.0.1", "-P"+strconv.Itoa(b.Port), "-uroot")
	cmd.Stdin = bytes.NewReader(script)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run the --deferred-out script: %v\n%s", err, out)
	}
	if triggers(t, bDB) != 1 {
		t.Fatalf("the script created %d triggers", triggers(t, bDB))
	}
}

// TestCutoverKilled kills `binlane cutover` (SIGKILL) after each of its
// steps, then runs it again: before the hand-over nothing is switched (the
// stream is not cut over; the source stays frozen until the next run) and
// the next run rolls the leftover back and cuts over; after the hand-over
// the stream is cut over and the next run finishes the remaining steps. It
// goes back and forth between the two servers with --reverse, the
// workload writing to the current primary. Once, --rollback alone undoes
// the leftover. Every end state is whole: stream cut over exactly at P,
// the old primary read-only and without triggers, the new one writable
// with them, the reverse stream prepared, and both sides equal.
func TestCutoverKilled(t *testing.T) {
	bin := buildBinary(t)
	a, b := cutoverServers(t)
	servers := []*sandbox.Server{a, b}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	roots := []*sql.DB{servers[0].OpenT(t, ""), servers[1].OpenT(t, "")}
	if err := workload.Setup(ctx, roots[0]); err != nil {
		t.Fatal(err)
	}
	servers[0].ExecT(t, workload.TriggerDDL...)
	servers[1].ExecT(t, "CREATE DATABASE wl")
	apps := []*sql.DB{appAccount(t, servers[0]), appAccount(t, servers[1])}
	var cuts []string
	for _, s := range servers {
		u, err := s.GrantCutover(ctx, "wl")
		if err != nil {
			t.Fatal(err)
		}
		cuts = append(cuts, u)
	}
	t.Setenv("BINLANE_SOURCE_PASSWORD", sandbox.AccountPassword)
	t.Setenv("BINLANE_TARGET_PASSWORD", sandbox.AccountPassword)

	run := func(hold string, args ...string) (*exec.Cmd, *awaitBuffer, *bytes.Buffer) {
		cmd := exec.CommandContext(ctx, bin, append([]string{"cutover"}, args...)...)
		var stderr awaitBuffer
		stdout := &bytes.Buffer{}
		stderr.await, stderr.seen = "test hold after step", make(chan struct{})
		cmd.Stdout, cmd.Stderr = stdout, &stderr
		cmd.Env = append(os.Environ(), "BINLANE_TEST_CUTOVER_HOLD="+hold)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &stderr, stdout
	}

	src, dst, stream := 0, 1, "crash"
	_, done, stop := startReplicate(t, ctx, "--source", binlaneURL(t, servers[0], "wl"), "--target", binlaneURL(t, servers[1], "wl"),
		"--stream", stream, "--databases", "wl", "--heartbeat", "500ms")
	for i, kp := range cutover.KillPoints() {
		step := kp.Name
		load := startLoad(ctx, apps[src], int64(10+i))
		waitStreamReady(t, roots[dst], stream, done)
		args := []string{"--source", cuts[src], "--target", cuts[dst], "--stream", stream, "--databases", "wl", "--reverse", "--json",
			"--timeout", "30s"}
		cmd, stderr, _ := run(step, args...)
		select {
		case <-stderr.seen:
		case <-time.After(time.Minute):
			t.Fatalf("%s: the cut-over did not reach the step:\n%s", step, stderr.String())
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		st, _, _ := position.Load(ctx, roots[dst], stream)
		j, _, _ := position.LoadCutover(ctx, roots[dst], stream)
		committed := kp.HandedOver
		switch {
		case committed && (st.State != position.StateCutOver || j.State != position.CutoverHandedOver):
			t.Fatalf("killed after %q: stream %s, journal %q", step, st.State, j.State)
		case !committed && (st.State == position.StateCutOver || j.State != position.CutoverStarted || !readOnly(t, roots[src])):
			t.Fatalf("killed after %q: stream %s, journal %q, source read-only %v", step, st.State, j.State, readOnly(t, roots[src]))
		}
		if step == "verified" {
			out, code := runCutoverCmd(t, ctx, "--source", cuts[src], "--target", cuts[dst], "--stream", stream, "--databases", "wl",
				"--rollback")
			st, _, _ := position.Load(ctx, roots[dst], stream)
			if code != 0 || readOnly(t, roots[src]) || st.PauseAt != "" {
				t.Fatalf("--rollback: exit %d, source read-only %v, pause %q\n%s", code, readOnly(t, roots[src]), st.PauseAt, out)
			}
		}

		cmd, stderr, stdout := run("", args...)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("rerun after a kill after %q: %v\n%s\n%s", step, err, stdout, tail(stderr.String(), 4000))
		}
		r := parseCutover(t, stdout.String())
		if !r.Verified || r.ReverseStream != cutover.ReverseName(stream) {
			t.Fatalf("rerun after %q: %+v", step, r)
		}
		t.Logf("killed after %q, then: P %s, Q %s", step, r.SourceGTID, r.TargetGTID)
		load.end(t)
		if err := <-done; err != nil {
			t.Fatalf("stream %s ended with %v", stream, err)
		}
		stop()
		st, _, _ = position.Load(ctx, roots[dst], stream)
		if p, _ := gtid.ParseSet(r.SourceGTID); st.State != position.StateCutOver || st.GTID != p.String() {
			t.Fatalf("after %q: stream %s at %s, P %s", step, st.State, st.GTID, p)
		}
		if !readOnly(t, roots[src]) || readOnly(t, roots[dst]) || triggers(t, roots[src]) != 0 ||
			triggers(t, roots[dst]) != len(workload.TriggerDDL) {
			t.Fatalf("after %q: read-only %v/%v, triggers %d/%d", step, readOnly(t, roots[src]), readOnly(t, roots[dst]),
				triggers(t, roots[src]), triggers(t, roots[dst]))
		}
		verifyEqual(t, roots[dst], roots[src], "wl") // the new primary as the source: it has the triggers

		// Back the other way for the next step.
		fields := strings.Fields(r.ReverseCommand)
		src, dst, stream = dst, src, r.ReverseStream
		_, done, stop = startReplicate(t, ctx, append(fields[2:], "--heartbeat", "500ms")...)
	}
	stop()
}

// runTargetCmd runs pause, resume, wait or status in-process.
func runTargetCmd(t *testing.T, ctx context.Context, cmd *cobra.Command, args ...string) (string, int) {
	t.Helper()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		out.WriteString(err.Error())
	}
	return out.String(), exitCode(err)
}

// TestPauseResumeWait: binlane pause holds a running stream at a
// transaction boundary from another shell (state paused, status shows it,
// the source writes on and the target does not move); the hold survives a
// restart of the stream's process; resume goes on; wait returns once the
// stream applied a position, and exits 3 when it does not in time.
func TestPauseResumeWait(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)", "INSERT INTO app.t SELECT seq, 0 FROM app.seq_1_to_50")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	repl := []string{"--source", srcURL, "--target", dstURL, "--stream", "p", "--databases", "app", "--heartbeat", "500ms"}
	_, done, stop := startReplicate(t, ctx, repl...)
	waitFor(t, time.Minute, "the stream's row", func() bool { _, ok, _ := position.Load(ctx, dstDB, "p"); return ok })
	// The commands that only talk to the stream's target need SELECT and
	// UPDATE on binlane.streams.
	dst.ExecT(t, "CREATE USER ops@'%' IDENTIFIED BY 'ops-pw'", "GRANT SELECT, UPDATE ON binlane.streams TO ops@'%'")
	opsURL := "mysql://ops:ops-pw@" + dst.Addr() + "/"
	write := func(n int) {
		for i := 0; i < n; i++ {
			src.ExecT(t, "UPDATE app.t SET v = v + 1 WHERE id = 1 + FLOOR(RAND() * 50)")
		}
	}
	waitAt := func(pos string) {
		t.Helper()
		out, code := runTargetCmd(t, ctx, newWaitCmd(), "--target", opsURL, "--stream", "p", "--gtid", pos, "--timeout", "60s")
		if code != 0 {
			t.Fatalf("wait %s: exit %d: %s", pos, code, out)
		}
	}
	write(20)
	waitAt(sourcePos(t, srcDB))

	out, code := runTargetCmd(t, ctx, newPauseCmd(), "--target", opsURL, "--stream", "p")
	st, _, _ := position.Load(ctx, dstDB, "p")
	if code != 0 || !strings.Contains(out, "paused at "+st.GTID) || st.State != position.StatePaused {
		t.Fatalf("pause: exit %d: %s (stream %s at %s)", code, out, st.State, st.GTID)
	}
	out, _ = runTargetCmd(t, ctx, newStatusCmd(), "--target", dstURL, "--stream", "p")
	if !strings.Contains(out, "stream p: paused") || !strings.Contains(out, "hold, asked by binlane pause") {
		t.Errorf("status of a paused stream:\n%s", out)
	}
	held := st.GTID
	write(20)
	// A second pause is fine; a verify's pause request is refused.
	if out, code := runTargetCmd(t, ctx, newPauseCmd(), "--target", opsURL, "--stream", "p"); code != 0 {
		t.Fatalf("second pause: exit %d: %s", code, out)
	}
	if err := position.RequestPause(ctx, dstDB, "p", "0-1-1", position.ByVerify); err == nil {
		t.Fatal("a verify's request replaced binlane pause's")
	}
	// The stream's process restarts: it holds before applying anything.
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	_, done, stop = startReplicate(t, ctx, repl...)
	defer stop()
	waitFor(t, 30*time.Second, "the restarted stream to hold", func() bool {
		st, _, _ := position.Load(ctx, dstDB, "p")
		running, _ := position.Running(ctx, dstDB, "p")
		return running && st.State == position.StatePaused
	})
	time.Sleep(time.Second)
	if st, _, _ := position.Load(ctx, dstDB, "p"); st.GTID != held {
		t.Fatalf("the paused stream moved from %s to %s", held, st.GTID)
	}
	out, code = runTargetCmd(t, ctx, newWaitCmd(), "--target", opsURL, "--stream", "p", "--gtid", sourcePos(t, srcDB), "--timeout", "1s")
	if code != exitTimeout {
		t.Fatalf("wait on a paused stream: exit %d: %s", code, out)
	}

	out, code = runTargetCmd(t, ctx, newResumeCmd(), "--target", opsURL, "--stream", "p")
	if code != 0 || !strings.Contains(out, "resumed from "+held) {
		t.Fatalf("resume: exit %d: %s", code, out)
	}
	waitAt(sourcePos(t, srcDB))
	if out, code := runTargetCmd(t, ctx, newResumeCmd(), "--target", opsURL, "--stream", "p"); code != 0 || !strings.Contains(out, "not paused") {
		t.Fatalf("resume of a running stream: exit %d: %s", code, out)
	}
	verifyEqual(t, srcDB, dstDB, "app")
}
