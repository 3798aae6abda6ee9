package txn_test

import (
	"context"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// sbtestPlan plans every sysbench table like a shop table: (id PK, k, c,
// pad), c UNIQUE in a _ci collation, k referencing a parent's key.
func sbtestPlan(tm *binlog.TableMap) *plan.Table {
	id := schema.Ident{Schema: tm.Schema, Table: tm.Table}
	ci := schema.ClassifyCollation("utf8mb4_general_ci", "utf8mb4")
	parent := schema.Ident{Schema: tm.Schema, Table: "parent"}
	return &plan.Table{Name: "`" + id.Schema + "`.`" + id.Table + "`", TableHash: plan.TableSeed(id),
		Cols:   []plan.Col{{Name: "id"}, {Name: "k"}, {Name: "c", Coll: ci}, {Name: "pad", Coll: ci}},
		RowKey: []int{0},
		Keys: []plan.Key{
			{Seed: plan.IndexSeed(id, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true},
			{Seed: plan.IndexSeed(id, "c"), Cols: []int{2}, Prefix: []int{0}},
		},
		Parents: []plan.Parent{{Seed: plan.IndexSeed(parent, "PRIMARY"), Cols: []int{1}, Colls: []schema.Collation{{}},
			ParentTable: plan.TableSeed(parent)}},
	}
}

// BenchmarkPipelineSysbench runs the path every source transaction takes
// before it is scheduled: decode, assemble, writeset (built in a reused key set
// and copied to an exactly sized one per transaction, as the applier
// does). It reports ns, bytes
// and allocations per transaction.
func BenchmarkPipelineSysbench(b *testing.B) {
	events := txn.FixtureEvents(b)
	plans := map[*binlog.TableMap]*plan.Table{}
	var ws writeset.Builder
	var set scheduler.KeySet
	txns := 0
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := binlog.NewDecoder()
		d.SetPosition("sysbench.binlog", 4)
		pipe := txn.NewPipe(32 << 20)
		done := make(chan error, 1)
		go func() {
			err := txn.NewAssembler(txn.NewRawSource(d, events), txn.Config{}).Run(context.Background(), pipe)
			pipe.Close()
			done <- err
		}()
		for p := range pipe.C() {
			pipe.Taken(&p)
			txns++
			// As the applier does: built in a reused set, copied exactly.
			set.Reset()
			spans := make([]writeset.Span, len(p.Body.Changes))
			for _, it := range p.Body.Items {
				if it.Kind != txn.ItemRows {
					continue
				}
				pl := plans[it.Rows.Table]
				if pl == nil {
					pl = sbtestPlan(it.Rows.Table)
					plans[it.Rows.Table] = pl
				}
				for j := it.First; j < it.Last; j++ {
					spans[j] = ws.AddChangeSpan(&set, pl, &p.Body.Changes[j])
				}
			}
			new(scheduler.KeySet).CopyFrom(&set)
		}
		if err := <-done; !errors.Is(err, io.EOF) {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(txns), "ns/txn")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(txns), "allocs/txn")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(txns), "B/txn")
}
