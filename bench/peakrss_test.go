package main

import (
	"os/exec"
	"syscall"
	"testing"
)

func TestParseHWM(t *testing.T) {
	cases := []struct {
		status string
		want   int64
		ok     bool
	}{
		{"Name:\tx\nVmPeak:\t  9000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n", 1234 << 10, true},
		{"Name:\tx\nState:\tZ (zombie)\n", 0, false}, // exited: no address space
		{"VmHWM:\t12 MB\n", 0, false},
		{"VmHWM:\tlots kB\n", 0, false},
	}
	for _, c := range cases {
		got, ok := parseHWM([]byte(c.status))
		if got != c.want || ok != c.ok {
			t.Errorf("parseHWM(%q) = %d, %v; want %d, %v", c.status, got, ok, c.want, c.ok)
		}
	}
}

// TestPeakRSSIsTheCommandsOwn: a small command started by a process that
// holds much memory reports its own peak, not its parent's (which is what
// wait4's ru_maxrss said: see peakrss.go).
func TestPeakRSSIsTheCommandsOwn(t *testing.T) {
	const held = 256 << 20
	ballast := make([]byte, held)
	for i := 0; i < len(ballast); i += 4096 {
		ballast[i] = 1
	}
	cmd := exec.Command("sleep", "0.2")
	peak, err := runWatched(cmd)
	if err != nil {
		t.Fatal(err)
	}
	if peak <= 0 || peak > 32<<20 {
		t.Errorf("sleep's peak RSS: %d bytes, want above 0 and far below the %d this process holds", peak, held)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		t.Logf("sleep: sampled peak %d KiB; wait4's ru_maxrss %d KiB", peak>>10, ru.Maxrss)
	}
	ballast[len(ballast)-1] = 1 // keep it alive until here
}
