package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestFlagValueErrors: a value an option cannot take is said in words that
// name the option, whatever its type and command, not in pflag's and
// strconv's ("invalid argument ... strconv.ParseInt: parsing ...: invalid
// syntax"); an old option name prints a notice that does not read like
// the error that ends the command. No server is reached: the addresses
// lead nowhere.
func TestFlagValueErrors(t *testing.T) {
	const nowhere = "mysql://u@127.0.0.1:1/"
	servers := []string{"--source", nowhere, "--target", nowhere}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"int", append([]string{"replicate", "--threads", "many"}, servers...), "binlane: --threads: not a whole number (see binlane replicate --help)"},
		{"int out of range", append([]string{"copy", "--max-batch", "99999999999999999999"}, servers...), "--max-batch: out of range: want a whole number"},
		{"uint", append([]string{"replicate", "--server-id", "-1"}, servers...), "--server-id: not a whole number, 0 or more"},
		{"duration", append([]string{"replicate", "--heartbeat", "soon"}, servers...), "--heartbeat: not a duration such as 500ms"},
		{"seconds", append([]string{"replicate", "--lock-wait-timeout", "soon"}, servers...), "--lock-wait-timeout: want a duration such as 50s"},
		{"size", append([]string{"replicate", "--max-memory", "lots"}, servers...), "--max-memory: want a size such as 512MiB"},
		{"bool", append([]string{"replicate", "--binlog-applied=maybe"}, servers...), "--binlog-applied: not true or false"},
		{"verify", append([]string{"verify", "--threads", "x"}, servers...), "--threads: not a whole number"},
		{"wait", []string{"wait", "--target", nowhere, "--gtid", "0-1-1", "--timeout", "soon"}, "--timeout: not a duration"},
		{"binlog dump", []string{"binlog", "dump", "--source", nowhere, "--server-id", "x"}, "--server-id: not a whole number"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(c.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit status %d, want 2", code)
			}
			out := stderr.String()
			if !strings.Contains(out, c.want) || strings.Contains(out, "strconv") || strings.Contains(out, "invalid argument") {
				t.Errorf("stderr %q, want %q", out, c.want)
			}
		})
	}

	t.Run("old name", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		run(append([]string{"replicate", "--workers", "2", "--parallel-mode", "fast"}, servers...), &stdout, &stderr)
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if len(lines) != 2 || lines[0] != "note: --workers is an old name of --threads; it still works" ||
			!strings.HasPrefix(lines[1], "binlane: --parallel-mode") {
			t.Errorf("stderr:\n%s", stderr.String())
		}
	})
}

// TestFirstContact: what a new user meets when a first start goes wrong.
// A source the preflight refuses leaves nothing on the target (no stream
// row in error that status --check would report CRITICAL from then on),
// and a stream's row that was there stays as it was. A source that does
// not answer is retried as a first connection, not "from the saved
// position" the stream does not have, and wait on the stream it left in
// error names no empty position.
func TestFirstContact(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
	srcURL, dstURL := binlaneURL(t, src, "app"), binlaneURL(t, dst, "app")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	src.ExecT(t, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	out, err := runReplicateCmd(ctx, "--source", srcURL, "--target", dstURL, "--databases", "app")
	if err == nil || !strings.Contains(err.Error(), "@@binlog_row_metadata is MINIMAL, need FULL") {
		t.Fatalf("refused start: %v\n%s", err, out)
	}
	noBinlaneSchema(t, dst)
	if out, _ := runStatusCmd(t, "--target", dstURL, "--check"); strings.Contains(out, "CRITICAL") {
		t.Errorf("status --check after a refused start: %s", out)
	}
	src.ExecT(t, "SET GLOBAL binlog_row_metadata = 'FULL'")

	out, err = runReplicateCmd(ctx, "--source", "mysql://binlane@127.0.0.1:1/", "--target", dstURL, "--databases", "app", "--stream", "first")
	if err == nil || !strings.Contains(err.Error(), "giving up after 3 attempts") {
		t.Fatalf("unreachable source: %v\n%s", err, out)
	}
	if !strings.Contains(out, `msg="the first connection failed: retrying"`) || !strings.Contains(out, "connection refused") ||
		strings.Contains(out, "saved position") || strings.Contains(out, "prepared XA") {
		t.Errorf("the retries of a first connection:\n%s", out)
	}

	out, code := runTargetCmd(t, ctx, newWaitCmd(), "--target", dstURL, "--stream", "first", "--gtid", "0-1-1")
	if code != 2 || !strings.Contains(out, `stream "first" stopped on an error before its first position: giving up after 3 attempts`) {
		t.Errorf("wait: exit %d: %s", code, out)
	}

	dstDB := dst.OpenT(t, "")
	before, _, err := position.Load(ctx, dstDB, "first")
	if err != nil {
		t.Fatal(err)
	}
	src.ExecT(t, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
	if _, err := runReplicateCmd(ctx, "--source", srcURL, "--target", dstURL, "--databases", "app", "--stream", "first"); err == nil {
		t.Fatal("a refused source was accepted")
	}
	after, _, err := position.Load(ctx, dstDB, "first")
	if err != nil {
		t.Fatal(err)
	}
	if after.State != before.State || after.Message != before.Message || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a refused start changed the stream's row: %s %q, was %s %q", after.State, after.Message, before.State, before.Message)
	}
}
