package throttle

import (
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestThrottleFailsClosed runs the throttle against a real target and a
// real replica of it, watched by an account with only the privileges the
// README documents: lag read from the replication status and from a
// pt-heartbeat table holds work while over the limit, and every limit that
// cannot be read (replication stopped, replica down, Threads_running
// unreadable, no heartbeat) holds it too and says why.
func TestThrottleFailsClosed(t *testing.T) {
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	rep := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, ServerID: 3, Name: "replica"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tgt.ExecT(t, "CREATE DATABASE hb")
	rep.ExecT(t,
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', MASTER_USE_GTID=slave_pos", tgt.Port),
		"START SLAVE",
		"SET SESSION sql_log_bin = 0", // the replica's own writes would clash with the target's GTIDs
		"CREATE USER binlane_watch@'%' IDENTIFIED BY 'w4tch'",
		"GRANT SLAVE MONITOR ON *.* TO binlane_watch@'%'")
	watch := openURL(t, fmt.Sprintf("binlane_watch:w4tch@tcp(127.0.0.1:%d)/", rep.Port))
	replicas := []Replica{{Name: "rep1", DB: watch}}

	limits := NewLimits(0, 5*time.Second)
	th := New(Config{Source: tgt.OpenT(t, ""), Replicas: replicas, Limits: limits, Every: 50 * time.Millisecond})
	waitReason(t, ctx, th, func(r string) bool { return r == "" }) // replicating: lag 0

	rep.ExecT(t, "STOP SLAVE SQL_THREAD")
	why := waitReason(t, ctx, th, func(r string) bool { return r != "" })
	if !strings.Contains(why, "replica rep1: lag unreadable") || !strings.Contains(why, "NULL") {
		t.Errorf("replication stopped: %q", why)
	}
	assertHeld(t, th)
	rep.ExecT(t, "START SLAVE SQL_THREAD")
	waitReason(t, ctx, th, func(r string) bool { return r == "" })

	// A replica that cannot be reached, a source whose Threads_running
	// cannot be read, and a source busier than the limit.
	down := openURL(t, "root@tcp(127.0.0.1:1)/?timeout=1s")
	for _, c := range []struct {
		name    string
		th      *Throttle
		limits  [2]int
		wantWhy string
	}{
		{"replica down", New(Config{Replicas: []Replica{{Name: "gone", DB: down}}, Limits: NewLimits(0, time.Second)}), [2]int{}, "replica gone: lag unreadable"},
		{"source down", New(Config{Source: down, Limits: NewLimits(5, 0)}), [2]int{}, "source Threads_running unreadable (limit 5)"},
		{"no privilege", New(Config{Replicas: []Replica{{Name: "r", DB: openURL(t, fmt.Sprintf("binlane_watch:w4tch@tcp(127.0.0.1:%d)/", rep.Port))}},
			Limits: NewLimits(0, time.Second)}), [2]int{}, ""},
	} {
		if c.name == "no privilege" {
			rep.ExecT(t, "SET SESSION sql_log_bin = 0", "REVOKE SLAVE MONITOR ON *.* FROM binlane_watch@'%'")
		}
		why := c.th.Check(ctx)
		if why == "" || !strings.Contains(why, c.wantWhy) {
			t.Errorf("%s: reason %q, want one containing %q", c.name, why, c.wantWhy)
		}
		assertHeld(t, c.th)
	}
	busy := tgt.OpenT(t, "")
	go busy.ExecContext(ctx, "SELECT SLEEP(30)")
	go busy.ExecContext(ctx, "SELECT SLEEP(30)")
	th2 := New(Config{Source: tgt.OpenT(t, ""), Limits: NewLimits(1, 0)})
	if why := waitReason(t, ctx, th2, func(r string) bool { return r != "" }); !strings.Contains(why, "source Threads_running") {
		t.Errorf("busy source: %q", why)
	}
	th2.Limits().Set(0, 0) // what SIGHUP does when the limit is taken out
	if err := th2.Wait(ctx); err != nil || th2.Reason() != "" {
		t.Errorf("limit lifted: %v, reason %q", err, th2.Reason())
	}

	// pt-heartbeat on the target, read on the replica.
	rep.ExecT(t, "SET SESSION sql_log_bin = 0", "GRANT SELECT ON hb.* TO binlane_watch@'%'")
	hb := exec.CommandContext(ctx, "pt-heartbeat", "--update", "--utc", "--create-table", "--interval", "0.2",
		"--database", "hb", "h=127.0.0.1,P="+strconv.Itoa(tgt.Port)+",u=root")
	hb.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := hb.Start(); err != nil {
		t.Fatal(err)
	}
	defer hb.Process.Kill()
	hbTh := New(Config{Replicas: replicas, HeartbeatTable: "hb.heartbeat", Limits: NewLimits(0, 2*time.Second), Every: 50 * time.Millisecond})
	waitReason(t, ctx, hbTh, func(r string) bool { return r == "" })
	hb.Process.Kill()
	hb.Wait()
	why = waitReason(t, ctx, hbTh, func(r string) bool { return r != "" })
	if !strings.Contains(why, "replica rep1 is") || !strings.Contains(why, "behind (> 2s)") {
		t.Errorf("heartbeat stopped: %q", why)
	}
	tgt.ExecT(t, "TRUNCATE hb.heartbeat")
	if why := waitReason(t, ctx, hbTh, func(r string) bool { return strings.Contains(r, "no heartbeat") }); !strings.Contains(why, "unreadable") {
		t.Errorf("empty heartbeat table: %q", why)
	}
}

func openURL(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// waitReason checks until the reason satisfies ok, and returns it.
func waitReason(t *testing.T, ctx context.Context, th *Throttle, ok func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		why := th.Check(ctx)
		if ok(why) {
			return why
		}
		if time.Now().After(deadline) {
			t.Fatalf("throttle reason stayed %q", why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// assertHeld checks that Wait does not let work go on.
func assertHeld(t *testing.T, th *Throttle) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	if err := th.Wait(ctx); err == nil {
		t.Errorf("Wait let work go on (reason %q)", th.Reason())
	}
}
