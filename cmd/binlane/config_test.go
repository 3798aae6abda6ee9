package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
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

// TestConfigFile reads a config file into the flags of `replicate` the
// way the command does: after the command line was parsed, so flags win.
func TestConfigFile(t *testing.T) {
	file := configFile(t, `# a comment, then blank lines

source: mysql://repl@src:3306/
target = "mysql://binlane@dst:3306/"
workers: 6
parallel-mode: commit-order
databases: app, shop
databases: crm
exclude: app.audit
heartbeat: 2s
binlog-applied: false
`)
	cases := []struct {
		name string
		args []string
		want map[string]string // flag -> value after reading the file
	}{
		{"file only", nil, map[string]string{
			"source": "mysql://repl@src:3306/", "target": "mysql://binlane@dst:3306/", "workers": "6",
			"parallel-mode": "commit-order", "databases": "[app,shop,crm]", "exclude": "[app.audit]",
			"heartbeat": "2s", "binlog-applied": "false", "max-batch": strconv.Itoa(defaultMaxBatch), // untouched default
		}},
		{"flags win", []string{"--workers", "2", "--databases", "only", "--target", "mysql://other@x:1/", "--binlog-applied=true"},
			map[string]string{
				"workers": "2", "databases": "[only]", "target": "mysql://other@x:1/", "binlog-applied": "true",
				"source": "mysql://repl@src:3306/", "parallel-mode": "commit-order",
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := newReplicateCmd()
			if err := cmd.ParseFlags(append(c.args, "--config", file)); err != nil {
				t.Fatal(err)
			}
			if err := applyConfigFile(cmd, file); err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				got := cmd.Flags().Lookup(name).Value.String()
				if name == "databases" {
					// As the rules read the list: split at commas, trimmed.
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

func TestConfigFileErrors(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    string
	}{
		{"unknown option", "workers: 2\nworkerz: 3\n", `binlane.conf:2: unknown option "workerz"`},
		{"config inside config", "config: other.conf\n", `binlane.conf:1: unknown option "config"`},
		{"no separator", "# ok\nworkers 2\n", "binlane.conf:2: want name: value"},
		{"bad value", "workers: many\n", "binlane.conf:1: workers: "},
		{"bad duration", "heartbeat: soon\n", "binlane.conf:1: heartbeat: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := newReplicateCmd()
			err := applyConfigFile(cmd, configFile(t, c.content))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if err := applyConfigFile(newReplicateCmd(), filepath.Join(t.TempDir(), "absent.conf")); err == nil ||
		!strings.HasPrefix(err.Error(), "--config: ") {
		t.Errorf("missing file: %v", err)
	}
	var none *cobra.Command
	if err := applyConfigFile(none, ""); err != nil {
		t.Errorf("no --config: %v", err)
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
		{"zero workers", []string{"--source", src, "--target", dst, "--workers", "0"}, "--workers and --max-batch must be at least 1"},
		{"zero batch", []string{"--source", src, "--target", dst, "--max-batch", "0"}, "--workers and --max-batch must be at least 1"},
		{"bad log level", []string{"--source", src, "--target", dst, "--log-level", "loud"}, "--log-level: "},
		{"bad log format", []string{"--source", src, "--target", dst, "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{"password file missing", []string{"--source", src, "--target", dst, "--source-password-file", "/nonexistent/pw"}, "--source: "},
		{"unknown flag", []string{"--source", src, "--target", dst, "--wokers", "2"}, "unknown flag: --wokers"},
		{"positional argument", []string{"--source", src, "--target", dst, "extra"}, "unknown command"},
		{"config file value", []string{"--config", file}, `--parallel-mode "fastest"`},
		{"config file overridden", []string{"--config", file, "--parallel-mode", "serial", "--workers", "-1"}, "--workers and --max-batch"},
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
