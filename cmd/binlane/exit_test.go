package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

func TestExitCode(t *testing.T) {
	differ := withExitCode(exitDiffer, errors.New("verify: 1 of 1 tables differ"))
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"error", errors.New("target: connection refused"), 2},
		{"differences", differ, 1},
		{"differences, wrapped", fmt.Errorf("demo: %w", differ), 1},
		{"interrupted", fmt.Errorf("verify: %w", context.Canceled), 2},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}

// proc is a binlane process run by a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr awaitBuffer
}

// awaitBuffer is a bytes.Buffer the process's copier and the test share;
// seen is closed once the text has await in it.
type awaitBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	await string
	seen  chan struct{}
}

func (s *awaitBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if s.await != "" && strings.Contains(s.b.String(), s.await) {
		close(s.seen)
		s.await = ""
	}
	return n, err
}

func (s *awaitBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBinlane starts the binary; p.stderr.seen is closed once its stderr
// has await in it (never, if await is empty).
func startBinlane(t *testing.T, ctx context.Context, bin, await string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.CommandContext(ctx, bin, args...)}
	p.stderr.await, p.stderr.seen = await, make(chan struct{})
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// wait returns the exit status.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	err := p.cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("wait: %v", err)
	return -1
}

func (p *proc) output() string { return p.stdout.String() + p.stderr.String() }

// TestExitStatus runs the binary: the status of each command's outcome,
// and no report from an interrupted verify.
func TestExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	// Big enough that verify with small chunks runs for many seconds:
	// it is interrupted in the middle.
	for _, s := range []*sandbox.Server{src, tgt} {
		s.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10))",
			"INSERT INTO app.t VALUES (1, 'a'), (2, 'b')",
			"CREATE DATABASE big", "CREATE TABLE big.t (id INT PRIMARY KEY, v CHAR(32))",
			"INSERT INTO big.t SELECT seq, MD5(seq) FROM big.seq_1_to_200000")
	}
	src.ExecT(t, "CREATE DATABASE only", "CREATE TABLE only.t (id INT PRIMARY KEY)") // not on the target
	tgt.ExecT(t, "CREATE DATABASE diff", "CREATE TABLE diff.t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO diff.t VALUES (1, 'x')")
	src.ExecT(t, "CREATE DATABASE diff", "CREATE TABLE diff.t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO diff.t VALUES (1, 'y')")
	srcURL, tgtURL := binlaneURL(t, src, "app", "big", "only", "diff"), binlaneURL(t, tgt, "app", "big", "only", "diff")
	servers := []string{"--source", srcURL, "--target", tgtURL}
	const unreachable = "mysql://root@127.0.0.1:1/"

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cases := []struct {
		name   string
		args   []string
		await  string         // stderr text after which signal is sent or during runs
		signal syscall.Signal // 0: none
		during func(t *testing.T)
		want   int
		output string // expected in stdout+stderr
		absent string // never in stdout+stderr
	}{
		{name: "verify equal", args: append([]string{"verify", "--databases", "app"}, servers...), want: 0, output: "1 tables, 1 equal, 0 differing"},
		{name: "verify differences", args: append([]string{"verify", "--databases", "app,diff"}, servers...), want: 1,
			output: "verify: 1 of 2 tables differ"},
		{name: "verify interrupted", args: append([]string{"verify", "--databases", "big", "--chunk-rows", "20", "--parallel", "1"}, servers...),
			await: "verify started", signal: syscall.SIGINT, want: 2, output: "verify interrupted", absent: "equal"},
		{name: "verify terminated", args: append([]string{"verify", "--databases", "big", "--chunk-rows", "20", "--parallel", "1", "--json"}, servers...),
			await: "verify started", signal: syscall.SIGTERM, want: 2, output: "no report", absent: "equal"},
		{name: "verify unreachable", args: []string{"verify", "--source", unreachable, "--target", tgtURL}, want: 2, output: "connection refused"},
		{name: "verify missing source", args: []string{"verify", "--target", tgtURL}, want: 2, output: "--source is required"},
		{name: "bad flag", args: append([]string{"verify", "--wokers", "2"}, servers...), want: 2, output: "unknown flag: --wokers (see binlane verify --help)"},
		{name: "bad flag value", args: []string{"replicate", "--workers", "many"}, want: 2, output: "binlane: --workers: not a whole number"},
		{name: "unknown command", args: []string{"verfy"}, want: 2, output: "unknown command"},
		{name: "bad config file", args: []string{"replicate", "--config", "/nonexistent/binlane.yaml"}, want: 2, output: "--config: open"},
		{name: "status unreachable", args: []string{"status", "--target", unreachable}, want: 2, output: "connection refused"},
		{name: "help", args: []string{"verify", "--help"}, want: 0, output: "Exit status: 0 the tables are equal, 1 differences found"},
		{name: "replicate stopped by SIGTERM", args: append([]string{"replicate", "--copy=never", "--databases", "app", "--stream", "exit"}, servers...),
			await: "replicating", signal: syscall.SIGTERM, want: 0},
		{name: "replicate stopped by SIGINT", args: append([]string{"replicate", "--copy=never", "--databases", "app", "--stream", "exit"}, servers...),
			await: "replicating", signal: syscall.SIGINT, want: 0},
		{name: "replicate fatal error", args: append([]string{"replicate", "--copy=never", "--databases", "only", "--stream", "fatal"}, servers...),
			await: "replicating", during: func(t *testing.T) { src.ExecT(t, "INSERT INTO only.t VALUES (1)") }, want: 2, output: "only"},
		{name: "replicate bad start position", args: append([]string{"replicate", "--start-gtid", "garbage"}, servers...), want: 2},
		{name: "binlog dump bad flag", args: []string{"binlog", "dump", "--source", srcURL, "--log-levels", "x"}, want: 2,
			output: "unknown flag: --log-levels"},
		{name: "binlog dump streaming, Ctrl-C", args: []string{"binlog", "dump", "--source", srcURL, "--from-gtid="},
			signal: syscall.SIGINT, want: 0, output: "Format_desc"},
		{name: "binlog dump unreachable", args: []string{"binlog", "dump", "--source", unreachable}, want: 2, output: "connection refused"},
		{name: "binlog dump missing file", args: []string{"binlog", "dump", "--file", "/nonexistent/binlog.000001"}, want: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := startBinlane(t, ctx, bin, c.await, c.args...)
			if c.await != "" {
				select {
				case <-p.stderr.seen:
				case <-time.After(time.Minute):
					t.Fatalf("never saw %q:\n%s", c.await, p.output())
				}
			}
			if c.during != nil {
				c.during(t)
			}
			if c.signal != 0 {
				// In the middle of the work: verify has 10000 chunks to go.
				time.Sleep(time.Second)
				if err := p.cmd.Process.Signal(c.signal); err != nil {
					t.Fatal(err)
				}
			}
			got := p.wait(t)
			out := p.output()
			t.Logf("exit %d; output ends with:\n%s", got, tail(out, 400))
			if got != c.want {
				t.Errorf("exit status %d, want %d\n%s", got, c.want, tail(out, 3000))
			}
			if c.output != "" && !strings.Contains(out, c.output) {
				t.Errorf("output lacks %q:\n%s", c.output, tail(out, 3000))
			}
			if c.absent != "" && strings.Contains(out, c.absent) {
				t.Errorf("output has %q:\n%s", c.absent, tail(out, 3000))
			}
		})
	}
	os.Remove(bin)
}
