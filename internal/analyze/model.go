package analyze

import (
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// Model is the cost model of the simulation: what one source transaction,
// one row and one target commit cost, where that time is spent (CPU or
// waiting for the disk) and how many cores there are to spend it on.
//
// A batch of merged source transactions costs its worker
// PerTxn × transactions + PerRow × rows written, where rows written counts
// a row changed several times in the batch once (merging keeps the last
// image; estimated from the writeset: rows × distinct keys / keys). Its
// commit, in source order and one at a time, costs Commit + CommitPerRow ×
// rows written of CPU, then Sync of waiting for the disk. Transactions
// reach the scheduler at Intake + IntakePerRow × rows each (receiving,
// decoding, writesets: one goroutine). Workers, the commit and the intake
// share Cores (0: as many cores as they need) with processor sharing;
// Sync uses none, Background runs beside everything.
//
// Calibration (bench/results/20261122-171516, 2-core VM, fsync 115 µs;
// binlane, source and target on the same 2 cores, so Cores 2 there). With
// one worker the time per source transaction is the worker's critical path
// (about 127 source transactions per commit, r rows written each):
// PerTxn + r×PerRow + (Commit + Sync)/127 + r×CommitPerRow.
//   - non-durable oltp_write_only (4 changes, r = 3): 13,016 trx/s = 77 µs;
//   - durable oltp_write_only: 9,711 trx/s = 103 µs;
//   - durable 1-row oltp_update_index (r = 1): 18,364 trx/s = 54.5 µs.
//
// The two durable rows give PerRow + CommitPerRow = 24.25 µs (CommitPerRow
// 5: binlog and redo written at commit), the non-durable one PerTxn = 18
// (with a 150 µs commit), the update_index one Commit + Sync = 1.55 ms per
// durable commit (Sync 350 µs: two to three fsyncs of 115 µs). Background is
// the CPU the processes' measured CPU seconds show beyond that (121 µs per
// durable oltp_write_only transaction in all: target 92, binlane 27, source
// 2): purge, log writer, the source's dump thread, garbage collection. It
// takes its share of the cores but delays no transaction. Intake is
// binlane's decoding and writesets (its CPU seconds less the SQL its
// workers build).
//
// Hot rows (16 rows, 127 transactions per commit) cost the target about 3x
// less per row than random rows of 100,000-row tables (cached pages, no
// secondary index changes); the model keeps the random-row cost and says so
// when a workload's rows are mostly hot.
//
// Absolute rates depend on the target's hardware and schema; the speedups
// (ratios at the same model) are what the simulation is for.
type Model struct {
	Durable      bool          `json:"durable"`
	PerTxn       time.Duration `json:"per_txn_ns"`
	PerRow       time.Duration `json:"per_row_ns"`
	Commit       time.Duration `json:"commit_ns"`
	CommitPerRow time.Duration `json:"commit_per_row_ns"`
	Sync         time.Duration `json:"sync_ns"`
	Intake       time.Duration `json:"intake_per_txn_ns"`
	IntakePerRow time.Duration `json:"intake_per_row_ns"`
	// Background and BackgroundPerRow are CPU spent beside the workers per
	// committed transaction and row (server threads, the source).
	Background       time.Duration `json:"background_per_txn_ns"`
	BackgroundPerRow time.Duration `json:"background_per_row_ns"`
	// Cores shared by workers, commits and intake; 0 for unlimited.
	Cores int `json:"cores"`
	// MaxBatch and MaxBatchBytes bound merged batches (replicate's
	// --max-batch, --max-batch-bytes). MaxBatch 0 simulates replicate's
	// own default (scheduler.DefaultMaxBatch); SimResult.MaxBatch says
	// which.
	MaxBatch      int `json:"max_batch"`
	MaxBatchBytes int `json:"max_batch_bytes"`
}

// DefaultModel returns the calibrated model for a durable target
// (innodb_flush_log_at_trx_commit=1, sync_binlog=1) or a non-durable one,
// with unlimited cores.
func DefaultModel(durable bool) Model {
	m := Model{Durable: durable,
		PerTxn: 18 * time.Microsecond, PerRow: 19 * time.Microsecond,
		Commit: 150 * time.Microsecond,
		Intake: 4 * time.Microsecond, IntakePerRow: 2 * time.Microsecond,
		Background: 2 * time.Microsecond, BackgroundPerRow: 1500 * time.Nanosecond,
		MaxBatchBytes: 4 << 20}
	if durable {
		m.Commit, m.CommitPerRow, m.Sync = 1200*time.Microsecond, 5*time.Microsecond, 350*time.Microsecond
	}
	return m
}

func (m Model) withDefaults() Model {
	if m.MaxBatch < 0 {
		m.MaxBatch = 0
	}
	if m.MaxBatchBytes <= 0 {
		m.MaxBatchBytes = 4 << 20
	}
	return m
}

// maxBatch is the merged batch bound simulated.
func (m Model) maxBatch() int {
	if m.MaxBatch > 0 {
		return m.MaxBatch
	}
	return scheduler.DefaultMaxBatch
}

func micro(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
