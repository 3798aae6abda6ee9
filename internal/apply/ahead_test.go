package apply

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/scheduler"
)

// TestAheadGivesWay: the first batch's last round trip waits for a row
// lock another session holds on the target and fails (lock wait timeout)
// while its worker holds the next batch, rendered ahead and chained on
// it (every transaction updates the same row). The next batch must be
// handed back unapplied: with one worker, a batch that waited for the
// failed one's retry would wait for itself, until the replay's deadline.
// Both run again and the target ends equal.
func TestAheadGivesWay(t *testing.T) {
	p := newPair(t)
	ddl := []string{"CREATE DATABASE app", "CREATE TABLE app.hot (id INT PRIMARY KEY, v INT NOT NULL)", "INSERT INTO app.hot VALUES (1, 0)"}
	p.src.ExecT(t, ddl...)
	p.dst.ExecT(t, ddl...)
	var pos string
	if err := p.src.OpenT(t, "").QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	start, err := gtid.ParseSet(pos)
	if err != nil {
		t.Fatal(err)
	}
	p.src.ExecT(t, "BEGIN NOT ATOMIC FOR i IN 1..2000 DO UPDATE app.hot SET v = v + 1 WHERE id = 1; END FOR; END")

	ctx := context.Background()
	lock, err := p.dst.OpenT(t, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	for _, q := range []string{"BEGIN", "SELECT v FROM app.hot WHERE id = 1 FOR UPDATE"} {
		if _, err := lock.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		_, err := lock.ExecContext(ctx, "ROLLBACK")
		released <- err
	}()
	st, err := p.replay(t, runOpts{workers: 1, maxBatch: 128, mode: scheduler.ModeWriteset, start: start, lockWait: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	t.Logf("rendered ahead %d, handed back %d, retries %d", st.RenderedAhead.Load(), st.AheadGaveWay.Load(), retries(st))
	if st.AheadGaveWay.Load() == 0 {
		t.Fatal("no batch taken ahead was handed back: the test did not reach the case")
	}
	p.compare(t, "app")
}
