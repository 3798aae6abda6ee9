package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"time"
)

// machineSpeed measures what decides the results on a shared machine: one
// core's speed (sysbench cpu events/s) and the latency of an fsync in the
// temporary folder the servers live in.
func machineSpeed(ctx context.Context) string {
	cpu := "?"
	out, err := exec.CommandContext(ctx, "sysbench", "cpu", "--time=3", "--threads=1", "run").CombinedOutput()
	if err == nil {
		if m := regexp.MustCompile(`events per second:\s+([0-9.]+)`).FindSubmatch(out); m != nil {
			cpu = string(m[1])
		}
	}
	return fmt.Sprintf("sysbench cpu %s events/s on one core, fsync %s", cpu, fsyncLatency())
}

func fsyncLatency() string {
	f, err := os.CreateTemp("", "binlane-fsync-")
	if err != nil {
		return "?"
	}
	defer os.Remove(f.Name())
	defer f.Close()
	buf := make([]byte, 4096)
	const n = 200
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if _, err := f.WriteAt(buf, int64(i%16)*4096); err != nil {
			return "?"
		}
		if err := f.Sync(); err != nil {
			return "?"
		}
	}
	return fmt.Sprintf("%.0f µs", float64(time.Since(t0).Microseconds())/n)
}
