package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/verify"
)

func runStatusCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := newStatusCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// TestPrintStream checks the status text of a running stream that
// reported its counters, to the character.
func TestPrintStream(t *testing.T) {
	now := time.Date(2026, 5, 4, 12, 0, 30, 0, time.UTC)
	snap := streamstatus.Snapshot{At: now.Add(-10 * time.Second), Started: now.Add(-110 * time.Second), InFlight: 12, Pending: 5,
		Window: 2048, PeakInFlight: 1900, LockWaitKills: 3, Workers: []streamstatus.WorkerSnapshot{
			{Txns: 900, Batches: 100, Rows: 2000, Busy: 80 * time.Second, CommitWait: 10 * time.Second, Commit: 5 * time.Second, Retries: 2},
			{Txns: 100, Batches: 10, Rows: 150, Busy: 25 * time.Second},
		}, Serialized: map[string]uint64{"statement (DDL)": 4}}
	stats, err := json.Marshal(streamstatus.Report{Snapshot: snap, State: "caught_up", Held: "replica r1 is 12s behind (> 10s)"})
	if err != nil {
		t.Fatal(err)
	}
	s := position.State{Name: "main", SourceID: "abc-uuid", Flavor: "mariadb", GTID: "0-1-1000", File: "binlog.000007",
		Pos: 4242, LastGTID: "0-1-1000", SourceTS: time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC), Applied: 1000,
		State: position.StateRunning, LagMillis: 1500, Stats: string(stats), ReportedAt: now.Add(-2 * time.Second),
		Message: "earlier: lost\nthe connection"}
	var b strings.Builder
	printStream(&b, streamstatus.FromStored(streamstatus.Stored{Row: s, Alive: true}), now)
	want := `stream main: caught_up (source abc-uuid, mariadb)
  position   0-1-1000
  source at  binlog.000007:4242, last transaction 0-1-1000
  applied    1000 transactions; the last one committed on the source at 2026-05-04T12:00:00Z
  lag        1.5s (reported 2s ago)
  held back  replica r1 is 12s behind (> 10s)
  queue      12 in flight (window 2048, at most 1900 so far), 5 waiting; 3 later transactions rolled back for an earlier one
  thread  txns  batches  rows  busy  commit wait  committing  retries
       0   900      100  2000   80%          10%          5%        2
       1   100       10   150   25%           0%          0%        0
  ran alone  4 x statement (DDL)
  last error earlier: lost
             the connection
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}

	// The document adds a recommendation from the report, and the copy.
	d := newStreamDoc(streamstatus.Stored{Row: s, Alive: true, Copy: []position.CopyTable{
		{Schema: "app", Table: "a", State: position.CopyDone, Rows: 1000, Estimate: 990},
		{Schema: "app", Table: "b", State: position.CopyCopying, Rows: 20, Estimate: 500, OnePass: "no usable key"},
	}}, false)
	if d.Recommendation == nil || d.Recommendation.Threads < 1 || d.Recommendation.Reason == "" {
		t.Fatalf("no recommendation from the report: %+v", d.Recommendation)
	}
	b.Reset()
	printStream(&b, d, now)
	for _, part := range []string{"threads    ", "recommended: ", "copy       1 of 2 tables done, 1020 rows copied (about 1490 estimated)",
		"app.b  copying  20 / ~500 rows", "one pass: no usable key"} {
		if !strings.Contains(b.String(), part) {
			t.Errorf("status lacks %q:\n%s", part, b.String())
		}
	}

	// A stream whose process is gone says so, and shows no lag.
	b.Reset()
	printStream(&b, streamstatus.FromStored(streamstatus.Stored{Row: s}), now)
	if !strings.Contains(b.String(), "stream main: running (") || !strings.Contains(b.String(), "no binlane process holds the stream") ||
		strings.Contains(b.String(), "lag") {
		t.Errorf("stream without its process:\n%s", b.String())
	}
	// A stopped stream shows no lag or threads, even with an old report.
	s.State = position.StateStopped
	b.Reset()
	printStream(&b, streamstatus.FromStored(streamstatus.Stored{Row: s}), now)
	if strings.Contains(b.String(), "lag") || strings.Contains(b.String(), "thread") {
		t.Errorf("stopped stream:\n%s", b.String())
	}
	// A stream that was cut over has no process by design: nothing tells
	// the operator to start it again.
	s.State, s.Message = position.StateCutOver, "cut over at 0-1-1000"
	b.Reset()
	printStream(&b, streamstatus.FromStored(streamstatus.Stored{Row: s}), now)
	if !strings.Contains(b.String(), "stream main: cut_over (") || strings.Contains(b.String(), "start it again") {
		t.Errorf("cut-over stream:\n%s", b.String())
	}
}

// startReplicate runs `binlane replicate args...` in-process until stop is
// called or ctx ends; its log is shown when the test fails.
func startReplicate(t *testing.T, ctx context.Context, args ...string) (logs *syncBuffer, done <-chan error, stop context.CancelFunc) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	logs = &syncBuffer{}
	ended := make(chan error, 1)
	go func() {
		cmd := newReplicateCmd()
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		cmd.SetOut(logs)
		cmd.SetErr(logs)
		cmd.SetArgs(args)
		ended <- cmd.ExecuteContext(runCtx)
	}()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replicate log:\n%s", logs.String())
		}
	})
	return logs, ended, stop
}

// syncBuffer collects a command's log while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestReplicateStatusMetrics runs `binlane replicate` in-process with
// --metrics-addr, then reads `binlane status` and the Prometheus metrics
// of the running stream, stops it, and checks the result row by row and
// the status of a stopped and of a failed stream.
func TestReplicateStatusMetrics(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	if out, err := runStatusCmd(t, "--target", dstURL); err != nil || out != "no streams on this target\n" {
		t.Fatalf("status without streams: %v %q", err, out)
	}
	src.ExecT(t, "CREATE DATABASE marker") // a non-empty position to start from
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.t SELECT seq, 0 FROM app.seq_1_to_1000")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "m", "--start-gtid", start,
		"--databases", "app", "--threads", "2", "--heartbeat", "500ms", "--metrics-addr", "127.0.0.1:0")
	defer stop()
	addrRE := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	var addr string
	running := func() {
		select {
		case err := <-done:
			t.Fatalf("replicate ended: %v", err)
		default:
		}
	}
	waitFor(t, 30*time.Second, "the metrics server", func() bool {
		running()
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})

	for i := 1; i <= 60; i++ {
		src.ExecT(t, fmt.Sprintf("UPDATE app.t SET v = v + 1 WHERE id BETWEEN %d AND %d", i, i+100))
	}
	want, err := gtid.ParseSet(sourcePos(t, srcDB))
	if err != nil {
		t.Fatal(err)
	}
	// Caught up, and the running process reported its counters (every 5 s).
	waitFor(t, 60*time.Second, "a caught-up stream and a status report", func() bool {
		running()
		st, ok, _ := position.Load(ctx, dstDB, "m")
		got, _ := gtid.ParseSet(st.GTID)
		return ok && got.ContainsSet(want) && !st.ReportedAt.IsZero()
	})

	m := scrape(t, "http://"+addr+"/metrics")
	committed := m[`binlane_committed_transactions_total{stream="m"}`]
	if committed < 62 {
		t.Errorf("committed %v transactions, want at least 62", committed)
	}
	var txns, busy float64
	for _, w := range []string{"0", "1"} {
		for _, name := range []string{"worker_transactions_total", "worker_batches_total", "worker_rows_total", "worker_retries_total",
			"worker_busy_seconds_total", "worker_commit_wait_seconds_total", "worker_commit_seconds_total"} {
			key := fmt.Sprintf(`binlane_%s{stream="m",worker="%s"}`, name, w)
			if _, ok := m[key]; !ok {
				t.Errorf("metric %s missing", key)
			}
		}
		txns += m[fmt.Sprintf(`binlane_worker_transactions_total{stream="m",worker="%s"}`, w)]
		busy += m[fmt.Sprintf(`binlane_worker_busy_seconds_total{stream="m",worker="%s"}`, w)]
	}
	if txns != committed || busy <= 0 {
		t.Errorf("workers committed %v transactions (total %v), busy %vs", txns, committed, busy)
	}
	for _, key := range []string{`binlane_lag_seconds{stream="m"}`, `binlane_queue_transactions{state="pending",stream="m"}`,
		`binlane_queue_transactions{state="dispatched",stream="m"}`, `binlane_lock_wait_rollbacks_total{stream="m"}`,
		`binlane_dependency_wait_seconds_total{stream="m"}`, `binlane_window_transactions{stream="m"}`,
		`binlane_peak_queue_transactions{stream="m"}`} {
		if _, ok := m[key]; !ok {
			t.Errorf("metric %s missing", key)
		}
	}

	out, err := runStatusCmd(t, "--target", dstURL, "--stream", "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`(?m)^stream m: (running|caught_up) \(source \S+, mariadb\)$`, `(?m)^  position   0-1-\d+$`,
		`(?m)^  source at  binlog\.\d+:\d+, last transaction 0-1-\d+$`, `(?m)^  applied    \d+ transactions; the last one committed on the source at `,
		`(?m)^  lag        \S+ \(reported \S+ ago\)$`, `(?m)^  thread  txns  batches  rows  busy  commit wait  committing  retries$`,
		`(?m)^ +0 +\d+ +\d+ +\d+ +\d+% +\d+% +\d+% +\d+$`, `(?m)^ +1 +\d+ +\d+ +\d+ +\d+% +\d+% +\d+% +\d+$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("status lacks %s:\n%s", re, out)
		}
	}

	// status --check against the stream in each state: running now.
	check := func(want int, wantLine string, args ...string) {
		t.Helper()
		out, err := runStatusCmd(t, append([]string{"--target", dstURL, "--check"}, args...)...)
		if code := exitCode(err); code != want || !regexp.MustCompile(wantLine).MatchString(out) {
			t.Errorf("status --check %v: exit %d %q, want %d and %s", args, code, out, want, wantLine)
		}
	}
	check(0, `^BINLANE OK - stream m is (running|caught_up), lag \S+ \| 'lag_m'=[\d.]+s;;60\n$`, "--stream", "m", "--max-lag", "1m")

	stop()
	if err := <-done; err != nil {
		t.Fatalf("replicate: %v", err)
	}
	check(1, `^BINLANE WARNING - stream m is stopped \(position saved; nothing replicates\)\n$`)
	check(3, `^BINLANE UNKNOWN - target \S+ has no stream "absent"\n$`, "--stream", "absent")
	// A row that says running, whose process is gone (killed).
	last, _, _ := position.Load(ctx, dstDB, "m")
	if err := position.SetState(ctx, dstDB, "m", last.Owner.Token, position.StateRunning, ""); err != nil {
		t.Fatal(err)
	}
	check(2, `^BINLANE CRITICAL - stream m is running, but no binlane process runs it \(last report \S+ ago\)\n$`)
	if err := position.SetState(ctx, dstDB, "m", last.Owner.Token, position.StateStopped, ""); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"status", "--target", "mysql://nobody@127.0.0.1:1/", "--check"}, &stdout, &stderr); code != 3 ||
		!strings.HasPrefix(stdout.String(), "BINLANE UNKNOWN - ") || stderr.Len() != 0 {
		t.Errorf("unreachable target: exit %d %q %q", code, stdout.String(), stderr.String())
	}
	rules, err := filter.New([]string{"app"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(ctx, verify.Config{Source: srcDB, Target: dstDB, Rules: rules})
	if err != nil || !rep.Equal() {
		var b strings.Builder
		if err == nil {
			rep.Format(&b)
		}
		t.Fatalf("after the run: %v\n%s", err, b.String())
	}
	out, _ = runStatusCmd(t, "--target", dstURL)
	if !strings.HasPrefix(out, "stream m: stopped (") || strings.Contains(out, "lag") || strings.Contains(out, "last error") {
		t.Errorf("stopped stream:\n%s", out)
	}

	// A failed stream shows its error; --json carries the whole row.
	st, _, err := position.Load(ctx, dstDB, "m")
	if err != nil {
		t.Fatal(err)
	}
	if err := position.SetState(ctx, dstDB, "m", st.Owner.Token, position.StateError, "transaction 0-1-9: boom\nsecond line"); err != nil {
		t.Fatal(err)
	}
	check(2, `^BINLANE CRITICAL - stream m is in error: transaction 0-1-9: boom\nsecond line\n$`, "--stream", "m")
	out, _ = runStatusCmd(t, "--target", dstURL, "--stream", "m")
	if !strings.HasPrefix(out, "stream m: error (") || !strings.HasSuffix(out, "  last error transaction 0-1-9: boom\n             second line\n") {
		t.Errorf("failed stream:\n%s", out)
	}
	out, err = runStatusCmd(t, "--target", dstURL, "--json")
	var docs []streamstatus.Stream
	if err != nil || json.Unmarshal([]byte(out), &docs) != nil || len(docs) != 1 || docs[0].Stream != "m" ||
		docs[0].State != "error" || docs[0].LastError == nil || docs[0].LastError.Message != "transaction 0-1-9: boom\nsecond line" ||
		*docs[0].AppliedTransactions < 62 || docs[0].Run == nil || docs[0].Alive {
		t.Errorf("--json: %v\n%s", err, out)
	}
	if _, err := runStatusCmd(t, "--target", dstURL, "--stream", "absent"); err == nil || !strings.Contains(err.Error(), `has no stream "absent"`) {
		t.Errorf("unknown stream: %v", err)
	}
	if _, err := runStatusCmd(t); err == nil || !strings.Contains(err.Error(), "--target is required") {
		t.Errorf("no target: %v", err)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// scrape reads a Prometheus text exposition into "name{labels}" -> value.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %v %s", err, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if !strings.Contains(string(body), "# HELP binlane_worker_busy_seconds_total ") {
		t.Errorf("no help text:\n%s", body)
	}
	return out
}
