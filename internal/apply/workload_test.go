package apply

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/workload"
)

func runWorkload(t *testing.T, p *pair, cfg workload.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db := p.src.OpenT(t, "")
	db.SetMaxOpenConns(cfg.Sessions + 2)
	if err := workload.Setup(ctx, db); err != nil {
		t.Fatal(err)
	}
	st, err := workload.Run(ctx, db, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("workload: %d committed, %d rolled back on the source", st.Committed.Load(), st.Failed.Load())
}

func TestReplayRandomWorkload(t *testing.T) {
	p := newPair(t)
	runWorkload(t, p, workload.Config{Seed: 1, Sessions: 6, Transactions: 3000, DDL: true, BigTxnRows: 20000})
	for _, o := range []struct {
		name string
		opts runOpts
	}{
		{"serial", runOpts{workers: 1, maxBatch: 1}},
	} {
		st, err := p.replay(t, o.opts)
		if err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		t.Logf("%s: committed=%d serialized=%v conflicts=%d", o.name, st.Committed.Load(), st.Serialized(), len(st.Conflicts()))
	}
	p.compare(t, "wl")
}

func TestReplayRandomWorkloadParallel(t *testing.T) {
	p := newPair(t)
	runWorkload(t, p, workload.Config{Seed: 2, Sessions: 8, Transactions: 3000, DDL: true})
	st, err := p.replay(t, runOpts{workers: 8, maxBatch: 8, mode: scheduler.ModeWriteset, maxTxn: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("committed=%d serialized=%v conflicts=%v kills=%d", st.Committed.Load(), st.Serialized(), st.Conflicts(), st.LockWaitKills.Load())
	p.compare(t, "wl")
}
