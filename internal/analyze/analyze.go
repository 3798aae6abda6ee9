// Package analyze predicts how a binlog would replicate with binlane before
// anything is replicated: how much work it holds, which transactions must
// run alone and why, the dependency graph the scheduler builds from it, its
// critical path, the speedup that 1..64 workers would give (in writeset and
// in commit-order mode) and a recommended worker count. It also turns a
// running applier's worker figures into a recommendation (RecommendLive).
//
// The input is the applier's own view of each transaction: its writeset
// from package writeset, its run-alone reason, the source's commit
// metadata. The graph and the simulations drive the real scheduler
// (Add/Next/Committed), so what they show is what the applier would do.
// Time is simulated with a cost model calibrated on bench/results (see
// Model).
//
// The package is pure and deterministic: it must never do I/O, read a
// clock or start goroutines. Reading binlogs and printing are the
// command's job (cmd/binlane/analyze.go).
package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// Reason codes for transactions that run alone: the applier's (package
// apply: Alone*; package plan: Serialize*), so that they match the
// serialized_by_reason counters of a running stream.
const (
	AloneDDL       = "ddl"        // statements: DDL, deferred trigger DDL
	AloneTooLarge  = "too_large"  // larger than --max-txn-bytes: sent in parts
	AloneSavepoint = "savepoints" // ROLLBACK TO SAVEPOINT or ROLLBACK over non-transactional changes
	// AloneStatementDML: row changes a MIXED or STATEMENT session logged as statements.
	AloneStatementDML = "statement_dml"
)

// Txn is one source transaction as the applier sees it.
type Txn struct {
	GTID string
	// Commit-order metadata from the source (txn.Txn's).
	Domain         uint32
	CommitID       uint64
	LastCommitted  int64
	SequenceNumber int64
	File           string
	// Rows counts row changes, Bytes the transaction's size in memory (as
	// the applier's window counts it).
	Rows  int
	Bytes int
	// Tables are the tables the transaction changes, each with its row
	// changes (Rows is their sum).
	Tables []TableRows
	// Set is the writeset; nil for a transaction that runs alone for a
	// reason found before its rows are analysed (Alone set).
	Set *scheduler.KeySet
	// Alone is why the transaction runs alone ("" when it need not): one
	// of the Alone* codes, or the writeset's Barrier (plan.Serialize*).
	Alone string
}

// TableRows is a table ("db.table") and the row changes of a transaction
// in it.
type TableRows struct {
	Name string
	Rows int
}

// Namer names the hashes a writeset holds, for the report.
type Namer interface {
	// Key returns the table and a readable form of the value of a key
	// ("PRIMARY (42)"); empty strings when unknown.
	Key(h uint64) (table, value string)
	// Table returns the name of a table hash.
	Table(h uint64) string
}

// Options shape an analysis.
type Options struct {
	Model Model
	// Workers are the worker counts simulated (default 1,2,4,8,16,32,64).
	Workers []int
	// Top bounds the lists of hot tables, keys and tables by rows (10).
	Top   int
	Namer Namer
}

// DefaultWorkers are the worker counts simulated by default.
var DefaultWorkers = []int{1, 2, 4, 8, 16, 32, 64}

// Report is the result of an analysis.
type Report struct {
	Transactions int `json:"transactions"`
	// Filtered counts transactions left out because the filter selected
	// none of their tables (set by the caller).
	Filtered  int    `json:"filtered,omitempty"`
	Rows      int64  `json:"rows"`
	Bytes     int64  `json:"bytes"`
	Tables    int    `json:"tables"`
	FirstGTID string `json:"first_gtid,omitempty"`
	LastGTID  string `json:"last_gtid,omitempty"`
	// TablesByRows are the tables with the most row changes.
	TablesByRows []Count `json:"tables_by_rows,omitempty"`
	// Alone counts the transactions that must run alone, by reason.
	Alone []AloneCount `json:"alone,omitempty"`
	Graph Graph        `json:"graph"`
	// HotTables and HotKeys are where transactions wait for earlier ones:
	// how many transactions conflict on each.
	HotTables []Count `json:"hot_tables,omitempty"`
	HotKeys   []Count `json:"hot_keys,omitempty"`
	Model     Model   `json:"model"`
	// Simulations has one row per worker count.
	Simulations    []SimRow       `json:"simulations"`
	Recommendation Recommendation `json:"recommendation"`
	// Notes are caveats about the input or the model.
	Notes []string `json:"notes,omitempty"`
}

// Count is a named count.
type Count struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// AloneCount is a reason to run alone, how many transactions have it and
// the first of them.
type AloneCount struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	First  string `json:"first_gtid,omitempty"`
}

// SimRow compares both parallel modes at one worker count.
type SimRow struct {
	Workers     int       `json:"workers"`
	Writeset    SimResult `json:"writeset"`
	CommitOrder SimResult `json:"commit_order"`
}

// Recommendation is a worker count and why.
type Recommendation struct {
	Workers int    `json:"workers"`
	Reason  string `json:"reason"`
}

// Analyze computes the report of a sequence of transactions, in source
// order.
func Analyze(txns []Txn, opts Options) Report {
	if opts.Model == (Model{}) {
		opts.Model = DefaultModel(true)
	}
	opts.Model = opts.Model.withDefaults()
	if len(opts.Workers) == 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Top <= 0 {
		opts.Top = 10
	}
	r := Report{Transactions: len(txns), Model: opts.Model}
	if len(txns) == 0 {
		r.Recommendation = Recommendation{Workers: 1, Reason: "no transactions to analyse"}
		return r
	}
	r.FirstGTID, r.LastGTID = txns[0].GTID, txns[len(txns)-1].GTID
	counts(&r, txns, opts.Top)
	hot := newHotCounter(opts.Namer)
	g := buildGraph(txns, opts.Model, hot)
	r.Graph = g.summary
	r.HotTables, r.HotKeys = hot.top(opts.Top)

	var base float64
	for _, w := range opts.Workers {
		row := SimRow{Workers: w,
			Writeset:    Simulate(txns, ModeWriteset, w, opts.Model),
			CommitOrder: Simulate(txns, ModeCommitOrder, w, opts.Model)}
		if base == 0 {
			base = Simulate(txns, ModeWriteset, 1, opts.Model).Elapsed.Seconds()
		}
		row.Writeset.Speedup = base / row.Writeset.Elapsed.Seconds()
		row.CommitOrder.Speedup = base / row.CommitOrder.Elapsed.Seconds()
		r.Simulations = append(r.Simulations, row)
	}
	r.Recommendation = Recommend(r.Simulations, r.Graph)
	r.Notes = notes(&r, txns)
	return r
}

// counts fills the totals, the busiest tables and the run-alone reasons.
func counts(r *Report, txns []Txn, top int) {
	rows := map[string]int64{}
	alone := map[string]*AloneCount{}
	for i := range txns {
		t := &txns[i]
		r.Rows += int64(t.Rows)
		r.Bytes += int64(t.Bytes)
		for _, tr := range t.Tables {
			rows[tr.Name] += int64(tr.Rows)
		}
		if t.Alone != "" {
			a := alone[t.Alone]
			if a == nil {
				a = &AloneCount{Reason: t.Alone, First: t.GTID}
				alone[t.Alone] = a
			}
			a.Count++
		}
	}
	r.Tables = len(rows)
	r.TablesByRows = topCounts(rows, top)
	for _, a := range alone {
		r.Alone = append(r.Alone, *a)
	}
	slices.SortFunc(r.Alone, func(a, b AloneCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Reason, b.Reason))
	})
}

// topCounts returns the n largest counts, largest first, ties by name.
func topCounts(m map[string]int64, n int) []Count {
	out := make([]Count, 0, len(m))
	for k, v := range m {
		out = append(out, Count{Name: k, Count: v})
	}
	slices.SortFunc(out, func(a, b Count) int { return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name)) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// us converts microseconds (the simulation's unit) to a duration.
func us(v float64) time.Duration { return time.Duration(v * float64(time.Microsecond)) }

// notes are caveats the reader of a report needs.
func notes(r *Report, txns []Txn) []string {
	var out []string
	if r.Model.Cores == 0 {
		out = append(out, "speedups assume a free core on the target for every worker (and for binlane): "+
			"on a target with fewer cores, give their number (--cores)")
	}
	out = append(out, "the model is optimistic beyond one worker: on binlane's benchmark (2 cores shared by binlane, source and target) "+
		"it predicts 1.7-1.8x with 2-4 workers where 1.3-1.5x was measured (oltp_write_only, oltp_update_index; "+
		"up to 35% apart), because the measured cost per transaction grows with concurrency (CPU contention, lock waits, "+
		"round trips) and the model's does not; hot rows are within 20%. Read the speedups as upper bounds and the shape "+
		"(where the curve flattens) as the answer; see the README")
	if r.Simulations != nil && len(r.Simulations) > 1 && r.Simulations[1].CommitOrder.Speedup < 1.05 {
		out = append(out, "commit-order mode gains nothing here: each source commit group depends on the previous one, "+
			"so merging puts consecutive groups in one batch and the next batch waits for it (one worker does the work)")
	}
	groups := false
	for i := range txns {
		if txns[i].CommitID != 0 || txns[i].LastCommitted != 0 || txns[i].SequenceNumber != 0 {
			groups = true
			break
		}
	}
	if !groups {
		out = append(out, "the source wrote no group-commit ids: commit-order mode applies one transaction after another")
	}
	alone := 0
	for _, a := range r.Alone {
		alone += a.Count
	}
	if alone*10 > r.Transactions {
		out = append(out, fmt.Sprintf("%d of %d transactions run alone (see above): each is a barrier for the ones after it",
			alone, r.Transactions))
	}
	if len(r.Simulations) > 0 && r.Rows > 0 {
		if w := r.Simulations[0].Writeset.RowsWritten; w*2 < float64(r.Rows) {
			out = append(out, fmt.Sprintf("merged batches write %.0f%% of the row changes (rows changed again and again): "+
				"such hot rows cost the target less per row than the model's (about 3x less in the benchmark), so the rates are pessimistic",
				100*w/float64(r.Rows)))
		}
	}
	out = append(out, "statements (DDL) are costed as one small transaction; their real duration (an ALTER of a large table) is not modelled")
	return out
}
