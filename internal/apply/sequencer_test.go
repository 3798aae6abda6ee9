package apply

import (
	"testing"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/txn"
)

// TestSequencerCarriesTempTables: the temporary tables a transaction
// changed are written with the first position saved after it, also when
// it committed in memory only (an empty transaction), and not again.
func TestSequencerCarriesTempTables(t *testing.T) {
	start, err := gtid.ParseSet("0-1-1")
	if err != nil {
		t.Fatal(err)
	}
	s := newSequencer(0, start, "b.1", 4)
	changed := `[{"server":1}]`
	tx := func(seq uint64, temps *string) []*work {
		return []*work{{t: &txn.Txn{Seq: seq, GTID: gtid.GTID{Flavor: gtid.MariaDB, ServerID: 1, Seq: seq + 1}, TempTables: temps}}}
	}
	pos, save := s.next(tx(1, &changed))
	if save.TempTables == nil || *save.TempTables != changed {
		t.Fatalf("first save: temporary tables %v", save.TempTables)
	}
	s.commit(pos, save, false) // an empty transaction: nothing written
	pos, save = s.next(tx(2, nil))
	if save.TempTables == nil || *save.TempTables != changed {
		t.Fatalf("the next save lost the unsaved change: %v", save.TempTables)
	}
	s.commit(pos, save, true)
	if _, save = s.next(tx(3, nil)); save.TempTables != nil {
		t.Fatalf("a save after the written one writes them again: %q", *save.TempTables)
	}
}
