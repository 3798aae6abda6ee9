package analyze

import (
	"math"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// Mode is the scheduler's parallel mode.
type Mode = scheduler.Mode

// Modes simulated.
const (
	ModeWriteset    = scheduler.ModeWriteset
	ModeCommitOrder = scheduler.ModeCommitOrder
)

// SimResult is one simulated drain of the transactions as a backlog.
type SimResult struct {
	Elapsed   time.Duration `json:"elapsed_ns"`
	TxnPerSec float64       `json:"txn_per_sec"`
	// Speedup is relative to 1 worker in writeset mode (set by Analyze).
	Speedup float64 `json:"speedup"`
	Commits int     `json:"commits"`
	// TxnPerCommit is how many source transactions each target commit
	// merged.
	TxnPerCommit float64 `json:"txn_per_commit"`
	// Busy, CommitWait and Commit are the workers' mean shares of the
	// time applying, waiting for their commit turn and committing (as
	// binlane status shows them for a running stream).
	Busy       float64 `json:"busy"`
	CommitWait float64 `json:"commit_wait"`
	Commit     float64 `json:"commit"`
	// Bottleneck names what limited the run: "commit" (the ordered
	// commits were busy most of the time), "intake" (reading the binlog),
	// "cpu" (the cores), "dependencies" (workers idle for want of ready
	// transactions) or "workers" (all busy: more would help).
	Bottleneck string `json:"bottleneck"`
	// RowsWritten is the rows the batches wrote after merging.
	RowsWritten float64 `json:"rows_written"`
}

type phase uint8

const (
	idle phase = iota
	executing
	waitingTurn
	committingCPU
	committingIO
)

type simWorker struct {
	phase  phase
	batch  []*scheduler.Unit
	left   float64 // µs of CPU left in the phase
	until  float64 // end of committingIO
	since  float64 // start of the phase
	rows   float64 // rows the batch writes
	busy   float64
	wait   float64
	commit float64
}

// Simulate drains txns as a backlog with the given mode and workers and
// returns what it took under the model: a discrete-event simulation of the
// applier (intake, the scheduler's Add/Next/Committed, workers, ordered
// commits one at a time).
func Simulate(txns []Txn, mode scheduler.Mode, workers int, m Model) SimResult {
	m = m.withDefaults()
	workers = max(workers, 1)
	n := len(txns)
	if n == 0 {
		return SimResult{}
	}
	units := make([]scheduler.Unit, n)
	for i := range txns {
		t := &txns[i]
		units[i] = scheduler.Unit{Seq: uint64(i + 1), Set: t.Set, Barrier: t.Alone != "", Bytes: t.Bytes + 256,
			Domain: t.Domain, CommitID: t.CommitID, LastCommitted: t.LastCommitted, SequenceNumber: t.SequenceNumber,
			File: t.File, Payload: i}
	}
	// The applier's window (apply.Config defaults).
	s := scheduler.New(scheduler.Config{Mode: mode, MaxUnits: scheduler.DefaultWindow(workers, m.MaxBatch), MaxBytes: 128 << 20,
		MaxBatch: m.MaxBatch, MaxBatchBytes: m.MaxBatchBytes}, 1)
	ws := make([]simWorker, workers)
	var (
		now        float64
		next       int     // next transaction to take in
		intakeLeft float64 // µs of CPU left to take in txns[next]
		committed  int
		commits    int
		commitBusy float64 // time the commit lane was in use
		intakeBusy float64 // time intake was taking transactions in
		cpuSat     float64 // time the cores were oversubscribed
		keys       = map[uint64]struct{}{}
		written    float64
		background float64 // µs of background CPU owed
	)
	intakeCost := func(i int) float64 { return micro(m.Intake) + micro(m.IntakePerRow)*float64(txns[i].Rows) }
	if n > 0 {
		intakeLeft = intakeCost(0)
	}
	for committed < n {
		// Hand out batches to idle workers, start the head's commit.
		for i := range ws {
			w := &ws[i]
			if w.phase != idle {
				continue
			}
			b := s.Next()
			if b == nil {
				break
			}
			w.batch, w.phase, w.since = b, executing, now
			w.rows = rowsWritten(txns, b, keys)
			written += w.rows
			w.left = micro(m.PerTxn)*float64(len(b)) + micro(m.PerRow)*w.rows
		}
		head := uint64(committed + 1)
		lane := false
		for i := range ws {
			if p := ws[i].phase; p == committingCPU || p == committingIO {
				lane = true
			}
		}
		if !lane {
			for i := range ws {
				w := &ws[i]
				if w.phase == waitingTurn && w.batch[0].Seq == head {
					w.wait += now - w.since
					w.phase, w.since = committingCPU, now
					w.left = micro(m.Commit) + micro(m.CommitPerRow)*w.rows
				}
			}
		}
		// The next event: a CPU job ending at the shared rate, or a sync.
		intakeOn := next < n && !s.Full()
		backOn := background > 0
		active := 0
		if intakeOn {
			active++
		}
		if backOn {
			active++
		}
		for i := range ws {
			if p := ws[i].phase; p == executing || p == committingCPU {
				active++
			}
		}
		rate := 1.0
		if m.Cores > 0 && active > m.Cores {
			rate = float64(m.Cores) / float64(active)
		}
		dt := math.Inf(1)
		if intakeOn {
			dt = intakeLeft / rate
		}
		if backOn {
			dt = min(dt, background/rate)
		}
		for i := range ws {
			w := &ws[i]
			switch w.phase {
			case executing, committingCPU:
				dt = min(dt, w.left/rate)
			case committingIO:
				dt = min(dt, w.until-now)
			}
		}
		if math.IsInf(dt, 1) && committed < n {
			panic("analyze: simulation stalled") // a scheduler that hands out nothing with nothing in flight
		}
		dt = max(dt, 0)
		now += dt
		if rate < 1 {
			cpuSat += dt
		}
		if intakeOn && intakeLeft > 0 {
			intakeBusy += dt
		}
		for i := range ws {
			if p := ws[i].phase; p == committingCPU || p == committingIO {
				commitBusy += dt
			}
		}
		// Advance every job; complete those that ended.
		const eps = 1e-9
		if backOn {
			background = max(0, background-dt*rate)
			if background <= eps {
				background = 0
			}
		}
		if intakeOn {
			intakeLeft -= dt * rate
			if intakeLeft <= eps {
				s.Add(&units[next])
				next++
				if next < n {
					intakeLeft = intakeCost(next)
				}
			}
		}
		for i := range ws {
			w := &ws[i]
			switch w.phase {
			case executing:
				w.left -= dt * rate
				if w.left <= eps {
					w.busy += now - w.since
					w.phase, w.since = waitingTurn, now
				}
			case committingCPU:
				w.left -= dt * rate
				if w.left <= eps {
					w.phase, w.until = committingIO, now+micro(m.Sync)
				}
			case committingIO:
				if w.until-now <= eps {
					w.commit += now - w.since
					s.Committed(w.batch)
					committed += len(w.batch)
					background += micro(m.Background)*float64(len(w.batch)) + micro(m.BackgroundPerRow)*w.rows
					commits++
					w.phase, w.batch = idle, nil
				}
			}
		}
	}
	r := SimResult{Elapsed: us(now), Commits: commits, RowsWritten: written, TxnPerCommit: float64(n) / float64(max(commits, 1))}
	if now > 0 {
		r.TxnPerSec = float64(n) / (now / 1e6)
		for i := range ws {
			r.Busy += ws[i].busy / now / float64(workers)
			r.CommitWait += ws[i].wait / now / float64(workers)
			r.Commit += ws[i].commit / now / float64(workers)
		}
	}
	r.Bottleneck = bottleneck(r, commitBusy/now, intakeBusy/now, cpuSat/now, workers)
	return r
}

// bottleneck names what limited a simulated run.
func bottleneck(r SimResult, commitShare, intakeShare, cpuSat float64, workers int) string {
	idle := 1 - r.Busy - r.CommitWait - r.Commit
	switch {
	case commitShare > 0.85:
		return "commit"
	case cpuSat > 0.6:
		return "cpu"
	case r.Busy+r.Commit > 0.85 && workers > 0:
		return "workers"
	case idle > 0.3 && intakeShare >= 0.75:
		return "intake"
	}
	return "dependencies"
}

// rowsWritten estimates the rows a merged batch writes: rows changed more
// than once in the batch are written once (their last image), which the
// writesets show as keys repeated across its transactions.
func rowsWritten(txns []Txn, batch []*scheduler.Unit, keys map[uint64]struct{}) float64 {
	rows, total := 0, 0
	clear(keys)
	for _, u := range batch {
		t := &txns[u.Payload.(int)]
		rows += t.Rows
		if t.Set != nil {
			total += len(t.Set.Keys)
			for _, k := range t.Set.Keys {
				keys[k] = struct{}{}
			}
		}
	}
	if total == 0 || len(batch) == 1 {
		return float64(rows)
	}
	return float64(rows) * float64(len(keys)) / float64(total)
}
