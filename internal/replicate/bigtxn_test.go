package replicate

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/position"
)

// TestHugeTransactionStreams replicates a 200,000-row insert and a
// 100,000-row update, each far above MaxTxnBytes, between ordinary
// transactions: they must be streamed to the target in parts (never held
// whole), keep their place in the commit order, and leave the target equal
// to the source.
func TestHugeTransactionStreams(t *testing.T) {
	e := newEnv(t)
	e.src.ExecT(t, "CREATE DATABASE wl",
		"CREATE TABLE wl.big (id INT PRIMARY KEY, k INT NOT NULL, v VARCHAR(40), UNIQUE KEY (k))",
		"CREATE TABLE wl.small (id INT PRIMARY KEY, n INT)",
		"INSERT INTO wl.small VALUES (1, 0), (2, 0)")
	e.src.ExecT(t, "INSERT INTO wl.big SELECT seq, seq * 2, CONCAT('row ', seq) FROM wl.seq_1_to_200000")
	e.src.ExecT(t,
		"UPDATE wl.small SET n = n + 1 WHERE id = 1",
		"BEGIN", "UPDATE wl.big SET v = CONCAT(v, ' updated') WHERE id % 2 = 0", "UPDATE wl.small SET n = n + 1 WHERE id = 2", "COMMIT",
		"DELETE FROM wl.big WHERE id BETWEEN 1000 AND 1999",
		// A new row takes the unique value of a row the previous
		// transaction deleted: it must wait for it.
		"INSERT INTO wl.big VALUES (300000, 2000, 'reused k')",
		"UPDATE wl.small SET n = n + 10")
	end := gtidPos(t, e.src)

	cfg := e.config(t, 4)
	cfg.MaxTxnBytes = 4 << 20
	cfg.StopAtGTID = end
	obs := &Observer{}
	cfg.Observer = obs
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	t.Logf("replicated in %s", time.Since(start).Round(time.Millisecond))
	r, ok := obs.Read()
	if !ok {
		t.Fatal("no reading from the run")
	}
	if n := r.Snapshot.Serialized[apply.AloneTooLarge]; n != 2 {
		t.Errorf("%d transactions streamed, want 2 (serialized: %v)", n, r.Snapshot.Serialized)
	}
	if st := streamState(t, e.dst.OpenT(t, "")); samePos(t, st.GTID) != samePos(t, end) || st.State != position.StateStopped {
		t.Errorf("stream at %s (%s), want %s stopped", st.GTID, st.State, end)
	}
	e.verifyEqual(t)
}
