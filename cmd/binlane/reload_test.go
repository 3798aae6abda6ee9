package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestReloadLimits: SIGHUP reads the copy's limits from the config file
// again; a limit given on the command line keeps its value.
func TestReloadLimits(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "binlane.yaml")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("source: mysql://a@127.0.0.1:1/\nmax-threads-running: 5\nmax-replica-lag: 10s\n")
	for _, c := range []struct {
		name        string
		args        []string
		wantThreads int
		wantLag     time.Duration
	}{
		{"from the file", []string{"--config", file}, 40, 20 * time.Second},
		{"the command line wins", []string{"--config", file, "--max-threads-running", "3"}, 3, 20 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			write("source: mysql://a@127.0.0.1:1/\nmax-threads-running: 5\nmax-replica-lag: 10s\n")
			cmd := newCopyCmd()
			if err := cmd.ParseFlags(c.args); err != nil {
				t.Fatal(err)
			}
			// As at start: the file's limits are read, and count as given
			// (Changed), yet a reload reads them from the file again.
			if err := cmd.PreRunE(cmd, nil); err != nil {
				t.Fatal(err)
			}
			write("source: mysql://a@127.0.0.1:1/\nmax-threads-running: 40\nmax-replica-lag: 20s\n")
			threads, lag, err := reloadLimits(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if threads != c.wantThreads || lag != c.wantLag {
				t.Errorf("reloaded %d, %s; want %d, %s", threads, lag, c.wantThreads, c.wantLag)
			}
		})
	}
	write("max-threads-running: lots\n")
	cmd := newCopyCmd()
	if err := cmd.ParseFlags([]string{"--config", file}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := reloadLimits(cmd); err == nil {
		t.Error("a bad value in the file was reloaded")
	}
}
