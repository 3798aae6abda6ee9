package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// The peak memory of a command is read from its own /proc status (VmHWM,
// the high-water mark of its address space since exec), sampled while it
// runs. The rusage wait4 returns will not do: Go starts children with
// vfork, sharing the parent's address space until exec, and Linux carries
// that space's high-water mark into the child's ru_maxrss, so a command
// started by a benchmark process holding 900 MiB reported 900 MiB
// whatever it used itself.

// runWatched runs cmd and returns its peak RSS in bytes.
func runWatched(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	w := watchPeakRSS(cmd.Process.Pid, 10*time.Millisecond)
	err := cmd.Wait()
	return w.stop(), err
}

// rssWatch samples a process's VmHWM until stop is called and returns the
// highest reading (bytes; 0 when none could be read).
type rssWatch struct {
	done chan struct{}
	peak chan int64
}

func watchPeakRSS(pid int, every time.Duration) *rssWatch {
	p := &rssWatch{done: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, ok := readHWM(pid); ok && v > peak {
				peak = v
			}
			select {
			case <-p.done:
				p.peak <- peak
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// stop ends the sampling; call it once the process has exited (the last
// sample taken before its exit counts: VmHWM only grows).
func (p *rssWatch) stop() int64 {
	close(p.done)
	return <-p.peak
}

// readHWM reads VmHWM from /proc/<pid>/status, in bytes.
func readHWM(pid int) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	return parseHWM(b)
}

func parseHWM(status []byte) (int64, bool) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmHWM:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
