package apply

import (
	"testing"

	"github.com/binlane/binlane/internal/scheduler"
)

// TestDomainsConflictKeepOrder: in writeset mode GTID domains commit
// independently, but transactions of different domains that change the
// same row keep their source order (fail closed): a slow transaction of
// domain 1 and a later one of domain 2 update one row (v+1 then v*10,
// which do not commute), or replace and delete one unique value by two
// spellings; the target must end equal to the source.
func TestDomainsConflictKeepOrder(t *testing.T) {
	p := newPair(t)
	lockWaitWorkload(t, p)
	if _, err := p.replay(t, runOpts{workers: 4, maxBatch: 1, mode: scheduler.ModeWriteset}); err != nil {
		t.Fatal(err)
	}
	p.compare(t, "dl")
	var v int
	if err := p.dst.OpenT(t, "").QueryRow("SELECT v FROM dl.t WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != 111110 { // ((((0+1)*10+1)*10+1)*10+1)*10+1)*10
		t.Fatalf("v = %d on the target, want 111110", v)
	}
}
