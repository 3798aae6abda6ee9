package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/filter"
)

// runReplicateCmd runs `binlane replicate args...` in-process.
func runReplicateCmd(ctx context.Context, args ...string) (string, error) {
	cmd := newReplicateCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

func configFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "binlane.conf")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestConfigFile reads options the way the commands do (PreRunE, after
// the command line was parsed) from a YAML file and BINLANE_* variables.
func TestConfigFile(t *testing.T) {
	file := configFile(t, `# a comment, then blank lines

source: mysql://repl@src:3306/   # the primary
target: "mysql://binlane@dst:3306/"
workers: 6
parallel-mode: commit-order
databases: app, shop
databases: [crm]
exclude: app.audit
heartbeat: 2s
binlog-applied: false
`)
	cases := []struct {
		name string
		cmd  func() *cobra.Command
		args []string
		env  map[string]string
		want map[string]string // flag -> value after reading the file
	}{
		{"file only", newReplicateCmd, nil, nil, map[string]string{
			"source": "mysql://repl@src:3306/", "target": "mysql://binlane@dst:3306/", "workers": "6",
			"parallel-mode": "commit-order", "databases": "[app,shop,crm]", "exclude": "[app.audit]",
			"heartbeat": "2s", "binlog-applied": "false", "max-batch": "0", // untouched default (maxBatchFor derives it)
		}},
		{"flags win", newReplicateCmd, []string{"--workers", "2", "--databases", "only", "--target", "mysql://other@x:1/", "--binlog-applied=true"},
			nil, map[string]string{
				"workers": "2", "databases": "[only]", "target": "mysql://other@x:1/", "binlog-applied": "true",
				"source": "mysql://repl@src:3306/", "parallel-mode": "commit-order",
			}},
		{"environment over file, flags over environment", newReplicateCmd, []string{"--max-batch", "3"},
			map[string]string{"BINLANE_WORKERS": "8", "BINLANE_MAX_BATCH": "9", "BINLANE_SOURCE": "mysql://env@src/",
				"BINLANE_SOURCE_PASSWORD": "not-an-option"},
			map[string]string{"workers": "8", "max-batch": "3", "source": "mysql://env@src/", "parallel-mode": "commit-order"}},
		{"verify", newVerifyCmd, nil, map[string]string{"BINLANE_CHUNK_ROWS": "50"}, nil},
		{"status", newStatusCmd, nil, map[string]string{"BINLANE_TARGET": "mysql://env@dst/"}, map[string]string{"target": "mysql://env@dst/"}},
	}
	verifyFile := configFile(t, "source: mysql://a@s/\ntarget: mysql://b@t/\ndatabases: [shop]\njson: true\n")
	cases[3].args = []string{"--config", verifyFile}
	cases[3].want = map[string]string{"source": "mysql://a@s/", "databases": "[shop]", "json": "true", "chunk-rows": "50"}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			cmd := c.cmd()
			args := c.args
			if c.name != "verify" && c.name != "status" {
				args = append(args, "--config", file)
			}
			if err := cmd.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			if err := cmd.PreRunE(cmd, nil); err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				got := cmd.Flags().Lookup(name).Value.String()
				if name == "databases" {
					// As the rules read the list.
					list, _ := cmd.Flags().GetStringSlice(name)
					rules, err := filter.New(list, nil, nil)
					if err != nil {
						t.Fatal(err)
					}
					got = "[" + strings.Join(rules.Databases, ",") + "]"
				}
				if got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestConfigFileErrors: the file's mistakes stop the command with the file
// and line named (internal/config tests every rule; these are the ones a
// user of the old format meets).
func TestConfigFileErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    string
	}{
		{"unknown option", "databases: shop  # main db\nworkerz: 3\n", `binlane.conf:2: unknown option "workerz"`},
		{"old name = value line", "workers: 2\ntarget = \"mysql://binlane@dst:3306/\"\n", `binlane.conf:2: "target = …" is no longer read`},
		{"config inside config", "config: other.conf\n", `binlane.conf:1: unknown option "config"`},
		{"no separator", "# ok\nworkers 2\n", "binlane.conf:2: want one \"name: value\" per line"},
		{"bad value", "workers: many\n", "binlane.conf:1: workers: not a whole number"},
		{"bad duration", "heartbeat: soon\n", "binlane.conf:1: heartbeat: not a duration"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := newReplicateCmd()
			if err := cmd.ParseFlags([]string{"--config", configFile(t, c.content)}); err != nil {
				t.Fatal(err)
			}
			err := cmd.PreRunE(cmd, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	cmd := newReplicateCmd()
	if err := cmd.ParseFlags([]string{"--config", filepath.Join(t.TempDir(), "absent.conf")}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.PreRunE(cmd, nil); err == nil || !strings.HasPrefix(err.Error(), "--config: ") {
		t.Errorf("missing file: %v", err)
	}
}

// TestReplicateFlagValidation runs the command with options it must refuse
// before connecting anywhere (the addresses lead nowhere).
func TestReplicateFlagValidation(t *testing.T) {
	const src, dst = "mysql://root@127.0.0.1:1/", "mysql://root@127.0.0.1:2/"
	file := configFile(t, "source: "+src+"\ntarget: "+dst+"\nparallel-mode: fastest\n")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"--target", dst}, "--source is required"},
		{"no target", []string{"--source", src}, "--target is required"},
		{"bad source address", []string{"--source", "mysql://root@host:notaport/", "--target", dst}, "--source: "},
		{"bad parallel mode", []string{"--source", src, "--target", dst, "--parallel-mode", "fast"}, `--parallel-mode "fast": want writeset, commit-order or serial`},
		{"zero threads", []string{"--source", src, "--target", dst, "--threads", "0"}, "--threads must be at least 1"},
		{"negative batch", []string{"--source", src, "--target", dst, "--max-batch", "-1"}, "--max-batch at least 0"},
		{"bad log level", []string{"--source", src, "--target", dst, "--log-level", "loud"}, "--log-level: "},
		{"bad log format", []string{"--source", src, "--target", dst, "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{"password file missing", []string{"--source", src, "--target", dst, "--source-password-file", "/nonexistent/pw"}, "--source: "},
		{"unknown flag", []string{"--source", src, "--target", dst, "--wokers", "2"}, "unknown flag: --wokers"},
		{"positional argument", []string{"--source", src, "--target", dst, "extra"}, "unknown command"},
		{"config file value", []string{"--config", file}, `--parallel-mode "fastest"`},
		{"config file overridden", []string{"--config", file, "--parallel-mode", "serial", "--workers", "-1"}, "--threads must be at least 1"},
		{"start position not one", []string{"--source", src, "--target", dst, "--start-gtid", "garbage"},
			`--start-gtid: gtid "garbage": want domain-server-sequence; a position is MariaDB's domain-server-sequence`},
		{"stop position tagged", []string{"--source", src, "--target", dst, "--stop-at-gtid", "3E11FA47-71CA-11E1-9E33-C80AA9429562:tag1:1-5"},
			"--stop-at-gtid: tagged GTIDs (MySQL 8.3+) are not supported"},
		{"skip GTID not one", []string{"--source", src, "--target", dst, "--skip-gtid", "0-1"}, "--skip-gtid: "},
		{"config file unknown key", []string{"--config", configFile(t, "sources: x\n")}, `unknown option "sources"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			out, err := runReplicateCmd(ctx, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q\noutput: %s", err, c.want, out)
			}
		})
	}
}

// TestOptionsShared: the same option names across commands, old names as
// aliases that still work (and lose to the command line as the new ones
// do), sizes with units and durations with a bare number of seconds.
func TestOptionsShared(t *testing.T) {
	file := configFile(t, "workers: 6\ncopy-workers: 3\nmax-memory: 512MiB\nlock-wait-timeout: 50\nqueue-bytes: 64M\n")
	cmd := newReplicateCmd()
	cmd.SetErr(io.Discard)
	if err := cmd.ParseFlags([]string{"--config", file, "--workers", "2", "--window-bytes", "1GiB", "--health-max-lag", "1m"}); err != nil {
		t.Fatal(err)
	}
	if err := cmd.PreRunE(cmd, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"threads": "2", "copy-threads": "3", "max-memory": "512MiB", "lock-wait-timeout": "50s",
		"queue-bytes": "64MiB", "window-bytes": "1GiB", "ready-max-lag": "1m0s", "max-batch-bytes": "4MiB"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s = %s, want %s", name, got, want)
		}
	}
	for _, c := range []struct{ file, want string }{
		{"max-memory: lots\n", "binlane.conf:1: max-memory: want a size such as 512MiB"},
		{"lock-wait-timeout: soon\n", "binlane.conf:1: lock-wait-timeout: want a duration"},
	} {
		cmd := newReplicateCmd()
		if err := cmd.ParseFlags([]string{"--config", configFile(t, c.file)}); err != nil {
			t.Fatal(err)
		}
		if err := cmd.PreRunE(cmd, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.file, err, c.want)
		}
	}
	for in, want := range map[string]int64{"4194304": 4 << 20, "64K": 64 << 10, "64 KiB": 64 << 10, "2g": 2 << 30, "1TB": 1 << 40, "0": 0} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5M", "12Q", "99999999T"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
	// Every command that names a server has the same options for it.
	root := newRootCmd()
	for _, name := range []string{"replicate", "copy", "verify", "status", "analyze", "binlog dump"} {
		c, _, err := root.Find(strings.Fields(name))
		if err != nil {
			t.Fatal(err)
		}
		for _, opt := range []string{"config", "log-level", "log-format", "defaults-file", "defaults-extra-file", "no-defaults"} {
			if c.Flags().Lookup(opt) == nil {
				t.Errorf("%s has no --%s", name, opt)
			}
		}
	}
	for _, name := range []string{"replicate", "copy", "verify"} {
		c, _, _ := root.Find([]string{name})
		for _, opt := range []string{"threads", "max-threads-running", "max-replica-lag", "target-replica", "heartbeat-table",
			"source-password-file", "target-password-file", "source-ssl-mode", "target-ssl-mode"} {
			if c.Flags().Lookup(opt) == nil {
				t.Errorf("%s has no --%s", name, opt)
			}
		}
	}
	a, _, _ := root.Find([]string{"analyze"})
	for _, opt := range []string{"start-gtid", "stop-at-gtid", "source-password-file", "source-ssl-mode"} {
		if a.Flags().Lookup(opt) == nil {
			t.Errorf("analyze has no --%s", opt)
		}
	}
}

// TestHeapLimit: the default soft heap limit covers what the byte bounds
// let the process hold with many threads (under 384 MiB, 16 threads on
// 100,000-row transactions kept the collector running nonstop); a limit
// the user set stays, and 0 means none.
func TestHeapLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		threads, maxMemory int
		explicit           bool
		want               int
	}{
		{threads: 4, maxMemory: 384 * mib, want: 384 * mib},
		{threads: 8, maxMemory: 384 * mib, want: 416 * mib},
		{threads: 16, maxMemory: 384 * mib, want: 544 * mib},
		{threads: 16, maxMemory: 384 * mib, explicit: true, want: 384 * mib},
		{threads: 16, maxMemory: 0, explicit: true, want: 0},
		{threads: 2, maxMemory: 1024 * mib, want: 1024 * mib},
	} {
		f := replicateFlags{threads: tc.threads, maxMemory: tc.maxMemory, windowBytes: 128 * mib, queueBytes: 32 * mib}
		got, need := heapLimit(&f, tc.explicit)
		if got != tc.want {
			t.Errorf("%d threads, max-memory %d MiB (explicit %v): limit %d MiB, want %d", tc.threads,
				tc.maxMemory/mib, tc.explicit, got/mib, tc.want/mib)
		}
		if tc.maxMemory > 0 && !tc.explicit && got < need {
			t.Errorf("%d threads: default limit %d MiB below the bounds' %d MiB", tc.threads, got/mib, need/mib)
		}
	}
}

// TestTuneMemoryGOGC: binlane sets its own GOGC for a stream, unless the
// environment gives one (as GOMEMLIMIT, which it also leaves alone).
func TestTuneMemoryGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	f := replicateFlags{threads: 1, windowBytes: 1 << 20, queueBytes: 1 << 20}
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		env  string
		want int
	}{{"", gcPercent}, {"50", 100}} {
		t.Setenv("GOGC", tc.env)
		t.Setenv("GOMEMLIMIT", "1GiB") // the soft limit is not under test
		debug.SetGCPercent(100)
		tuneMemory(&f, false, log)
		if got := debug.SetGCPercent(100); got != tc.want {
			t.Errorf("GOGC=%q: binlane set GC percent %d, want %d", tc.env, got, tc.want)
		}
	}
}

// TestMaxBatchFor: --max-batch as set wins; unset, every thread count
// merges 256 source transactions per target commit.
func TestMaxBatchFor(t *testing.T) {
	for _, tc := range []struct{ set, want int }{{0, 256}, {1, 1}, {64, 64}, {512, 512}} {
		if got := maxBatchFor(tc.set); got != tc.want {
			t.Errorf("maxBatchFor(%d) = %d, want %d", tc.set, got, tc.want)
		}
	}
}
