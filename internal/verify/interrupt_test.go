package verify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
)

// cancelOn is a log handler that cancels the run at the n-th record with
// message msg, and keeps the status of each "table verified" record.
type cancelOn struct {
	msg    string
	n      int
	cancel context.CancelFunc
	mu     *sync.Mutex
	seen   *int
	status *[]string
}

func (h cancelOn) Enabled(context.Context, slog.Level) bool { return true }
func (h cancelOn) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h cancelOn) WithGroup(string) slog.Handler            { return h }

func (h cancelOn) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r.Message == h.msg {
		if *h.seen++; *h.seen == h.n {
			h.cancel()
		}
	}
	if r.Message == "table verified" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "status" {
				*h.status = append(*h.status, a.Value.String())
			}
			return true
		})
	}
	return nil
}

// testInterrupted: a run that ends before a table was compared to the end
// returns the context's error and never calls that table equal, not even
// in its log.
func testInterrupted(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE intr", "CREATE TABLE intr.t (id INT PRIMARY KEY, v CHAR(32))",
		"INSERT INTO intr.t SELECT seq, MD5(seq) FROM intr.seq_1_to_5000")
	cases := []struct {
		name string
		msg  string // cancel at this log record
		n    int
	}{
		{"before the first chunk", "verify started", 1},
		{"after some chunks", "chunk compared", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var statuses []string
			h := cancelOn{msg: c.msg, n: c.n, cancel: cancel, mu: &sync.Mutex{}, seen: new(int), status: &statuses}
			rep, err := Run(ctx, Config{Source: p.srcDB, Target: p.tgtDB, Rules: filter.Rules{Databases: []string{"intr"}},
				ChunkRows: 10, Parallel: 1, Logger: slog.New(h)})
			if rep != nil || !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, %v; want no report and context.Canceled", rep, err)
			}
			for _, s := range statuses {
				if s == string(StatusEqual) {
					t.Errorf("an interrupted table was logged as equal: %v", statuses)
				}
			}
		})
	}
}
