package analyze

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
)

// mk builds a transaction from a compact description: "k1,k2" are row
// keys, "X:t" takes table t whole, "T:t" shares it, "B" runs alone (ddl),
// "g7" sets commit id 7.
func mk(i int, desc string) Txn {
	t := Txn{GTID: fmt.Sprintf("0-1-%d", i+1), Rows: 1, Bytes: 100, Set: &scheduler.KeySet{}}
	for _, f := range strings.Split(desc, ",") {
		switch {
		case f == "":
		case f == "B":
			t.Alone, t.Set = AloneDDL, nil
		case strings.HasPrefix(f, "X:"):
			t.Set.Tables = append(t.Set.Tables, scheduler.TableAccess{Table: hash(f[2:]), Exclusive: true})
		case strings.HasPrefix(f, "T:"):
			t.Set.Tables = append(t.Set.Tables, scheduler.TableAccess{Table: hash(f[2:])})
		case strings.HasPrefix(f, "g"):
			fmt.Sscan(f[1:], &t.CommitID)
		default:
			t.Set.Keys = append(t.Set.Keys, hash(f))
		}
	}
	return t
}

func txns(descs ...string) []Txn {
	out := make([]Txn, len(descs))
	for i, d := range descs {
		out[i] = mk(i, d)
	}
	return out
}

func hash(s string) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// unitModel costs 100 µs per transaction and nothing else.
func unitModel() Model {
	return Model{PerTxn: 100 * time.Microsecond, MaxBatch: 1, MaxBatchBytes: 4 << 20}
}

func TestCriticalPathOfGraphs(t *testing.T) {
	cases := []struct {
		name  string
		txns  []string
		want  []int // the path's transactions (1-based)
		edges int
	}{
		{"independent", []string{"a", "b", "c", "d"}, []int{1}, 0},
		{"one hot row", []string{"a", "a", "a", "a"}, []int{1, 2, 3, 4}, 3},
		{"two interleaved chains", []string{"a", "b", "a", "b"}, []int{1, 3}, 2},
		{"join of two chains", []string{"a", "b", "a,b"}, []int{1, 3}, 2},
		{"barrier", []string{"a", "b", "B", "c", "d"}, []int{2, 3, 4}, 3},
		{"exclusive table waits for the earlier users of its table", []string{"a", "T:t,b", "X:t", "T:t,c", "d"}, []int{2, 3, 4}, 2},
		{"chain after an independent prefix", []string{"x", "y", "a", "a", "a", "z"}, []int{3, 4, 5}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := buildGraph(txns(c.txns...), unitModel(), newHotCounter(nil))
			cp := g.summary.CriticalPath
			if !slices.Equal(cp.Seqs, c.want) || cp.Transactions != len(c.want) {
				t.Errorf("critical path %v (%d), want %v", cp.Seqs, cp.Transactions, c.want)
			}
			if want := time.Duration(len(c.want)) * 100 * time.Microsecond; cp.Cost != want {
				t.Errorf("cost %v, want %v", cp.Cost, want)
			}
			if g.summary.Edges != c.edges {
				t.Errorf("edges %d, want %d", g.summary.Edges, c.edges)
			}
			if want := float64(len(c.txns)) / float64(len(c.want)); g.summary.Parallelism != want {
				t.Errorf("parallelism %.2f, want %.2f", g.summary.Parallelism, want)
			}
		})
	}
}

// TestCriticalPathWeights: a dependency on d waits for everything up to d
// (ordered commit), and costs decide between chains.
func TestCriticalPathWeights(t *testing.T) {
	cases := []struct {
		name  string
		deps  [][]int
		costs []float64
		want  []int
		cost  float64
	}{
		{"heavy independent transaction", [][]int{{}, {}, {0}, {1}}, []float64{1, 5, 1, 1}, []int{2, 4}, 6},
		{"a dependency covers what precedes it", [][]int{{}, {}, {1}}, []float64{5, 1, 1}, []int{1, 3}, 6},
		{"not what follows it", [][]int{{}, {}, {0}}, []float64{1, 5, 1}, []int{2}, 5},
		{"longest of two dependencies", [][]int{{}, {0}, {}, {1, 2}}, []float64{2, 2, 3, 1}, []int{1, 2, 4}, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := criticalPath(c.deps, c.costs)
			if !slices.Equal(p.Seqs, c.want) || p.Cost != us(c.cost) {
				t.Errorf("path %v cost %v, want %v cost %v", p.Seqs, p.Cost, c.want, us(c.cost))
			}
		})
	}
}

func TestSimulatedSpeedups(t *testing.T) {
	indep := txns("a", "b", "c", "d", "e", "f", "g", "h")
	hot := txns("a", "a", "a", "a", "a", "a", "a", "a")
	groups := txns("a,g10", "a,g10", "a,g10", "a,g10", "a,g11", "a,g11", "a,g11", "a,g11")
	commitBound := unitModel()
	commitBound.Commit = 100 * time.Microsecond
	twoCores := unitModel()
	twoCores.Cores = 2
	merging := unitModel()
	merging.MaxBatch, merging.Commit = 128, 400*time.Microsecond
	intake := unitModel()
	intake.Intake = 50 * time.Microsecond
	cases := []struct {
		name       string
		txns       []Txn
		mode       Mode
		model      Model
		workers    int
		want       time.Duration
		bottleneck string
	}{
		{"independent, 1 worker", indep, ModeWriteset, unitModel(), 1, 800 * time.Microsecond, "workers"},
		{"independent, 2 workers", indep, ModeWriteset, unitModel(), 2, 400 * time.Microsecond, "workers"},
		{"independent, 8 workers", indep, ModeWriteset, unitModel(), 8, 100 * time.Microsecond, "workers"},
		{"independent, 16 workers", indep, ModeWriteset, unitModel(), 16, 100 * time.Microsecond, "dependencies"},
		{"hot row, 8 workers", hot, ModeWriteset, unitModel(), 8, 800 * time.Microsecond, "dependencies"},
		{"group commits, 4 workers", groups, ModeCommitOrder, unitModel(), 4, 200 * time.Microsecond, "workers"},
		{"group commits in writeset mode", groups, ModeWriteset, unitModel(), 4, 800 * time.Microsecond, "dependencies"},
		{"commits one at a time", indep, ModeWriteset, commitBound, 8, 900 * time.Microsecond, "commit"},
		{"two cores", indep, ModeWriteset, twoCores, 8, 400 * time.Microsecond, "cpu"},
		// The first transaction goes alone (no backlog yet), the other
		// seven in one batch.
		{"merged", indep, ModeWriteset, merging, 1, 1600 * time.Microsecond, "workers"},
		{"intake bound", indep, ModeWriteset, intake, 8, 500 * time.Microsecond, "intake"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Simulate(c.txns, c.mode, c.workers, c.model)
			if d := r.Elapsed - c.want; d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("elapsed %v, want %v", r.Elapsed, c.want)
			}
			if r.Bottleneck != c.bottleneck {
				t.Errorf("bottleneck %s, want %s (%+v)", r.Bottleneck, c.bottleneck, r)
			}
		})
	}
}

// TestSimulationDeterministic: the same input gives the same result.
func TestSimulationDeterministic(t *testing.T) {
	var descs []string
	for i := range 2000 {
		descs = append(descs, fmt.Sprintf("k%d,k%d", i*7919%300, i*104729%5000))
	}
	in := txns(descs...)
	m := DefaultModel(true)
	a, b := Simulate(in, ModeWriteset, 8, m), Simulate(in, ModeWriteset, 8, m)
	if a != b {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
}

type namer map[uint64][2]string

func (n namer) Key(h uint64) (string, string) { return n[h][0], n[h][1] }
func (n namer) Table(h uint64) string         { return n[h][0] }

func TestAnalyzeReport(t *testing.T) {
	// The first transaction holds key a twice (a row and a reference to
	// it): no wait. The fifth changes two tables.
	in := txns("a,a,T:t1", "b,T:t1,T:t3", "a,T:t1", "B", "c,T:t2", "a,T:t1", "X:t3", "d")
	one := func(name string) []TableRows { return []TableRows{{name, 1}} }
	in[0].Tables, in[1].Tables, in[2].Tables = one("db.t1"), []TableRows{{"db.t1", 1}, {"db.t3", 0}}, one("db.t1")
	in[4].Tables, in[5].Tables, in[6].Tables = []TableRows{{"db.t2", 8}, {"db.t1", 2}}, one("db.t1"), one("db.t3")
	in[4].Rows = 10
	n := namer{hash("a"): {"db.t1", "PRIMARY (1)"}, hash("t3"): {"db.t3", ""}}
	r := Analyze(in, Options{Model: unitModel(), Workers: []int{1, 2, 4}, Namer: n})
	if r.Transactions != 8 || r.Rows != 17 || r.Bytes != 800 || r.Tables != 3 {
		t.Errorf("counts: %d txns, %d rows, %d bytes, %d tables", r.Transactions, r.Rows, r.Bytes, r.Tables)
	}
	if r.FirstGTID != "0-1-1" || r.LastGTID != "0-1-8" {
		t.Errorf("range %s..%s", r.FirstGTID, r.LastGTID)
	}
	// Rows go to the table they changed, not to a transaction's first.
	if want := []Count{{"db.t2", 8}, {"db.t1", 6}, {"db.t3", 1}}; !slices.Equal(r.TablesByRows, want) {
		t.Errorf("tables by rows: %v, want %v", r.TablesByRows, want)
	}
	if len(r.Alone) != 1 || r.Alone[0] != (AloneCount{Reason: AloneDDL, Count: 1, First: "0-1-4"}) {
		t.Errorf("alone: %+v", r.Alone)
	}
	// Key a: transactions 3 and 6 wait for an earlier holder.
	if len(r.HotKeys) == 0 || r.HotKeys[0] != (Count{"db.t1 PRIMARY (1)", 2}) {
		t.Errorf("hot keys: %v", r.HotKeys)
	}
	if !slices.Contains(r.HotTables, Count{"db.t1", 2}) || !slices.Contains(r.HotTables, Count{"db.t3 (whole table)", 1}) {
		t.Errorf("hot tables: %v", r.HotTables)
	}
	if len(r.Simulations) != 3 || r.Simulations[0].Writeset.Speedup != 1 {
		t.Fatalf("simulations: %+v", r.Simulations)
	}
	if r.Recommendation.Workers < 1 || r.Recommendation.Reason == "" {
		t.Errorf("recommendation: %+v", r.Recommendation)
	}
}

func TestRecommend(t *testing.T) {
	row := func(w int, tps float64, b string) SimRow {
		return SimRow{Workers: w, Writeset: SimResult{TxnPerSec: tps, Speedup: tps / 100, Bottleneck: b}}
	}
	cases := []struct {
		name string
		rows []SimRow
		want int
		says string
	}{
		{"smallest within 10% of the best", []SimRow{row(1, 100, "workers"), row(2, 190, "workers"), row(4, 280, "workers"),
			row(8, 300, "commit"), row(16, 290, "commit")}, 4, "the target's commits"},
		{"serial workload", []SimRow{row(1, 100, "dependencies"), row(2, 101, "dependencies"), row(4, 102, "dependencies")}, 1,
			"wait for earlier ones"},
		{"still scaling at the largest count", []SimRow{row(1, 100, "workers"), row(2, 200, "workers"), row(4, 400, "workers")}, 4,
			"more may help"},
		{"best is the smallest within reach", []SimRow{row(1, 100, "workers"), row(2, 150, "cpu"), row(4, 140, "cpu")}, 2,
			"simulate fastest"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := Recommend(c.rows, Graph{Parallelism: 1.2})
			if r.Workers != c.want || !strings.Contains(r.Reason, c.says) {
				t.Errorf("got %+v, want %d workers and %q", r, c.want, c.says)
			}
		})
	}
}

func TestRecommendLive(t *testing.T) {
	s := time.Second
	cases := []struct {
		name                              string
		workers                           int
		busy, depWait, cWait, commit, all time.Duration
		want                              int
		says                              string
	}{
		{"no figures", 4, 0, 0, 0, 0, 0, 4, "no figures"},
		{"all busy", 4, 36 * s, 0, 1 * s, 2 * s, 10 * s, 8, "more may help"},
		{"commit turn waits", 8, 24 * s, 0, 48 * s, 4 * s, 10 * s, 4, "ordered commits"},
		{"serial workload", 8, 10 * s, 600 * s, 5 * s, 5 * s, 10 * s, 2, "serial"},
		// Keeping up with 300 trx/s, each transaction waiting some 20 ms
		// for the one before it: 6 waiting on average, not a backlog.
		{"keeping up, waits on commits", 4, 22 * s, 360 * s, 4 * s, 4 * s, 60 * s, 1, "source's rate"},
		{"source rate", 8, 10 * s, 1 * s, 2 * s, 4 * s, 10 * s, 2, "source's rate"},
		// A quiet, caught-up stream: transactions waited a little on one
		// another, more than the workers were busy, yet it is not serial.
		{"quiet stream", 3, 30 * time.Millisecond, 60 * time.Millisecond, 0, 60 * time.Millisecond, 3 * s, 1, "source's rate"},
		{"balanced", 4, 24 * s, 0, 4 * s, 4 * s, 10 * s, 4, "fits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := RecommendLive(c.workers, c.busy, c.depWait, c.cWait, c.commit, c.all)
			if r.Workers != c.want || !strings.Contains(r.Reason, c.says) {
				t.Errorf("got %+v, want %d and %q", r, c.want, c.says)
			}
		})
	}
}

// TestDefaultBatchPerWorkers: a model without a --max-batch simulates each
// worker count with replicate's own default (256 for every count), and a
// set one bounds every count alike.
func TestDefaultBatchPerWorkers(t *testing.T) {
	descs := make([]string, 1200)
	for i := range descs {
		descs[i] = fmt.Sprintf("k%d", i)
	}
	indep := txns(descs...)
	perWorker := DefaultModel(false)
	set := DefaultModel(false)
	set.MaxBatch = 64
	for _, c := range []struct {
		model          Model
		workers, want  int
		minPer, maxPer float64
	}{
		{perWorker, 1, 256, 129, 256}, {perWorker, 4, 256, 1, 256},
		{set, 1, 64, 1, 64}, {set, 4, 64, 1, 64},
	} {
		r := Simulate(indep, ModeWriteset, c.workers, c.model)
		if r.MaxBatch != c.want {
			t.Errorf("max batch %d, %d workers: simulated with %d, want %d", c.model.MaxBatch, c.workers, r.MaxBatch, c.want)
		}
		if r.TxnPerCommit < c.minPer || r.TxnPerCommit > c.maxPer {
			t.Errorf("max batch %d, %d workers: %.1f transactions per commit, want %.0f-%.0f",
				c.model.MaxBatch, c.workers, r.TxnPerCommit, c.minPer, c.maxPer)
		}
	}
}
