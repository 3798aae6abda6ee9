package statuspage

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/testutil"
)

// fakeStream is a stream whose status the test sets.
type fakeStream struct {
	mu sync.Mutex
	st streamstatus.Status
}

func (f *fakeStream) read() streamstatus.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeStream) set(st streamstatus.Status) {
	f.mu.Lock()
	f.st = st
	f.mu.Unlock()
}

func (f *fakeStream) reading() (metrics.Reading, bool) {
	st := f.read()
	r := metrics.Reading{Snapshot: st.Snapshot, Lag: st.Lag, State: st.State, Restarts: st.Restarts, Held: st.Throttled != ""}
	for _, c := range st.Copy {
		r.Copy = append(r.Copy, metrics.CopyTable{Table: c.Table, Rows: c.Rows, Estimate: c.Estimate, Done: c.Done})
	}
	return r, !st.Snapshot.At.IsZero()
}

var t0 = time.Date(2026, 5, 4, 12, 0, 0, 0, time.UTC)

// snap is a snapshot at t0+at of counters that grow with it: per second,
// 100 transactions and 1000 rows per worker; worker 0 is busy half the
// time and waits for its turn a quarter, worker 1 is busy 20%.
func snap(at time.Duration) streamstatus.Snapshot {
	s := at.Seconds()
	d := func(share float64) time.Duration { return time.Duration(share * float64(at)) }
	return streamstatus.Snapshot{At: t0.Add(at), Started: t0, Committed: uint64(200 * s), InFlight: 3, Pending: 1,
		Window: 512, PeakInFlight: 600, DependencyWait: d(0.4), Position: "0-1-" + time.Duration(at).String(),
		Workers: []streamstatus.WorkerSnapshot{
			{Txns: uint64(100 * s), Rows: uint64(1000 * s), Busy: d(0.5), CommitWait: d(0.25), Commit: d(0.1), DependencyWait: d(0.3)},
			{Txns: uint64(100 * s), Rows: uint64(1000 * s), Busy: d(0.2), DependencyWait: d(0.1), Retries: 2},
		}}
}

func newTestPage(t *testing.T, f *fakeStream, rec func() (int, string)) (*Page, *httptest.Server) {
	t.Helper()
	mh, err := metrics.Handler(metrics.NewCollector("m", f.reading))
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Stream: "m", Read: f.read, Metrics: mh, Recommend: rec, ReadyMaxLag: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// TestStatusJSON checks the document's shape (every field, by its JSON
// name: the schema docs/status-json.md documents) and its numbers: the
// rates and shares over the last interval.
func TestStatusJSON(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateRunning, Position: "0-1-100", Lag: 1500 * time.Millisecond,
		Snapshot: snap(20 * time.Second), LastError: "lost connection", LastErrorAt: t0.Add(5 * time.Second), Restarts: 1,
		Throttled: "source Threads_running 9 > 8", Copy: []streamstatus.CopyProgress{{Table: "app.t", Rows: 10, Estimate: 100}}})
	_, srv := newTestPage(t, f, func() (int, string) { return 6, "busy everywhere" })
	code, body, hdr := get(t, srv.URL+"/status")
	if code != http.StatusOK || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s:\n%s", code, hdr.Get("Content-Type"), body)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"stream", "state", "alive", "reported_at", "source", "position", "last_transaction", "applied_transactions",
		"lag_seconds", "held", "restarts", "run", "copy", "statement", "last_error", "deferred", "recommendation", "run_by", "health"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("no %q in\n%s", k, body)
		}
	}
	var st streamstatus.Stream
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	// The first reading covers the attempt so far.
	r := st.Run
	if st.Stream != "m" || st.State != "running" || !st.Alive || st.Position != "0-1-100" || *st.LagSeconds != 1.5 || r == nil ||
		r.Committed != 4000 || r.InFlight != 3 || r.Pending != 1 || r.Window != 512 || r.PeakInFlight != 600 || r.IntervalSeconds != 20 || *st.Restarts != 1 ||
		st.Held != "source Threads_running 9 > 8" {
		t.Fatalf("stream fields: %+v %+v", st, r)
	}
	if !near(r.TransactionsPerSecond, 200) || !near(r.RowsPerSecond, 2000) || !near(r.DependencyWait, 0.2) {
		t.Errorf("rates: %+v", r)
	}
	if len(r.Workers) != 2 {
		t.Fatalf("workers: %+v", r.Workers)
	}
	w0, w1 := r.Workers[0], r.Workers[1]
	if w0.Worker != 0 || !near(w0.Busy, 0.5) || !near(w0.CommitWait, 0.25) || !near(w0.Commit, 0.1) || !near(w0.DependencyWait, 0.3) ||
		!near(w0.Idle, 0.15) || w0.Transactions != 2000 || w0.Rows != 20000 {
		t.Errorf("worker 0: %+v", w0)
	}
	if w1.Worker != 1 || !near(w1.Busy, 0.2) || !near(w1.Idle, 0.8) || w1.Retries != 2 {
		t.Errorf("worker 1: %+v", w1)
	}
	if len(st.Copy) != 1 || st.Copy[0].Table != "app.t" || st.Copy[0].Estimate != 100 || st.Copy[0].Done {
		t.Errorf("copy: %+v", st.Copy)
	}
	if st.LastError == nil || st.LastError.Message != "lost connection" || !st.LastError.At.Equal(t0.Add(5*time.Second)) {
		t.Errorf("last error: %+v", st.LastError)
	}
	if st.Recommendation == nil || st.Recommendation.Threads != 6 || st.Recommendation.Reason != "busy everywhere" {
		t.Errorf("recommendation: %+v", st.Recommendation)
	}
	if h := st.Health; h == nil || !h.Live.OK || !h.Ready.OK || h.ReadyMaxLagSeconds != 30 {
		t.Errorf("health: %+v", st.Health)
	}
	if strings.Contains(body, `\"`) {
		t.Errorf("JSON inside a string:\n%s", body)
	}

	// Later readings cover the last window (10 s) only: worker 1 became
	// idle meanwhile.
	for at := 21 * time.Second; at <= 40*time.Second; at += time.Second {
		s := snap(at)
		s.Workers[1] = snap(20 * time.Second).Workers[1]
		f.set(streamstatus.Status{State: streamstatus.StateCaughtUp, Snapshot: s})
		_, body, _ = get(t, srv.URL+"/status")
	}
	st = streamstatus.Stream{}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatal(err)
	}
	r = st.Run
	if st.State != "caught_up" || r.IntervalSeconds != 10 || !near(r.TransactionsPerSecond, 100) || !near(r.Workers[0].Busy, 0.5) ||
		r.Workers[1].Busy != 0 || r.Workers[1].Idle != 1 {
		t.Errorf("over the last window: %s %+v", st.State, r)
	}
	if st.LastError != nil {
		t.Errorf("last error %+v, want none", st.LastError)
	}
}

// TestStatusBeforeRun: no counters yet, no recommendation function.
func TestStatusBeforeRun(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateStarting})
	_, srv := newTestPage(t, f, nil)
	_, body, _ := get(t, srv.URL+"/status")
	for _, want := range []string{`"state": "starting"`, `"alive": true`, `"run": null`, `"lag_seconds": null`, `"copy": []`,
		`"last_error": null`, `"recommendation": null`} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in\n%s", want, body)
		}
	}
	// A recommender with nothing to say counts as none.
	_, srv = newTestPage(t, f, func() (int, string) { return 0, "" })
	if _, body, _ = get(t, srv.URL+"/status"); !strings.Contains(body, `"recommendation": null`) {
		t.Errorf("empty recommendation:\n%s", body)
	}
}

// TestRecommendSeesInterval: a Recommend function reads the interval the
// request computed.
func TestRecommendSeesInterval(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateRunning, Snapshot: snap(10 * time.Second)})
	var p *Page
	var got streamstatus.Interval
	p, srv := newTestPage(t, f, func() (int, string) { got = p.Interval(); return 2, "" })
	get(t, srv.URL+"/status")
	if got.Elapsed != 10*time.Second || got.Workers != 2 || got.Busy != 7*time.Second || got.CommitWait != 2500*time.Millisecond ||
		got.Commit != time.Second || got.DependencyWait != 4*time.Second {
		t.Errorf("interval %+v", got)
	}
}

// TestProbes: /healthz is alive and not in error (a supervisor restarts on
// it), /readyz is caught up and not copying (a load balancer routes on it).
func TestProbes(t *testing.T) {
	f := &fakeStream{}
	_, srv := newTestPage(t, f, nil)
	running := snap(time.Second)
	cases := []struct {
		st                  streamstatus.Status
		health, ready       int
		healthWhy, readyWhy string
	}{
		{streamstatus.Status{State: streamstatus.StateCaughtUp, Snapshot: running}, 200, 200, "ok", "ok"},
		{streamstatus.Status{State: streamstatus.StateRunning, Lag: 29 * time.Second, Snapshot: running}, 200, 200, "ok", "ok"},
		{streamstatus.Status{State: streamstatus.StateRunning, Lag: 45 * time.Second, Snapshot: running}, 200, 503, "ok",
			"m: lags 45s behind the source (limit 30s)"},
		{streamstatus.Status{State: streamstatus.StateCopying, Lag: time.Second, Snapshot: running}, 200, 503, "ok", "m: copying"},
		{streamstatus.Status{State: streamstatus.StateStarting}, 200, 503, "ok", "m: starting"},
		{streamstatus.Status{State: streamstatus.StateRestarting, LastError: "lost connection", Snapshot: running}, 200, 503, "ok", "m: restarting"},
		{streamstatus.Status{State: streamstatus.StateStopped, LastError: "old"}, 503, 503, "m: stopped", "m: stopped"},
		{streamstatus.Status{State: streamstatus.StateError, LastError: "duplicate key"}, 503, 503, "m: error: duplicate key", "m: error: duplicate key"},
	}
	for _, c := range cases {
		f.set(c.st)
		for _, probe := range []struct {
			path string
			code int
			why  string
		}{{"/healthz", c.health, c.healthWhy}, {"/readyz", c.ready, c.readyWhy}} {
			code, body, hdr := get(t, srv.URL+probe.path)
			if code != probe.code || body != probe.why+"\n" || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
				t.Errorf("%s lag %s %s: %d %q, want %d %q", c.st.State, c.st.Lag, probe.path, code, body, probe.code, probe.why)
			}
		}
	}
}

// TestHistory: the page samples lag and throughput in the process, keeps
// a bounded number of points, and serves them oldest first.
func TestHistory(t *testing.T) {
	f := &fakeStream{}
	p, err := New(Config{Stream: "m", Read: f.read, History: 10 * time.Second, HistoryEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 25; i++ {
		f.set(streamstatus.Status{State: streamstatus.StateRunning, Lag: time.Duration(i) * time.Second, Snapshot: snap(time.Duration(i) * time.Second)})
		p.sample(t0.Add(time.Duration(i) * time.Second))
	}
	pts := p.History()
	if len(pts) != 10 || !pts[0].At.Equal(t0.Add(16*time.Second)) || !pts[9].At.Equal(t0.Add(25*time.Second)) {
		t.Fatalf("%d points, from %v to %v", len(pts), pts[0].At, pts[len(pts)-1].At)
	}
	if *pts[9].LagSeconds != 25 || !near(pts[9].TransactionsPerSecond, 200) || !near(pts[9].RowsPerSecond, 2000) || pts[9].State != "running" {
		t.Errorf("last point %+v", pts[9])
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	_, body, _ := get(t, srv.URL+"/history")
	var h struct {
		IntervalSeconds float64 `json:"interval_seconds"`
		Points          []Point `json:"points"`
	}
	if err := json.Unmarshal([]byte(body), &h); err != nil || h.IntervalSeconds != 1 || len(h.Points) != 10 {
		t.Errorf("/history: %v %+v", err, h)
	}
}

// TestMetrics: binlane's collector and the standard ones.
func TestMetrics(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateCopying, Snapshot: snap(10 * time.Second), Lag: time.Second, Restarts: 2,
		Throttled: "source Threads_running 9 > 8", Copy: []streamstatus.CopyProgress{{Table: "app.a", Rows: 10, Estimate: 5, Done: true},
			{Table: "app.b", Rows: 7, Estimate: 100}}})
	_, srv := newTestPage(t, f, nil)
	code, body, _ := get(t, srv.URL+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("%d\n%s", code, body)
	}
	for _, re := range []string{`(?m)^go_goroutines \d+`, `(?m)^go_build_info\{`, `(?m)^process_cpu_seconds_total `,
		`(?m)^process_resident_memory_bytes `, `(?m)^process_open_fds `, `(?m)^binlane_committed_transactions_total\{stream="m"\} 2000$`,
		`(?m)^binlane_lag_seconds\{stream="m"\} 1$`, `(?m)^binlane_worker_busy_seconds_total\{stream="m",worker="0"\} 5$`,
		`(?m)^binlane_stream_state\{state="copying",stream="m"\} 1$`, `(?m)^binlane_stream_state\{state="running",stream="m"\} 0$`,
		`(?m)^binlane_restarts_total\{stream="m"\} 2$`, `(?m)^binlane_held\{stream="m"\} 1$`,
		`(?m)^binlane_copy_rows_total\{stream="m",table="app.b"\} 7$`, `(?m)^binlane_copy_rows_estimated\{stream="m",table="app.a"\} 10$`,
		`(?m)^binlane_copy_tables\{state="done",stream="m"\} 1$`, `(?m)^binlane_copy_tables\{state="copying",stream="m"\} 1$`} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("no %s in /metrics", re)
		}
	}
}

func TestIndexAndRoutes(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateStarting})
	_, srv := newTestPage(t, f, nil)
	code, body, hdr := get(t, srv.URL+"/")
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(body, `fetch("status"`) ||
		!strings.Contains(body, `id="lag-chart"`) || !strings.Contains(body, `id="workers"`) {
		t.Errorf("index: %d %s", code, hdr.Get("Content-Type"))
	}
	// Self-contained: no external script, style, image or font.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//`).FindString(body); m != "" {
		t.Errorf("external asset: %s", m)
	}
	for _, path := range []string{"/nope", "/status/x"} {
		if code, _, _ := get(t, srv.URL+path); code != http.StatusNotFound {
			t.Errorf("%s: %d", path, code)
		}
	}
	resp, err := http.Post(srv.URL+"/status", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /status: %d", resp.StatusCode)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without Read")
	}
}

// TestPageInChromium renders the page of a fake stream in a real browser:
// its script must have filled in the state, position, workers, copy,
// error and the "—" of no recommendation.
func TestPageInChromium(t *testing.T) {
	f := &fakeStream{}
	f.set(streamstatus.Status{State: streamstatus.StateCopying, Position: "0-1-4242", Lag: 2 * time.Second, Snapshot: snap(20 * time.Second),
		LastError: "lost connection <b>to</b> target", LastErrorAt: t0,
		Copy: []streamstatus.CopyProgress{{Table: "app.big", Rows: 500, Estimate: 1000}, {Table: "app.small", Rows: 10, Estimate: 10, Done: true}}})
	p, srv := newTestPage(t, f, nil)
	// Before the page is opened, the process sampled a lag of 100 s: a
	// fresh page draws it (its chart's scale reaches 100 s).
	cur := f.read()
	f.set(streamstatus.Status{State: streamstatus.StateRunning, Lag: 100 * time.Second, Snapshot: snap(10 * time.Second)})
	p.sample(time.Now().Add(-time.Minute))
	f.set(cur)
	dom := testutil.DumpDOM(t, srv.URL+"/")
	if !strings.Contains(dom, ">100 s</text>") {
		t.Errorf("the lag history the process kept is not drawn")
	}
	// (The page polls several times: rates over a snapshot that does not
	// change fall to 0.)
	for _, want := range []string{`<span id="state" class="badge copying">copying</span>`, `<dd id="position">0-1-4242</dd>`,
		`<dd id="lag">2.00 s</dd>`, `<tr class="worker" data-worker="0"><td>thread 0</td>`, `<tr class="worker" data-worker="1">`,
		`<tr class="copy-table"><td>app.big</td><td>500</td><td>1,000</td>`, `<td>done</td>`,
		`lost connection &lt;b&gt;to&lt;/b&gt; target`, `<dd id="recommendation">—</dd>`, `<polyline `, `id="updated" class="muted">updated `} {
		if !strings.Contains(dom, want) {
			t.Errorf("no %s in the page", want)
		}
	}
	for _, re := range []string{`<span class="busy" style="width:\d+\.\d\d%">`, `\d+ transactions/s, [\d,.]+ rows/s`} {
		if !regexp.MustCompile(re).MatchString(dom) {
			t.Errorf("no %s in the page", re)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
