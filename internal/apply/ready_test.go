package apply

import (
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestReadyAfterWorkersConnect: Start.Ready runs once, when every worker's
// connection is open and before anything is applied (the stream waits for
// it before it reads: see replica.Open).
func TestReadyAfterWorkersConnect(t *testing.T) {
	p := newPair(t)
	p.src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1), (2)")
	root := p.dst.OpenT(t, "")
	calls, conns, applied := 0, 0, -1
	ready := func() {
		calls++
		if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", sandbox.TargetUser).Scan(&conns); err != nil {
			t.Error(err)
		}
		if err := root.QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'app'").Scan(&applied); err != nil {
			t.Error(err)
		}
	}
	const workers = 4
	if _, err := p.replay(t, runOpts{workers: workers, ready: ready}); err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if calls != 1 {
		t.Errorf("Ready called %d times, want once", calls)
	}
	// The workers' connections and the metadata pool's.
	if conns < workers {
		t.Errorf("%d binlane connections on the target when Ready ran, want the %d workers' at least", conns, workers)
	}
	if applied != 0 {
		t.Error("the first transaction (CREATE DATABASE app) was applied before Ready")
	}
}
