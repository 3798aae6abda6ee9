package analyze

import (
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// Graph summarizes the dependency graph the scheduler builds in writeset
// mode when every transaction is in its window at once.
type Graph struct {
	// Edges counts dependencies as the scheduler keeps them (the last
	// earlier holder of each key; ordered commit makes waiting for it
	// waiting for everything before it too). Waiting counts the
	// transactions with at least one.
	Edges   int `json:"edges"`
	Waiting int `json:"waiting"`
	// CriticalPath is the longest chain of transactions each of which must
	// wait for the previous one to commit, each costing what it costs
	// applied and committed alone (Model). Work is the sum of every
	// transaction's cost; Parallelism = Work / CriticalPath.Cost, the most
	// that unlimited workers could gain without merging.
	CriticalPath Path          `json:"critical_path"`
	Work         time.Duration `json:"work_ns"`
	Parallelism  float64       `json:"parallelism"`
}

// Path is a chain of dependent transactions.
type Path struct {
	Transactions int           `json:"transactions"`
	Cost         time.Duration `json:"cost_ns"`
	First        string        `json:"first_gtid,omitempty"`
	Last         string        `json:"last_gtid,omitempty"`
	// Seqs are the transactions' positions in the input (1-based), in
	// order; kept out of JSON (they can be long).
	Seqs []int `json:"-"`
}

type graph struct {
	deps    [][]int // per transaction: indexes it depends on
	summary Graph
}

// buildGraph adds every transaction to one scheduler (writeset mode,
// nothing committed) and reads the dependencies back with Unit.Deps, and
// what they come from into hot.
func buildGraph(txns []Txn, m Model, hot *hotCounter) *graph {
	n := len(txns)
	s := scheduler.New(scheduler.Config{Mode: scheduler.ModeWriteset, MaxUnits: n + 1, MaxBytes: int(^uint(0) >> 1), MaxBatch: 1,
		Conflict: hot.conflict}, 1)
	units := make([]scheduler.Unit, n)
	g := &graph{deps: make([][]int, n)}
	for i := range txns {
		t := &txns[i]
		units[i] = scheduler.Unit{Seq: uint64(i + 1), Set: t.Set, Barrier: t.Alone != "", Payload: i}
		s.Add(&units[i])
		for _, d := range units[i].Deps() {
			g.deps[i] = append(g.deps[i], d.Payload.(int))
		}
		g.summary.Edges += len(g.deps[i])
		if len(g.deps[i]) > 0 {
			g.summary.Waiting++
		}
	}
	costs := make([]float64, n)
	var work float64
	for i := range txns {
		t := &txns[i]
		costs[i] = micro(m.PerTxn) + micro(m.PerRow)*float64(t.Rows) + micro(m.Commit) +
			micro(m.CommitPerRow)*float64(t.Rows) + micro(m.Sync)
		work += costs[i]
	}
	g.summary.CriticalPath = criticalPath(g.deps, costs)
	if cp := g.summary.CriticalPath.Seqs; len(cp) > 0 {
		g.summary.CriticalPath.First, g.summary.CriticalPath.Last = txns[cp[0]-1].GTID, txns[cp[len(cp)-1]-1].GTID
	}
	g.summary.Work = us(work)
	if c := g.summary.CriticalPath.Cost; c > 0 {
		g.summary.Parallelism = float64(g.summary.Work) / float64(c)
	}
	return g
}

// criticalPath returns the costliest chain. A dependency on d means
// waiting for d and, ordered commit, for every transaction before d: the
// chain through d continues from the costliest chain ending at or before
// d (a prefix maximum).
func criticalPath(deps [][]int, costs []float64) Path {
	n := len(costs)
	if n == 0 {
		return Path{}
	}
	length := make([]float64, n) // costliest chain ending at i
	count := make([]int, n)      // its transactions
	from := make([]int, n)       // the chain's previous transaction, -1 at its start
	best := make([]int, n)       // argmax of length over 0..i
	for i := range n {
		from[i] = -1
		for _, d := range deps[i] {
			b := best[d]
			if length[d] >= length[b] {
				b = d // on a tie, the dependency itself
			}
			if from[i] < 0 || length[b] > length[from[i]] {
				from[i] = b
			}
		}
		length[i], count[i] = costs[i], 1
		if f := from[i]; f >= 0 {
			length[i] += length[f]
			count[i] += count[f]
		}
		best[i] = i
		if i > 0 && length[best[i-1]] >= length[i] {
			best[i] = best[i-1]
		}
	}
	end := best[n-1]
	p := Path{Transactions: count[end], Cost: us(length[end])}
	p.Seqs = make([]int, count[end])
	for i, k := end, count[end]-1; i >= 0; i, k = from[i], k-1 {
		p.Seqs[k] = i + 1
	}
	return p
}

// hotCounter counts, per table and per key, the transactions that wait for
// an earlier one because of it, as the scheduler finds them
// (scheduler.Config.Conflict): each transaction once per table and key.
type hotCounter struct {
	namer          Namer
	byTable, byKey map[string]int64
	seenT, seenK   map[string]bool
	cur            *scheduler.Unit
}

func newHotCounter(namer Namer) *hotCounter {
	return &hotCounter{namer: namer, byTable: map[string]int64{}, byKey: map[string]int64{},
		seenT: map[string]bool{}, seenK: map[string]bool{}}
}

func (h *hotCounter) conflict(u *scheduler.Unit, c scheduler.Conflict) {
	if u != h.cur {
		h.cur = u
		clear(h.seenT)
		clear(h.seenK)
	}
	if c.Whole {
		h.count(h.tableName(c.Hash)+" (whole table)", "")
		return
	}
	table, value := "", ""
	if h.namer != nil {
		table, value = h.namer.Key(c.Hash)
	}
	if table == "" {
		table = "(unknown table)"
	}
	if value == "" {
		value = fmt.Sprintf("key %016x", c.Hash)
	}
	h.count(table, table+" "+value)
}

// count counts the current transaction for a table and a key ("": none).
func (h *hotCounter) count(table, key string) {
	if !h.seenT[table] {
		h.seenT[table] = true
		h.byTable[table]++
	}
	if key != "" && !h.seenK[key] {
		h.seenK[key] = true
		h.byKey[key]++
	}
}

func (h *hotCounter) tableName(hash uint64) string {
	if h.namer != nil {
		if s := h.namer.Table(hash); s != "" {
			return s
		}
	}
	return fmt.Sprintf("table %016x", hash)
}

// top returns the hottest tables and keys.
func (h *hotCounter) top(n int) (tables, keys []Count) {
	return topCounts(h.byTable, n), topCounts(h.byKey, n)
}
