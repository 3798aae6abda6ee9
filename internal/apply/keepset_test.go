package apply

import (
	"slices"
	"testing"
)

// TestKeepSet: a work keeps the writeset the coordinator built in its
// reused set, whatever the coordinator builds there next; a large one is
// handed over and the reused memory dropped.
func TestKeepSet(t *testing.T) {
	c := &coordinator{}
	w := &work{}
	c.wsSet.Keys = append(c.wsSet.Keys, 1, 2)
	c.wsSet.Shared = append(c.wsSet.Shared, 3)
	c.wsSet.AddTable(4, false)
	c.keepSet(w)
	if len(c.wsSet.Keys)+len(c.wsSet.Shared)+len(c.wsSet.Tables) != 0 {
		t.Fatalf("reused set not emptied: %+v", c.wsSet)
	}
	c.wsSet.Keys = append(c.wsSet.Keys, 9, 9)
	c.wsSet.Shared = append(c.wsSet.Shared, 9)
	c.wsSet.AddTable(9, true)
	if !slices.Equal(w.set.Keys, []uint64{1, 2}) || !slices.Equal(w.set.Shared, []uint64{3}) ||
		len(w.set.Tables) != 1 || w.set.Tables[0].Table != 4 {
		t.Fatalf("the work's set changed with the reused one: %+v", w.set)
	}

	big := &work{}
	c.wsSet.Reset()
	for i := range wsSetMax + 1 {
		c.wsSet.Keys = append(c.wsSet.Keys, uint64(i))
	}
	c.keepSet(big)
	if len(big.set.Keys) != wsSetMax+1 || c.wsSet.Keys != nil {
		t.Fatalf("large set: %d keys kept, reused set %d", len(big.set.Keys), cap(c.wsSet.Keys))
	}
}
