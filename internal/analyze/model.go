package analyze

import "time"

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
// Sync uses none.
//
// Calibration (bench/results/20261122-171516, 2-core VM, fsync 115 µs;
// binlane, source and target on the same 2 cores, so Cores 2 there):
//   - Non-durable oltp_write_only, 1 worker: 13,016 trx/s with 127 source
//     transactions (4 row changes, 3 rows after merging) per commit:
//     77 µs per transaction. The processes' CPU seconds split it: target
//     75 µs, binlane 23-27 µs per transaction, of which about 10 in the
//     intake (decoding, writesets) and the rest in the workers (SQL text).
//     Durable, 1 worker: 9,711 trx/s, 103 µs: the 26 µs difference is the
//     commit (2.6 ms per commit of 127 transactions; the target's CPU
//     seconds grow by 17 µs per transaction, so most of it is CPU: writing
//     the binlog and redo of ~380 rows, CommitPerRow; the rest is fsyncs).
//   - 1-row oltp_update_index, durable, 1 worker: 18,364 trx/s (54 µs)
//     sets PerTxn against PerRow.
//   - Hot rows (16 rows, 127 transactions per commit) are 3x cheaper per
//     row than random rows of 100,000-row tables (cached pages, no
//     secondary index changes); the model keeps the random-row cost and
//     says so when a workload's rows are mostly hot.
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
	// Cores shared by workers, commits and intake; 0 for unlimited.
	Cores int `json:"cores"`
	// MaxBatch and MaxBatchBytes bound merged batches (replicate's
	// --max-batch, --max-batch-bytes).
	MaxBatch      int `json:"max_batch"`
	MaxBatchBytes int `json:"max_batch_bytes"`
}

// DefaultModel returns the calibrated model for a durable target
// (innodb_flush_log_at_trx_commit=1, sync_binlog=1) or a non-durable one,
// with unlimited cores.
func DefaultModel(durable bool) Model {
	m := Model{Durable: durable,
		PerTxn: 12 * time.Microsecond, PerRow: 17 * time.Microsecond,
		Commit: 150 * time.Microsecond, CommitPerRow: 0,
		Intake: 4 * time.Microsecond, IntakePerRow: 2 * time.Microsecond,
		MaxBatch: 128, MaxBatchBytes: 4 << 20}
	if durable {
		m.Commit, m.CommitPerRow, m.Sync = 300*time.Microsecond, 5*time.Microsecond, 350*time.Microsecond
	}
	return m
}

func (m Model) withDefaults() Model {
	if m.MaxBatch <= 0 {
		m.MaxBatch = 128
	}
	if m.MaxBatchBytes <= 0 {
		m.MaxBatchBytes = 4 << 20
	}
	return m
}

func micro(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
