// Package testutil holds the helpers that tests of several packages share
// and that are not about a server: a logger into the test's log, a page
// rendered by headless Chromium. One copy of each, so that a fix to one (a
// log level, a browser flag) reaches every test. What is about a server
// (starting one, querying it) is package sandbox's.
//
// It imports package testing: only _test.go files may import it, never
// production code.
package testutil

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Logger returns a logger that writes to t's log: info and above, debug
// too when BINLANE_TEST_DEBUG is set.
func Logger(t testing.TB) *slog.Logger {
	level := slog.LevelInfo
	if os.Getenv("BINLANE_TEST_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return LoggerAt(t, level)
}

// LoggerAt returns a logger that writes to t's log from level up.
func LoggerAt(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: level}))
}

// logWriter writes each record as one line of t's log.
type logWriter struct{ t testing.TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// DumpDOM loads url in headless Chromium and returns the DOM once the
// page's script ran; the test is skipped when there is no Chromium.
func DumpDOM(t testing.TB, url string) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("no chromium binary")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=5000", "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return string(out)
}
