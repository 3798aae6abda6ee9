package replicate

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/throttle"
	"github.com/binlane/binlane/internal/workload"
)

// TestApplyThrottleFailsClosed holds the applier, not only the copy: with
// a replica lag limit on a replica that cannot be reached, no transaction
// reaches the target and the status says why; once the limit is lifted
// (SIGHUP) the stream catches up and the tables are equal.
func TestApplyThrottleFailsClosed(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.workload(t, ctx, workload.Config{Seed: 3, Sessions: 2, Transactions: 200})
	down, err := sql.Open("mysql", "root@tcp(127.0.0.1:1)/?timeout=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	limits := throttle.NewLimits(0, 10*time.Second)
	cfg := e.config(t, 2)
	cfg.Throttle = throttle.New(throttle.Config{Replicas: []throttle.Replica{{Name: "replica-1", DB: down}}, Limits: limits})
	obs := &Observer{}
	cfg.Observer = obs
	stop := runInBackground(ctx, cfg)

	deadline := time.Now().Add(30 * time.Second)
	for obs.Status().Throttled == "" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	why := obs.Status().Throttled
	if !strings.Contains(why, "replica replica-1: lag unreadable") {
		t.Fatalf("the applier was not held (reason %q)", why)
	}
	time.Sleep(2 * time.Second)
	if n := obs.Status().Snapshot.Committed; n > 0 {
		t.Errorf("%d transactions committed while held", n)
	}
	var tables int
	e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = ?", workload.Schema).Scan(&tables)
	if tables > 0 {
		t.Errorf("the target got %d tables while held", tables)
	}
	limits.Set(0, 0) // what SIGHUP does with a config file without the limit
	e.waitCaughtUp(t, time.Minute)
	if why := obs.Status().Throttled; why != "" {
		t.Errorf("still held after the limit was lifted: %q", why)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	e.verifyEqual(t)
}
