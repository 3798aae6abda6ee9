package replicate

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/workload"
)

// TestSlotsTraps replicates the traffic where regrouping or netting out
// rows goes wrong (workload.Slots: unique codes freed by one transaction
// and taken by a later one, two rows swapping codes inside one
// transaction, hot counters, RESTRICT foreign keys with children moved
// between parents) from a backlog, with one worker and eight, merged
// commits of one and of 128 source transactions: every run ends equal.
func TestSlotsTraps(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	db := workload.Slots.Schema()
	e.grant(t, db)
	wl := workload.Config{Mode: workload.Slots, Seed: 29, Sessions: 6, Transactions: 2000}
	src := e.src.OpenT(t, "")
	src.SetMaxOpenConns(wl.Sessions + 2)
	if err := workload.Prepare(ctx, src, wl); err != nil {
		t.Fatal(err)
	}
	start := gtidPos(t, e.src)
	st, err := workload.Run(ctx, src, wl)
	if err != nil {
		t.Fatal(err)
	}
	if f := st.Failed.Load(); f > 0 {
		t.Errorf("%d transactions rolled back on the source (sessions work on rows of their own)", f)
	}
	end := gtidPos(t, e.src)
	// The target starts as the source was at start (the seed is the same
	// statements).
	if err := workload.Prepare(ctx, e.dst.OpenT(t, ""), wl); err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ workers, batch int }{{1, 128}, {8, 128}, {8, 1}} {
		t.Run(fmt.Sprintf("w%d-b%d", c.workers, c.batch), func(t *testing.T) {
			stream := fmt.Sprintf("slots%d", i)
			cfg := e.config(t, c.workers)
			cfg.Stream, cfg.Rules, cfg.StartGTID, cfg.StopAtGTID = stream, mustRules(t, db), start, end
			cfg.Apply.MaxBatch = c.batch
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			verifyServers(t, e.src, e.dst, db)
			// The next run starts from the same backlog on a target as it
			// was before it, under a stream of its own.
			e.dst.ExecT(t, "DROP DATABASE "+db, "DELETE FROM binlane.streams WHERE name = '"+stream+"'")
			if err := workload.Prepare(ctx, e.dst.OpenT(t, ""), wl); err != nil {
				t.Fatal(err)
			}
		})
	}
}
