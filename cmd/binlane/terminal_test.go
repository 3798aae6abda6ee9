package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestBarsAndLogsOnATerminal runs `binlane copy` in a real terminal (tmux)
// and logs while its bars are drawn: the copy is held back by a
// Threads_running limit the source exceeds (a warning), then goes on (an
// info line). Every log line must end up whole above the bars, none broken
// by a bar redrawn over it.
func TestBarsAndLogsOnATerminal(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("no tmux: make deps installs it") // a skip would let CI pass by accident
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.a (id INT PRIMARY KEY, v VARCHAR(40))",
		"INSERT INTO app.a SELECT seq, REPEAT('x', 40) FROM app.seq_1_to_20000",
		"CREATE TABLE app.b LIKE app.a", "INSERT INTO app.b SELECT * FROM app.a")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	dir := t.TempDir()
	bin := filepath.Join(dir, "binlane")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Threads_running counts binlane's binlog dump (1) and, while it
	// copies, its reader (1): two more sessions sleeping in a query make
	// it 3, over the limit of 2, for 4 s.
	busy := src.OpenT(t, "")
	sleeping := make(chan struct{})
	for range 2 {
		go func() {
			busy.ExecContext(ctx, "SELECT SLEEP(4)")
			sleeping <- struct{}{}
		}()
	}

	sock, session := "binlane-test-"+filepath.Base(dir), "copy"
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-L", sock}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	script := fmt.Sprintf("%s copy --source '%s' --target '%s' --databases app --chunk-time 50ms --copy-threads 1 "+
		"--max-threads-running 2 --no-defaults; echo EXIT=$?; sleep 60", bin, srcURL, dstURL)
	tmux("new-session", "-d", "-s", session, "-x", "150", "-y", "50", script)
	defer exec.Command("tmux", "-L", sock, "kill-server").Run()
	var screen string
	for !strings.Contains(screen, "EXIT=") {
		if ctx.Err() != nil {
			t.Fatalf("the copy did not end:\n%s", screen)
		}
		time.Sleep(200 * time.Millisecond)
		screen = tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", session)
	}
	<-sleeping
	<-sleeping
	if !strings.Contains(screen, "EXIT=0") {
		t.Fatalf("the copy failed:\n%s", screen)
	}
	logLine := regexp.MustCompile(`^time=\S+ level=(INFO|WARN|ERROR|DEBUG) msg=`)
	var held, allowed, bars bool
	for _, line := range strings.Split(screen, "\n") {
		switch {
		case strings.Contains(line, "time="):
			if !logLine.MatchString(line) || strings.Contains(line, "rows/s") || strings.Contains(line, "all tables") {
				t.Errorf("a log line broken by the bars: %q", line)
			}
			held = held || regexp.MustCompile(`msg="work held back" reason="source Threads_running \d > 2"`).MatchString(line)
			allowed = allowed || strings.Contains(line, `msg="limits allow work again"`)
		case strings.Contains(line, "all tables"):
			bars = true
			if !strings.Contains(line, "rows") {
				t.Errorf("overall bar: %q", line)
			}
		}
	}
	if !held || !allowed || !bars {
		t.Errorf("held logged %v, going on logged %v, bars drawn %v:\n%s", held, allowed, bars, screen)
	}
	if t.Failed() {
		t.Logf("terminal:\n%s", screen)
	}
	_ = os.Remove(bin)
}
