package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/verify"
)

func httpGet(t *testing.T, url string) (int, string) {
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
	return resp.StatusCode, string(b)
}

// TestStatusPage runs `binlane replicate` in-process between two sandboxes,
// as binlane's least-privilege accounts, copying a table first, with
// --metrics-addr; reads /status, /healthz and /metrics of the caught-up
// stream, loads the page in headless Chromium (its script must show the
// state, the position and a row per worker), stops the stream and checks
// the target row by row.
func TestStatusPage(t *testing.T) {
	if _, err := exec.LookPath("chromium"); err != nil {
		t.Skip("no chromium binary")
	}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.t SELECT seq, 0 FROM app.seq_1_to_2000")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	logs, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "page", "--databases", "app", "--threads", "3",
		"--heartbeat", "500ms", "--metrics-addr", "127.0.0.1:0", "--ready-max-lag", "20s")
	defer stop()
	running := func() {
		select {
		case err := <-done:
			t.Fatalf("replicate ended: %v", err)
		default:
		}
	}
	addrRE := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	var addr string
	waitFor(t, 30*time.Second, "the status page", func() bool {
		running()
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	base := "http://" + addr
	status := func() (streamstatus.Stream, bool) {
		running()
		code, body := httpGet(t, base+"/status")
		var st streamstatus.Stream
		return st, code == http.StatusOK && json.Unmarshal([]byte(body), &st) == nil
	}
	// The copy first: updates made after it go through the stream.
	waitFor(t, 60*time.Second, "the copy done on /status", func() bool {
		st, ok := status()
		return ok && st.State == "caught_up" && len(st.Copy) == 1 && st.Copy[0].Done
	})

	for i := 1; i <= 50; i++ {
		src.ExecT(t, fmt.Sprintf("UPDATE app.t SET v = v + 1 WHERE id BETWEEN %d AND %d", i*10, i*10+50))
	}
	want := sourcePos(t, srcDB)
	var st streamstatus.Stream
	waitFor(t, 90*time.Second, "a caught-up stream on /status", func() bool {
		var ok bool
		st, ok = status()
		return ok && st.State == "caught_up" && st.Position == want
	})
	var rows uint64
	for _, w := range st.Run.Workers {
		rows += w.Rows
	}
	if st.Stream != "page" || !st.Alive || len(st.Run.Workers) != 3 || st.Run.Committed < 50 || rows < 50*51 || st.LastError != nil ||
		st.Recommendation == nil || !st.Health.Live.OK || !st.Health.Ready.OK || st.Health.ReadyMaxLagSeconds != 20 {
		t.Errorf("/status: %+v", st)
	}
	if len(st.Copy) != 1 || st.Copy[0].Table != "app.t" || !st.Copy[0].Done || st.Copy[0].Rows != 2000 {
		t.Errorf("/status copy: %+v", st.Copy)
	}
	for _, probe := range []string{"/healthz", "/readyz"} {
		if code, body := httpGet(t, base+probe); code != http.StatusOK || body != "ok\n" {
			t.Errorf("%s: %d %q", probe, code, body)
		}
	}
	_, metricsText := httpGet(t, base+"/metrics")
	for _, re := range []string{`(?m)^go_goroutines \d+`, `(?m)^go_build_info\{`, `(?m)^process_resident_memory_bytes `,
		`(?m)^binlane_committed_transactions_total\{stream="page"\} \d+`, `(?m)^binlane_worker_busy_seconds_total\{stream="page",worker="2"\} `} {
		if !regexp.MustCompile(re).MatchString(metricsText) {
			t.Errorf("/metrics lacks %s", re)
		}
	}

	dom := testutil.DumpDOM(t, base+"/")
	for _, s := range []string{`<span id="state" class="badge caught_up">caught_up</span>`, `<dd id="position">` + want + `</dd>`,
		`<tr class="worker" data-worker="0"><td>thread 0</td>`, `<tr class="worker" data-worker="2">`,
		`<tr class="copy-table"><td>app.t</td><td>2,000</td>`, `<pre id="last-error">—</pre>`,
		`<span id="stream">page</span>`} {
		if !strings.Contains(dom, s) {
			t.Errorf("the page lacks %s", s)
		}
	}
	if !regexp.MustCompile(`<dd id="queue">[\d,]+ in flight \(window [\d,]+, at most [\d,]+ so far\), [\d,]+ waiting`).MatchString(dom) {
		t.Errorf("the page shows no window with the queue")
	}
	// The recommendation as rendered (the script's own text holds " — ").
	if !regexp.MustCompile(`<dd id="recommendation">\d+ threads? — [^<]+</dd>`).MatchString(dom) {
		t.Errorf("the page shows no recommendation with its reason")
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}

	stop()
	if err := <-done; err != nil {
		t.Fatalf("replicate: %v", err)
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
	// The page goes with the stream.
	waitFor(t, 5*time.Second, "the status page to close", func() bool {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err != nil
	})
}
