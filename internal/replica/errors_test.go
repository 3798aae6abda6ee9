package replica

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/wire"
)

// purgeTo purges binlogs before file, waiting for the binlog checkpoint to
// move past them (PURGE silently keeps files still needed for crash
// recovery, which lasts until InnoDB flushes its log, about a second here).
func purgeTo(t *testing.T, srv *sandbox.Server, file string) {
	t.Helper()
	db := srv.OpenT(t, "")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := db.Exec("PURGE BINARY LOGS TO '" + file + "'"); err != nil {
			t.Fatal(err)
		}
		var first string
		var size any
		if err := db.QueryRow("SHOW BINARY LOGS").Scan(&first, &size); err != nil {
			t.Fatal(err)
		}
		if first == file {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("binlogs before %s still there (oldest %s)", file, first)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// After PURGE, a start GTID in a purged file ends the stream with a clear
// 1236 error; the empty set ("from the oldest binlog") still works, from
// the oldest file left.
func TestPurgedStartPosition(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)",
		"FLUSH BINARY LOGS", "INSERT INTO d.t VALUES (2)", "FLUSH BINARY LOGS", "INSERT INTO d.t VALUES (3)")
	purgeTo(t, srv, "binlog.000003")

	cfg := baseConfig(t, srv)
	cfg.Start = StartAtGTID(mustSet(t, "0-1-1"))
	s := openT(t, cfg)
	_, err := newConsumer(t, s).tryNext(30 * time.Second)
	var pe *PositionError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPositionUnavailable) || !wire.IsServerError(err, wire.ErrCodeMasterFatal) {
		t.Fatalf("got %v, want a PositionError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "GTID position '0-1-1'") || !strings.Contains(msg, "purged") {
		t.Errorf("message does not name the position: %s", msg)
	}

	cfg.Start = StartAtGTID(gtid.Set{})
	cfg.NonBlocking = true
	c := newConsumer(t, openT(t, cfg))
	drain(t, c)
	c.checkSequence(5, 5) // only the insert of 3 is left in binlog.000003

	cfg.Start = StartAtFile("binlog.000001", 4)
	_, err = newConsumer(t, openT(t, cfg)).tryNext(30 * time.Second)
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "binlog.000001:4") {
		t.Fatalf("purged file: %v", err)
	}
}

func drain(t *testing.T, c *consumer) {
	t.Helper()
	for {
		_, err := c.tryNext(30 * time.Second)
		if err != nil {
			if !strings.Contains(err.Error(), "EOF") {
				t.Fatal(err)
			}
			return
		}
	}
}

func mustSet(t testing.TB, s string) gtid.Set {
	t.Helper()
	set, err := gtid.ParseSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// Every violated requirement is reported, each naming the variable and how
// to fix it; none of this is retried.
func TestPreflightFailures(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "SET GLOBAL binlog_format = 'MIXED'",
		"CREATE USER 'repl'@'%' IDENTIFIED BY 'pw'", "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%'")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := baseConfig(t, srv)
	// MIXED is accepted (statement-logged DML runs alone), and said.
	st, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("MIXED source refused: %v", err)
	}
	if f := st.Source().BinlogFormat; f != "MIXED" {
		t.Errorf("binlog format %q, want MIXED", f)
	}
	st.Close()
	// MINIMAL row images are accepted too (see TestRowImagePreflight);
	// minimal table metadata is not.
	srv.ExecT(t, "SET GLOBAL binlog_row_image = 'MINIMAL'", "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	_, err = Open(ctx, cfg)
	var pfe *PreflightError
	if !errors.As(err, &pfe) || len(pfe.Problems) != 1 {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"@@binlog_row_metadata is MINIMAL, need FULL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	srv.ExecT(t, "SET GLOBAL binlog_format = 'ROW'", "SET GLOBAL binlog_row_image = 'FULL'", "SET GLOBAL binlog_row_metadata = 'FULL'")

	cfg.ServerID = 1
	if _, err := Open(ctx, cfg); !errors.As(err, &pfe) || !strings.Contains(err.Error(), "server id 1 is the source's own @@server_id") {
		t.Fatalf("server id collision: %v", err)
	}
	cfg.ServerID = 1001
	cfg.Start = StartAtGTID(mustSet(t, "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"))
	if _, err := Open(ctx, cfg); !errors.As(err, &pfe) || !strings.Contains(err.Error(), "is a mysql GTID set, but the source is mariadb") {
		t.Fatalf("flavor mismatch: %v", err)
	}

	cfg.Start = StartAtGTID(gtid.Set{})
	cfg.User, cfg.Password = "repl", "wrong"
	var ae *wire.AuthError
	if _, err := Open(ctx, cfg); !errors.As(err, &ae) || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("wrong password: %v", err)
	}
	cfg.Password = "pw"
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatalf("replication user: %v", err)
	}
	s.Close()
}

func TestConfigValidation(t *testing.T) {
	good := Config{Config: wire.Config{Addr: "127.0.0.1:1"}, ServerID: 7, Start: StartAtGTID(gtid.Set{})}
	cases := map[string]func(*Config){
		"no address":       func(c *Config) { c.Addr = "" },
		"server id 0":      func(c *Config) { c.ServerID = 0 },
		"no start":         func(c *Config) { c.Start = Position{} },
		"offset below 4":   func(c *Config) { c.Start = StartAtFile("binlog.000001", 3) },
		"offset past 4GiB": func(c *Config) { c.Start = StartAtFile("binlog.000001", 1<<32) },
		"tiny heartbeat":   func(c *Config) { c.HeartbeatPeriod = time.Millisecond },
		"backoff reversed": func(c *Config) { c.MinBackoff, c.MaxBackoff = time.Second, time.Millisecond },
		"negative queue":   func(c *Config) { c.QueueBytes = -1 },
	}
	for name, mutate := range cases {
		cfg := good
		mutate(&cfg)
		_, err := Open(context.Background(), cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a ConfigError", name, err)
		}
	}
	cfg, err := good.withDefaults()
	if err != nil || cfg.HeartbeatPeriod != DefaultHeartbeatPeriod || cfg.QueueBytes != DefaultQueueBytes || cfg.Logger == nil {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
}

// Close and cancellation stop a stream promptly, blocked or not.
func TestCloseAndCancel(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d")
	s := openT(t, baseConfig(t, srv))
	c := newConsumer(t, s)
	c.untilGTID(1)
	start := time.Now()
	s.Close()
	if _, err := s.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}

	checkNoLeak(t)
	ctx, cancel := context.WithCancel(context.Background())
	s2, err := Open(ctx, baseConfig(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	go func() { time.Sleep(300 * time.Millisecond); cancel() }()
	for {
		if _, err := s2.Next(context.Background()); err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("after cancel: %v", err)
			}
			break
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stopping took %s", d)
	}
	nextCtx, nextCancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer nextCancel()
	if _, err := s.Next(nextCtx); !errors.Is(err, ErrClosed) {
		t.Errorf("closed stream: %v", err)
	}
}

// A stream started from CurrentPosition sees only what commits later.
func TestCurrentPositionStartsFromNow(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	pos := currentPositionT(t, srv)
	if !pos.GTIDMode || !pos.GTIDs.Equal(binlogPos(t, srv)) || pos.File != "binlog.000001" || pos.Pos < 4 {
		t.Fatalf("current position %+v", pos)
	}
	srv.ExecT(t, "INSERT INTO d.t VALUES (2)")
	cfg := baseConfig(t, srv)
	cfg.Start = pos
	cfg.NonBlocking = true
	c := newConsumer(t, openT(t, cfg))
	drain(t, c)
	c.checkSequence(4, 4)
	info, err := Inspect(context.Background(), Config{Config: wire.Config{Addr: srv.Addr(), User: sourceAccount(t, srv), Password: sandbox.AccountPassword}})
	if err != nil || info.Flavor != gtid.MariaDB || info.ServerID != 1 || !strings.Contains(info.Version, "MariaDB") {
		t.Fatalf("inspect: %+v %v", info, err)
	}
}
