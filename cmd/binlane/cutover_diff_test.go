package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
)

// TestCutoverRollsBackOnDifference plants a row on the target while the
// source is frozen (between the freeze and the catch-up): the cut-over's
// verify at the final position finds it and the cut-over rolls back as the
// README says: exit 2, the source writable again, the stream running (it
// applies the source's next write), not cut over. Once the planted row is
// gone, the two servers compare equal row by row.
func TestCutoverRollsBackOnDifference(t *testing.T) {
	a, b := cutoverServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	aDB, bDB := a.OpenT(t, ""), b.OpenT(t, "")
	a.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v INT)", "INSERT INTO wl.t SELECT seq, 0 FROM wl.seq_1_to_100")
	aApp := appAccount(t, a)
	srcURL, dstURL := binlaneURL(t, a, "wl"), binlaneURL(t, b, "wl")
	aCut, err := a.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	bCut, err := b.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	_, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "diff", "--databases", "wl", "--heartbeat", "500ms")
	defer stop()
	waitStreamReady(t, bDB, "diff", done)

	// The hook runs inside the cut-over, right after the freeze: a write
	// that reaches the target behind binlane's back at the switch point.
	var frozenWhenPlanted, planted bool
	cutoverStepHook = func(step string) {
		if step != "frozen" {
			return
		}
		frozenWhenPlanted = readOnly(t, aDB)
		if _, err := bDB.ExecContext(ctx, "INSERT INTO wl.t VALUES (1000, 7)"); err != nil {
			t.Errorf("plant a row on the target: %v", err)
			return
		}
		planted = true
	}
	defer func() { cutoverStepHook = nil }()
	out, code := runCutoverCmd(t, ctx, "--stream", "diff", "--databases", "wl", "--source", aCut, "--target", bCut, "--json")
	cutoverStepHook = nil
	if !planted || !frozenWhenPlanted {
		t.Fatalf("the row was not planted while the source was frozen (planted %v, source read-only then %v)", planted, frozenWhenPlanted)
	}
	r := parseCutover(t, out)
	if code != exitFailed || !r.RolledBack || r.Verified || !strings.Contains(r.Error, "verify found differences") || !strings.Contains(r.Error, "1000") {
		t.Fatalf("cut-over with a row planted on the target: exit %d, want %d, rolled back and the row named: %+v", code, exitFailed, r)
	}

	// Rolled back: the source takes writes again, the stream is not cut
	// over, holds no pause and applies what the application writes next.
	if readOnly(t, aDB) {
		t.Fatal("the source is still read-only after the rollback")
	}
	var journal string
	if err := bDB.QueryRowContext(ctx, "SELECT state FROM binlane.cutover WHERE stream = 'diff'").Scan(&journal); err != nil || journal != position.CutoverRolledBack {
		t.Fatalf("cut-over journal: %q (%v), want %q", journal, err, position.CutoverRolledBack)
	}
	if _, err := aApp.ExecContext(ctx, "UPDATE wl.t SET v = 5 WHERE id = 2"); err != nil {
		t.Fatalf("the application cannot write to the source after the rollback: %v", err)
	}
	waitFor(t, 30*time.Second, "the source's write after the rollback on the target", func() bool {
		var v int
		bDB.QueryRow("SELECT v FROM wl.t WHERE id = 2").Scan(&v)
		return v == 5
	})
	st, _, err := position.Load(ctx, bDB, "diff")
	if err != nil || st.State != position.StateRunning || st.PauseAt != "" {
		t.Fatalf("stream after the rollback: state %q, pause %q (%v)", st.State, st.PauseAt, err)
	}
	select {
	case err := <-done:
		t.Fatalf("replicate ended after the rollback: %v", err)
	default:
	}

	// The planted row is the only difference.
	b.ExecT(t, "DELETE FROM wl.t WHERE id = 1000")
	verifyEqual(t, a.OpenT(t, ""), b.OpenT(t, ""), "wl")
	stop()
	if err := <-done; err != nil {
		t.Fatalf("replicate: %v", err)
	}
}
