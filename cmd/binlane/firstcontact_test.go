package main

import (
	"bytes"
	"strings"
	"testing"
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
