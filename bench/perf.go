package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// recordTarget starts `perf record` on the target's mariadbd for one
// drain (--perf-dir), so that where the target's CPU goes can be compared
// between binlane and MariaDB's replica on the same backlog. The returned
// function stops it and writes the top symbols next to perf.data. With no
// folder it does nothing.
func recordTarget(ctx context.Context, dir, label string, pid int) (stop func() error, err error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", sanitizeLabel(label), time.Now().UnixNano()))
	// System-wide, filtered to the target when reported: a connection
	// thread mariadbd starts after perf attached to it (-p) is not followed.
	cmd := exec.Command("perf", "record", "-q", "-a", "-F", "999", "-g", "-o", base+".data")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	return func() error {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait() // perf exits non-zero on SIGINT
		out, err := exec.CommandContext(ctx, "perf", "report", "-i", base+".data", "--stdio", "--no-children",
			"--sort", "symbol", "--percent-limit", "1", "-g", "none", "--pid", strconv.Itoa(pid)).Output()
		if err != nil {
			return fmt.Errorf("perf report %s: %w", base+".data", err)
		}
		return os.WriteFile(base+".txt", out, 0o644)
	}, nil
}

func sanitizeLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || r == '=' || r == ':' || r == '/' {
			return '_'
		}
		return r
	}, s)
}
