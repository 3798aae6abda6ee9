package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// cpuUse is the CPU one drain cost each process: binlane's own (zero for
// MariaDB's replica, which runs inside the target), the target's and the
// source's. Per source transaction these ratios hold on any machine,
// whatever its cores.
type cpuUse struct {
	Binlane, Target, Source time.Duration
}

func (u cpuUse) add(o cpuUse) cpuUse {
	return cpuUse{u.Binlane + o.Binlane, u.Target + o.Target, u.Source + o.Source}
}

func (u cpuUse) div(n int) cpuUse {
	if n <= 1 {
		return u
	}
	d := time.Duration(n)
	return cpuUse{u.Binlane / d, u.Target / d, u.Source / d}
}

// perTrx is a CPU time per transaction, in µs.
func perTrx(d time.Duration, txns int) float64 {
	if txns <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(txns)
}

// cpuMeter reads the target's and the source's CPU when a drain starts;
// stop returns what they used since, with the contender's own.
type cpuMeter struct {
	dst, src   *sandbox.Server
	tgt0, src0 time.Duration
	hasSrc     bool
}

func startCPU(dst, src *sandbox.Server) cpuMeter {
	m := cpuMeter{dst: dst, src: src, tgt0: processCPU(dst.PID())}
	if src != nil {
		m.src0, m.hasSrc = processCPU(src.PID()), true
	}
	return m
}

func (m cpuMeter) stop(own time.Duration) cpuUse {
	u := cpuUse{Binlane: own, Target: processCPU(m.dst.PID()) - m.tgt0}
	if m.hasSrc {
		u.Source = processCPU(m.src.PID()) - m.src0
	}
	return u
}

// Pinned mode (--pin): the target's mariadbd alone on one core, the
// source and binlane on the other, as binlane runs on a host of its own.
// The target's core is then everyone's ceiling, and how busy a contender
// keeps it is what separates them.
const (
	targetCore = "1"
	otherCores = "0"
)

// pin puts every thread of a running process on cores; threads it starts
// later inherit that.
func pin(pid int, cores string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", cores, strconv.Itoa(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset %d to cores %s: %v: %s", pid, cores, err, out)
	}
	return nil
}

// pinned returns the command line that runs name with args on cores (as
// is when cores is ""). taskset execs the command: the process is the
// command's own, for its CPU and memory figures.
func pinned(cores, name string, args ...string) (string, []string) {
	if cores == "" {
		return name, args
	}
	return "taskset", append([]string{"-c", cores, name}, args...)
}

// cpuTable writes what each contender cost per source transaction, in
// CPU-µs: binlane's own, the target's, the source's, and how busy the
// target was during the drain (its CPU over the drain's time: one core is
// 100%).
func cpuTable(b *strings.Builder, sc scenarioResult) {
	b.WriteString("CPU per source transaction (µs):\n\n| contender | binlane | target | source | binlane + target | target busy |\n" +
		"|---|---:|---:|---:|---:|---:|\n")
	for _, r := range sc.Runs {
		busy := ""
		if r.Elapsed > 0 {
			busy = fmt.Sprintf("%.0f%%", 100*r.CPU.Target.Seconds()/r.Elapsed.Seconds())
		}
		fmt.Fprintf(b, "| %s | %.1f | %.1f | %.1f | %.1f | %s |\n", r.Name, perTrx(r.CPU.Binlane, sc.Backlog),
			perTrx(r.CPU.Target, sc.Backlog), perTrx(r.CPU.Source, sc.Backlog), perTrx(r.CPU.Binlane+r.CPU.Target, sc.Backlog), busy)
	}
	b.WriteString("\n")
}

// cpuSummary writes, per scenario, the CPU goals against MariaDB's serial
// replica (its target's CPU per transaction): binlane's target CPU, binlane
// and its target together, and binlane alone, for binlane's fastest run.
func cpuSummary(b *strings.Builder, all []scenarioResult) {
	b.WriteString("| scenario | MariaDB serial target µs/trx | binlane's best run | its target / serial's | binlane + target / serial's | binlane / serial's |\n" +
		"|---|---:|---|---:|---:|---:|\n")
	for _, sc := range all {
		var serial, best *runResult
		for i := range sc.Runs {
			r := &sc.Runs[i]
			switch {
			case r.Name == "mariadb serial":
				serial = r
			case r.Kind == "binlane" && (best == nil || r.TrxPerS > best.TrxPerS):
				best = r
			}
		}
		if serial == nil || best == nil || serial.CPU.Target <= 0 {
			continue
		}
		ref := serial.CPU.Target.Seconds()
		fmt.Fprintf(b, "| %s | %.1f | %s | %.2fx | %.2fx | %.2fx |\n", sc.Spec.name, perTrx(serial.CPU.Target, sc.Backlog), best.Name,
			best.CPU.Target.Seconds()/ref, (best.CPU.Binlane+best.CPU.Target).Seconds()/ref, best.CPU.Binlane.Seconds()/ref)
	}
	b.WriteString("\n")
}
