package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/wire"
)

// baseConfig streams from srv with settings suited to tests, as binlane's
// least-privilege source account.
func baseConfig(t testing.TB, srv *sandbox.Server) Config {
	return Config{
		Config:          wire.Config{Addr: srv.Addr(), User: sourceAccount(t, srv), Password: sandbox.AccountPassword},
		ServerID:        1001,
		Start:           StartAtGTID(gtid.Set{}),
		HeartbeatPeriod: time.Second,
		MinBackoff:      20 * time.Millisecond, MaxBackoff: 300 * time.Millisecond,
		Logger: testutil.LoggerAt(t, slog.LevelDebug),
	}
}

// sourceAccount creates binlane's source account on srv (with the
// documented grants) and returns its name.
func sourceAccount(t testing.TB, srv *sandbox.Server) string {
	t.Helper()
	if _, err := srv.GrantBinlane(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	return sandbox.SourceUser
}

func openT(t testing.TB, cfg Config) *Stream {
	t.Helper()
	checkNoLeak(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// consumer reads a stream the way an applier would: it keeps the GTIDs of
// complete transactions and drops partial ones on *Restart.
type consumer struct {
	t          testing.TB
	s          *Stream
	tr         *Tracker
	gtids      []gtid.GTID
	restarts   []*binlog.Restart
	partial    int // restarts that arrived inside a transaction
	heartbeats []*binlog.HeartbeatEvent
	rotates    int // real rotates
	events     int
}

func newConsumer(t testing.TB, s *Stream) *consumer {
	return &consumer{t: t, s: s, tr: NewTracker(s.Position())}
}

// next reads one event, failing the test on error.
func (c *consumer) next() binlog.Message {
	c.t.Helper()
	ev, err := c.tryNext(30 * time.Second)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			buf := make([]byte, 1<<20)
			c.t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
		}
		c.t.Fatalf("after %d events (%d GTIDs): %v", c.events, len(c.gtids), err)
	}
	return ev
}

func (c *consumer) tryNext(wait time.Duration) (binlog.Message, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	m, err := c.s.Next(ctx)
	if err != nil {
		return m, err
	}
	c.events++
	if m.Restart != nil {
		c.restarts = append(c.restarts, m.Restart)
		if c.tr.InGroup() {
			c.partial++
		}
		c.tr.Discard()
		return m, nil
	}
	ev := m.Event
	switch d := ev.Data.(type) {
	case *binlog.HeartbeatEvent:
		c.heartbeats = append(c.heartbeats, d)
	case *binlog.RotateEvent:
		if !d.Fake {
			c.rotates++
		}
	}
	if c.tr.Observe(ev) && !c.tr.LastGTID().IsZero() {
		c.gtids = append(c.gtids, c.tr.LastGTID())
	}
	return m, nil
}

// until reads events until cond holds.
func (c *consumer) until(what string, cond func(m binlog.Message) bool) {
	c.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if cond(c.next()) {
			return
		}
	}
	c.t.Fatalf("timed out waiting for %s", what)
}

// untilRows reads until the first rows event.
func (c *consumer) untilRows() {
	c.until("a rows event", func(m binlog.Message) bool {
		if m.Event == nil {
			return false
		}
		_, ok := m.Event.Data.(*binlog.RowsEvent)
		return ok
	})
}

// untilGTID reads until the transaction with sequence number seq completed.
func (c *consumer) untilGTID(seq uint64) {
	c.t.Helper()
	c.until(fmt.Sprintf("GTID seq %d", seq), func(binlog.Message) bool {
		return len(c.gtids) > 0 && c.gtids[len(c.gtids)-1].Seq >= seq
	})
}

// checkSequence asserts the GTIDs seen are exactly from..to, each once and
// in order (domain 0, as the sandbox writes them).
func (c *consumer) checkSequence(from, to uint64) {
	c.t.Helper()
	if uint64(len(c.gtids)) != to-from+1 {
		c.t.Fatalf("saw %d transactions, want %d (%d..%d): %v", len(c.gtids), to-from+1, from, to, summarize(c.gtids))
	}
	for i, g := range c.gtids {
		if g.Seq != from+uint64(i) || g.Domain != 0 {
			c.t.Fatalf("transaction %d is %s, want seq %d: %v", i, g, from+uint64(i), summarize(c.gtids))
		}
	}
}

func summarize(gs []gtid.GTID) string {
	if len(gs) <= 20 {
		return fmt.Sprint(gs)
	}
	return fmt.Sprint(gs[:10], " ... ", gs[len(gs)-10:])
}

// binlogPos returns the source's @@gtid_binlog_pos.
func binlogPos(t testing.TB, srv *sandbox.Server) gtid.Set {
	t.Helper()
	db := srv.OpenT(t, "")
	var s string
	if err := db.QueryRow("SELECT @@gtid_binlog_pos").Scan(&s); err != nil {
		t.Fatal(err)
	}
	set, err := gtid.ParseSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func lastSeq(t testing.TB, srv *sandbox.Server) uint64 {
	g, _ := binlogPos(t, srv).Domain(0)
	return g.Seq
}

// checkNoLeak fails the test if goroutines of this package's streams
// outlive it.
func checkNoLeak(t testing.TB) {
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			if !strings.Contains(stacks, "replica.(*Stream).run") {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("stream goroutine leaked:\n%s", stacks)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// dumpThreads counts the source's dump threads.
func dumpThreads(t testing.TB, srv *sandbox.Server) int {
	t.Helper()
	var n int
	if err := srv.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// noDumpWithin fails the test if the source still has a dump thread
// after d (that of what, just closed).
func noDumpWithin(t testing.TB, srv *sandbox.Server, d time.Duration, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for dumpThreads(t, srv) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the source's dump thread outlived %s by %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dumpThreadID returns the connection id of the source's only dump thread.
func dumpThreadID(t testing.TB, srv *sandbox.Server) int64 {
	t.Helper()
	db := srv.OpenT(t, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		var id int64
		err := db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&id)
		if err == nil {
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no dump thread: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isEOFOrNil(err error) bool { return err == nil || errors.Is(err, context.DeadlineExceeded) }
