package replicate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
)

// TestStartKeptAfterEarlyFailure: a new stream's first run, given
// --start-gtid, fails before it reads the source; the next run, without
// --start-gtid, starts where the first was told to, not at the source's
// current position (which would skip every transaction in between).
func TestStartKeptAfterEarlyFailure(t *testing.T) {
	e := newEnv(t)
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO wl.t VALUES (1, 'one'), (2, 'two')", "UPDATE wl.t SET v = 'TWO' WHERE id = 2")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg := e.config(t, 2)
	cfg.StopAtGTID = "not-a-position"
	err := Run(ctx, cfg)
	if err == nil || !strings.Contains(err.Error(), "--stop-at-gtid") {
		t.Fatalf("first run: %v; want the --stop-at-gtid error", err)
	}
	st, ok, err := position.Load(ctx, e.dst.OpenT(t, ""), cfg.Stream)
	if err != nil || !ok {
		t.Fatalf("stream row after the failed run: %v %v", ok, err)
	}
	if st.GTID != e.start {
		t.Errorf("saved position %q after the failed run; want the requested start %q", st.GTID, e.start)
	}

	cfg = e.config(t, 2)
	cfg.StartGTID = "" // from what the first run saved
	cfg.StopAtGTID = gtidPos(t, e.src)
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}
