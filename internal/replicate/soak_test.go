package replicate

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/workload"
)

// The soak tests run the randomized workloads of the suite's fixed-seed
// tests over many seeds, each with its own worker count, batch size and
// timing, and end every seed with verify. They run only when asked:
//
//	make soak SOAK_FROM=1000 SOAK_N=50
//
// (BINLANE_SOAK=<first seed>, BINLANE_SOAK_N=<seeds>; a failing seed is
// rerun alone with -run 'TestSoak<Name>/<seed>'.)
func soakSeeds(t *testing.T, least int) []int64 {
	from, err := strconv.ParseInt(os.Getenv("BINLANE_SOAK"), 10, 64)
	if err != nil {
		t.Skip("a soak test: set BINLANE_SOAK to the first seed (make soak)")
	}
	n, _ := strconv.Atoi(os.Getenv("BINLANE_SOAK_N"))
	var out []int64
	for i := range max(n, least) {
		out = append(out, from+int64(i))
	}
	return out
}

// pick returns choices[seed mod len]: each seed its own combination.
func pick[T any](seed int64, choices ...T) T { return choices[seed%int64(len(choices))] }

// TestSoakReplicate: the mixed workload (conflicts, DDL, big streamed
// transactions, savepoints, the ledger) drained from a backlog on even
// seeds; on odd ones replicated while it runs, stopped at a random moment
// and resumed to the end.
func TestSoakReplicate(t *testing.T) {
	for _, seed := range soakSeeds(t, 6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			wl := workload.Config{Seed: seed, Sessions: 2 + int(seed%9), Transactions: 1200, DDL: seed%4 != 1,
				BigTxnRows: pick(seed, 0, 3000, 8000), Savepoints: seed%2 == 0, Ledger: seed%3 == 0}
			cfg := e.config(t, 1+int(seed*7%16))
			cfg.Apply.MaxBatch = pick(seed, 1, 4, 16, 128, 256)
			cfg.MaxTxnBytes = 256 << 10
			if seed%2 == 1 {
				stop := runInBackground(ctx, cfg)
				e.workload(t, ctx, wl)
				time.Sleep(time.Duration(seed%5) * 100 * time.Millisecond)
				if err := stop(); err != nil {
					t.Fatal(err)
				}
				cfg.StartGTID = "" // resume from the saved position
			} else {
				e.workload(t, ctx, wl)
			}
			cfg.StopAtGTID = gtidPos(t, e.src)
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			e.verifyEqual(t)
		})
	}
}

// TestSoakCopy: the copy under the mixed workload with random copy and
// apply worker counts, interrupted once and resumed on odd seeds, then
// replicated to the end.
func TestSoakCopy(t *testing.T) {
	for _, seed := range soakSeeds(t, 6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			e.seedCopy(t, ctx, 10000+int(seed%5)*10000)
			wlCtx, stopLoad := context.WithCancel(ctx)
			wlDone := make(chan struct{})
			go func() {
				defer close(wlDone)
				e.workload(t, wlCtx, workload.Config{Seed: seed, Sessions: 2 + int(seed%5), Duration: 6 * time.Second,
					DDL: seed%3 != 0, Ledger: seed%2 == 0, Savepoints: seed%4 == 1, BigTxnRows: pick(seed, 0, 2000)})
			}()
			time.Sleep(time.Duration(seed%4) * 200 * time.Millisecond)
			cfg := e.copyConfig(t)
			cfg.Apply.Workers = 1 + int(seed*5%8)
			cfg.Copy.Workers = 1 + int(seed%4)
			cfg.Copy.ExitWhenDone = true
			cfg.MaxTxnBytes = 256 << 10
			if seed%2 == 1 {
				runCtx, stop := context.WithTimeout(ctx, time.Duration(300+seed%7*150)*time.Millisecond)
				if err := Run(runCtx, cfg); err != nil {
					t.Fatal(err)
				}
				stop()
			}
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			stopLoad()
			<-wlDone
			e.catchUpAndVerify(t, ctx)
		})
	}
}

// TestSoakApplications: the benchmark's application workloads (cascading
// foreign keys, order entry, bulk changes, documents, the traps of Slots)
// replicated while they run, stopped and resumed to the end.
func TestSoakApplications(t *testing.T) {
	for _, seed := range soakSeeds(t, 4) {
		m := pick(seed, workload.Shop, workload.OrderEntry, workload.Bulk, workload.Docs, workload.Slots)
		t.Run(fmt.Sprint(seed, m), func(t *testing.T) {
			e := newEnv(t)
			e.grant(t, m.Schema())
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			wl := workload.Config{Mode: m, Seed: seed, Sessions: 2 + int(seed%7), Transactions: 1500, SeedOrders: 2000,
				BulkEvery: 300, BulkRows: 3000}
			db := e.src.OpenT(t, "")
			db.SetMaxOpenConns(wl.Sessions + 2)
			cfg := e.config(t, 1+int(seed*7%16))
			cfg.Apply.MaxBatch = pick(seed*3, 1, 4, 16, 128, 256)
			if m != workload.Bulk || seed%2 == 1 {
				// Otherwise the bulk changes stay whole: merged, their
				// 3,000 rows are loaded (rowsql's LOAD DATA forms).
				cfg.MaxTxnBytes = 256 << 10
			}
			stop := runInBackground(ctx, cfg)
			if err := workload.Prepare(ctx, db, wl); err != nil {
				t.Fatal(err)
			}
			st, err := workload.Run(ctx, db, wl)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("workload %s: %d committed, %d rolled back on the source", m, st.Committed.Load(), st.Failed.Load())
			settle(t, ctx, db)
			time.Sleep(time.Duration(seed%5) * 100 * time.Millisecond)
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			cfg.StartGTID = ""
			cfg.StopAtGTID = gtidPos(t, e.src)
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			verifyServers(t, e.src, e.dst, m.Schema())
			if m == workload.Bulk {
				var name, loads, joins string
				e.dst.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_load'").Scan(&name, &loads)
				e.dst.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_update_multi'").Scan(&name, &joins)
				t.Logf("bulk: %s loads and %s multi-table updates (joins) on the target (batches of up to %d, transactions up to %d bytes)",
					loads, joins, cfg.Apply.MaxBatch, cfg.MaxTxnBytes)
			}
		})
	}
}
