package replicate

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/workload"
)

// TestSourceFailover: binlane replicates from a source that has a native
// MariaDB replica (GTID replication, log_slave_updates); the source fails
// over to that replica, and binlane, pointed at it, goes on by GTID.
//
// The replica is behind when the old source fails: the old source
// committed transactions after the replica's last one, and binlane applied
// them to the target. Pointed at the promoted replica, binlane refuses to
// start, naming exactly those GTIDs, with the target untouched (README,
// "Changing the source"). Once the new source has them (it replicates them
// from the old source, as the README says to do), binlane goes on from its
// saved position, the old source gone, and applies the new source's own
// transactions (another server id in the same domain); the target ends
// equal to the new source, row by row.
func TestSourceFailover(t *testing.T) {
	e := newEnv(t)
	rep := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, ServerID: 3, Name: "replica"})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := rep.ReplicateFrom(ctx, e.src); err != nil {
		t.Fatal(err)
	}

	cfg := e.config(t, 4)
	stopRun := runInBackground(ctx, cfg)
	e.workload(t, ctx, workload.Config{Seed: 31, Sessions: 4, Transactions: 600, DDL: true, Ledger: true})
	if err := rep.WaitReplicated(ctx, gtidPos(t, e.src), time.Minute); err != nil {
		t.Fatal(err)
	}

	// The replica falls behind; the old source commits more, which binlane
	// applies to the target.
	replicaLast := gtidPos(t, rep)
	rep.ExecT(t, "STOP SLAVE")
	if _, err := workload.Run(ctx, e.src.OpenT(t, ""), workload.Config{Seed: 32, Sessions: 1, Transactions: 20, Ledger: true}); err != nil {
		t.Fatal(err)
	}
	oldLast := gtidPos(t, e.src)
	e.waitStream(t, "t", oldLast)
	if err := stopRun(); err != nil {
		t.Fatal(err)
	}

	// Fail over: the replica is promoted, binlane is pointed at it.
	if err := rep.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	repURL, err := rep.GrantBinlane(ctx, false, workload.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source, err = dsn.Parse(repURL); err != nil {
		t.Fatal(err)
	}
	cfg.StartGTID = "" // from the position saved in the target
	cfg.FirstTries = 1
	before := streamState(t, e.dst.OpenT(t, ""))
	refusedCtx, cancelRefused := context.WithTimeout(ctx, time.Minute)
	err = Run(refusedCtx, cfg)
	cancelRefused()
	var div *DivergedError
	first, last := nextGTID(t, replicaLast), oldLast
	if !errors.As(err, &div) || !strings.Contains(err.Error(), first+" to "+last) {
		t.Fatalf("binlane pointed at a new source that lacks %s to %s: %v", first, last, err)
	}
	t.Logf("refused: %v", err)
	after := streamState(t, e.dst.OpenT(t, ""))
	if after.GTID != before.GTID || after.Applied != before.Applied || after.State != position.StateError {
		t.Fatalf("stream after the refusal: %s (%d applied, %s), before %s (%d)", after.GTID, after.Applied, after.State, before.GTID, before.Applied)
	}

	// The new source takes the transactions it lacks from the old one,
	// then the old source is gone for good and the new one takes writes.
	if err := rep.ReplicateFrom(ctx, e.src); err != nil {
		t.Fatal(err)
	}
	if err := rep.WaitReplicated(ctx, oldLast, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := rep.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.src.Stop(); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, t: t}, nil))
	stopRun = runInBackground(ctx, cfg)
	repDB := rep.OpenT(t, "")
	repDB.SetMaxOpenConns(6)
	if _, err := workload.Run(ctx, repDB, workload.Config{Seed: 33, Sessions: 4, Transactions: 400, DDL: true, Ledger: true}); err != nil {
		t.Fatal(err)
	}
	settle(t, ctx, repDB)
	newLast := gtidPos(t, rep)
	if !strings.Contains(newLast, "-3-") {
		t.Fatalf("the new source's position %s is not its own (server id 3)", newLast)
	}
	e.waitStream(t, "t", newLast)
	if err := stopRun(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "the stream's source changed") {
		t.Error("the run from the new source did not say the source changed")
	}
	verifyServers(t, rep, e.dst, "wl")
}
