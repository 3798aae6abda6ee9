// Package testutil holds the helpers that tests of several packages share:
// a logger into the test's log, a query's rows as text, a page rendered by
// headless Chromium. One copy of each, so that a fix to one (a NULL shown
// differently, a browser flag) reaches every test.
//
// It imports package testing: only _test.go files may import it, never
// production code. Servers for tests are package sandbox's.
package testutil

import (
	"bytes"
	"context"
	"database/sql"
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

// Lines runs q on db and returns each row as one line, its columns joined
// by " | " (a NULL as the empty string), in the order the server returns
// them.
func Lines(t testing.TB, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
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
