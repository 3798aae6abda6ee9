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
	// MaxBatch is the merged batch bound this drain was simulated with.
	MaxBatch int `json:"max_batch"`
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
	if len(txns) == 0 {
		return SimResult{}
	}
	x := newSim(txns, mode, workers, m)
	for x.committed < len(txns) {
		x.dispatch()
		x.startCommit()
		// The next event: a CPU job ending at the shared rate, or a sync.
		intakeOn, backOn := x.next < len(txns) && !x.s.Full(), x.background > 0
		rate := x.rate(intakeOn, backOn)
		dt := x.nextEvent(intakeOn, backOn, rate)
		x.account(dt, rate, intakeOn)
		x.advance(dt, rate, intakeOn, backOn)
	}
	return x.result()
}

// sim is the state of one simulated drain at the simulated time now (µs).
type sim struct {
	txns  []Txn
	m     Model
	units []scheduler.Unit
	s     *scheduler.Scheduler
	ws    []simWorker

	now        float64
	next       int     // next transaction to take in
	intakeLeft float64 // µs of CPU left to take in txns[next]
	committed  int
	commits    int
	commitBusy float64 // time the commit lane was in use
	intakeBusy float64 // time intake was taking transactions in
	cpuSat     float64 // time the cores were oversubscribed
	keys       map[uint64]struct{}
	batch      int // merged batch bound
	written    float64
	background float64 // µs of background CPU owed
}

func newSim(txns []Txn, mode scheduler.Mode, workers int, m Model) *sim {
	units := make([]scheduler.Unit, len(txns))
	for i := range txns {
		t := &txns[i]
		units[i] = scheduler.Unit{Seq: uint64(i + 1), Set: t.Set, Barrier: t.Alone != "", Bytes: t.Bytes + 256,
			Domain: t.Domain, CommitID: t.CommitID, LastCommitted: t.LastCommitted, SequenceNumber: t.SequenceNumber,
			File: t.File, Payload: i}
	}
	// The applier's window (apply.Config defaults).
	batch := m.maxBatch()
	s := scheduler.New(scheduler.Config{Mode: mode, MaxUnits: scheduler.DefaultWindow(workers, batch), MaxBytes: 128 << 20,
		MaxBatch: batch, MaxBatchBytes: m.MaxBatchBytes}, 1)
	x := &sim{txns: txns, m: m, units: units, s: s, ws: make([]simWorker, workers), keys: map[uint64]struct{}{}, batch: batch}
	x.intakeLeft = x.intakeCost(0)
	return x
}

// intakeCost is the CPU (µs) taking in txns[i] costs.
func (x *sim) intakeCost(i int) float64 {
	return micro(x.m.Intake) + micro(x.m.IntakePerRow)*float64(x.txns[i].Rows)
}

// dispatch hands out batches to idle workers.
func (x *sim) dispatch() {
	for i := range x.ws {
		w := &x.ws[i]
		if w.phase != idle {
			continue
		}
		b := x.s.Next()
		if b == nil {
			break
		}
		w.batch, w.phase, w.since = b, executing, x.now
		w.rows = rowsWritten(x.txns, b, x.keys)
		x.written += w.rows
		w.left = micro(x.m.PerTxn)*float64(len(b)) + micro(x.m.PerRow)*w.rows
	}
}

// startCommit starts the head batch's commit when the commit lane is free.
func (x *sim) startCommit() {
	for i := range x.ws {
		if p := x.ws[i].phase; p == committingCPU || p == committingIO {
			return
		}
	}
	head := uint64(x.committed + 1)
	for i := range x.ws {
		w := &x.ws[i]
		if w.phase == waitingTurn && w.batch[0].Seq == head {
			w.wait += x.now - w.since
			w.phase, w.since = committingCPU, x.now
			w.left = micro(x.m.Commit) + micro(x.m.CommitPerRow)*w.rows
		}
	}
}

// rate is the share of a core each running CPU job gets.
func (x *sim) rate(intakeOn, backOn bool) float64 {
	active := 0
	if intakeOn {
		active++
	}
	if backOn {
		active++
	}
	for i := range x.ws {
		if p := x.ws[i].phase; p == executing || p == committingCPU {
			active++
		}
	}
	if x.m.Cores > 0 && active > x.m.Cores {
		return float64(x.m.Cores) / float64(active)
	}
	return 1.0
}

// nextEvent is the time until the next job ends.
func (x *sim) nextEvent(intakeOn, backOn bool, rate float64) float64 {
	dt := math.Inf(1)
	if intakeOn {
		dt = x.intakeLeft / rate
	}
	if backOn {
		dt = min(dt, x.background/rate)
	}
	for i := range x.ws {
		w := &x.ws[i]
		switch w.phase {
		case executing, committingCPU:
			dt = min(dt, w.left/rate)
		case committingIO:
			dt = min(dt, w.until-x.now)
		}
	}
	if math.IsInf(dt, 1) && x.committed < len(x.txns) {
		panic("analyze: simulation stalled") // a scheduler that hands out nothing with nothing in flight
	}
	return max(dt, 0)
}

// account moves the clock by dt and counts what was busy meanwhile.
func (x *sim) account(dt, rate float64, intakeOn bool) {
	x.now += dt
	if rate < 1 {
		x.cpuSat += dt
	}
	if intakeOn && x.intakeLeft > 0 {
		x.intakeBusy += dt
	}
	for i := range x.ws {
		if p := x.ws[i].phase; p == committingCPU || p == committingIO {
			x.commitBusy += dt
		}
	}
}

// advance advances every job by dt and completes those that ended.
func (x *sim) advance(dt, rate float64, intakeOn, backOn bool) {
	const eps = 1e-9
	if backOn {
		x.background = max(0, x.background-dt*rate)
		if x.background <= eps {
			x.background = 0
		}
	}
	if intakeOn {
		x.intakeLeft -= dt * rate
		if x.intakeLeft <= eps {
			x.s.Add(&x.units[x.next])
			x.next++
			if x.next < len(x.txns) {
				x.intakeLeft = x.intakeCost(x.next)
			}
		}
	}
	for i := range x.ws {
		w := &x.ws[i]
		switch w.phase {
		case executing:
			w.left -= dt * rate
			if w.left <= eps {
				w.busy += x.now - w.since
				w.phase, w.since = waitingTurn, x.now
			}
		case committingCPU:
			w.left -= dt * rate
			if w.left <= eps {
				w.phase, w.until = committingIO, x.now+micro(x.m.Sync)
			}
		case committingIO:
			if w.until-x.now <= eps {
				w.commit += x.now - w.since
				x.s.Committed(w.batch)
				x.committed += len(w.batch)
				x.background += micro(x.m.Background)*float64(len(w.batch)) + micro(x.m.BackgroundPerRow)*w.rows
				x.commits++
				w.phase, w.batch = idle, nil
			}
		}
	}
}

// result sums up the drain.
func (x *sim) result() SimResult {
	n, now, workers := len(x.txns), x.now, len(x.ws)
	r := SimResult{Elapsed: us(now), Commits: x.commits, RowsWritten: x.written, MaxBatch: x.batch, TxnPerCommit: float64(n) / float64(max(x.commits, 1))}
	if now > 0 {
		r.TxnPerSec = float64(n) / (now / 1e6)
		for i := range x.ws {
			r.Busy += x.ws[i].busy / now / float64(workers)
			r.CommitWait += x.ws[i].wait / now / float64(workers)
			r.Commit += x.ws[i].commit / now / float64(workers)
		}
	}
	r.Bottleneck = bottleneck(r, x.commitBusy/now, x.intakeBusy/now, x.cpuSat/now, workers)
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
