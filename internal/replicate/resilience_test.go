package replicate

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/streamstatus"
)

// cutter forwards TCP connections to a server; the first connection that
// carries more than cutAfter bytes from the server is cut there (once).
type cutter struct {
	ln       net.Listener
	target   string
	cutAfter int64
	cut      atomic.Bool
	mu       sync.Mutex
	conns    []net.Conn
}

func startCutter(t *testing.T, target string, cutAfter int64) *cutter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, target: target, cutAfter: cutAfter}
	go c.accept()
	t.Cleanup(func() {
		ln.Close()
		c.mu.Lock()
		for _, x := range c.conns {
			x.Close()
		}
		c.mu.Unlock()
	})
	return c
}

func (c *cutter) accept() {
	for {
		down, err := c.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", c.target)
		if err != nil {
			down.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, up, down)
		c.mu.Unlock()
		go func() { io.Copy(up, down); up.Close() }()
		go func() {
			var n int64
			buf := make([]byte, 32<<10)
			for {
				k, err := up.Read(buf)
				if k > 0 {
					n += int64(k)
					if n > c.cutAfter && c.cut.CompareAndSwap(false, true) {
						down.Close()
						up.Close()
						return
					}
					if _, werr := down.Write(buf[:k]); werr != nil {
						return
					}
				}
				if err != nil {
					down.Close()
					return
				}
			}
		}()
	}
}

// TestSourceLostMidStreamedTransaction: the source connection breaks in the
// middle of a transaction too large to hold, whose first parts the applier
// already wrote. The stream must roll it back and resume from the saved
// position like any other reconnect (it once stopped for good).
func TestSourceLostMidStreamedTransaction(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "st")
	e.src.ExecT(t, "CREATE DATABASE st", "CREATE TABLE st.t (id INT PRIMARY KEY, pad CHAR(200))")
	e.dst.ExecT(t, "CREATE DATABASE st", "CREATE TABLE st.t (id INT PRIMARY KEY, pad CHAR(200))")
	start := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO st.t VALUES (0, 'before')",
		"INSERT INTO st.t SELECT seq, REPEAT('x', 200) FROM st.seq_1_to_60000", // ~13 MB
		"INSERT INTO st.t VALUES (-1, 'after')")
	end := gtidPos(t, e.src)
	// Cut the replication connection 6 MB in: inside the big transaction.
	proxy := startCutter(t, e.src.Addr(), 6<<20)
	err, logs := e.runStream(t, "st", start, end, func(c *Config) {
		c.MaxTxnBytes = 1 << 20
		src := e.srcDSN
		host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
		src.Host = host
		src.Port = atoiT(t, port)
		c.Source = src
	})
	if err != nil {
		t.Fatal(err)
	}
	if !proxy.cut.Load() || !strings.Contains(logs, "broke in the middle of a transaction") {
		t.Fatalf("the test did not cut the connection inside the streamed transaction:\n%s", logs)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "st")
}

func atoiT(t *testing.T, s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestFirstConnectionFailsFast: a mistyped or unreachable host at the very
// first start is an error after a short, bounded try (it once retried
// forever, backing off to 30 s); once a stream has run, losing a
// connection is retried without bound.
func TestFirstConnectionFailsFast(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		name string
		bad  func(c *Config)
		want string
	}{
		{"source host", func(c *Config) { c.Source.Host = "nonexistent.invalid" }, "nonexistent.invalid"},
		{"target port", func(c *Config) { c.Target.Port = 1 }, "connection refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			began := time.Now()
			obs := &Observer{}
			err, _ := e.runStream(t, "first", e.start, "", func(cfg *Config) { c.bad(cfg); cfg.Observer = obs })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "giving up after 3 attempts") {
				t.Fatalf("got %v", err)
			}
			// The status page shows it.
			if st := obs.Status(); st.State != streamstatus.StateError || !strings.Contains(st.LastError, "giving up after 3 attempts") {
				t.Errorf("observer: %s %q", st.State, st.LastError)
			}
			if d := time.Since(began); d > 20*time.Second {
				t.Errorf("took %s to give up", d)
			}
		})
	}
}

// TestLagWhileSourceStalls: lag is the age of what the target has not
// applied. Caught up, it is 0; with the source gone silent (no events, no
// heartbeats), it grows instead of reading 0 (it once read 0 whenever
// nothing was in flight).
func TestLagWhileSourceStalls(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "lag")
	e.src.ExecT(t, "CREATE DATABASE lag", "CREATE TABLE lag.t (id INT PRIMARY KEY)")
	e.dst.ExecT(t, "CREATE DATABASE lag", "CREATE TABLE lag.t (id INT PRIMARY KEY)")
	proxy := startCutter(t, e.src.Addr(), 1<<40) // forwards; frozen below by closing its listener
	cfg := e.config(t, 2)
	host, port, _ := net.SplitHostPort(proxy.ln.Addr().String())
	cfg.Source = dsn.DSN{User: e.srcDSN.User, Password: e.srcDSN.Password, Host: host, Port: atoiT(t, port), TLS: e.srcDSN.TLS}
	cfg.Stream, cfg.Rules, cfg.StartGTID, cfg.HeartbeatPeriod = "lag", mustRules(t, "lag"), gtidPos(t, e.src), 300*time.Millisecond
	obs := &Observer{}
	cfg.Observer = obs
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	e.src.ExecT(t, "INSERT INTO lag.t VALUES (1)")
	e.waitStream(t, "lag", gtidPos(t, e.src))
	time.Sleep(time.Second) // heartbeats arrive: caught up
	if r, _ := obs.Read(); r.Lag != 0 {
		t.Errorf("caught up, lag %s; want 0", r.Lag)
	}
	// The source goes silent: stop forwarding anything (and refuse
	// reconnects).
	e.src.Kill()
	time.Sleep(3 * time.Second)
	r1, _ := obs.Read()
	time.Sleep(time.Second)
	r2, _ := obs.Read()
	if r1.Lag < time.Second || r2.Lag <= r1.Lag {
		t.Errorf("source silent: lag %s then %s; want it growing", r1.Lag, r2.Lag)
	}
	cancel()
	<-done
}
