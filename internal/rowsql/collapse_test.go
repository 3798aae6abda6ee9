package rowsql

import (
	"testing"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// TestCollapseLargeBodySizedOnce: the collapser sizes a table's rows and
// index once for a large body instead of doubling them row by row (a
// 100,000-row transaction copied and faulted them in again and again).
// Counted in allocations of the collapser alone, whatever the body.
func TestCollapseLargeBodySizedOnce(t *testing.T) {
	h := table("h", 1, true, "id", "v")
	const n = 20000
	body := &txn.Body{Items: []txn.Item{{Kind: txn.ItemRows, First: 0, Last: n}}}
	for i := range n {
		body.Changes = append(body.Changes, upd(row(i64(int64(i)), i64(0)), row(i64(int64(i)), i64(1))))
	}
	plans := []*plan.Table{h}
	allocs := testing.AllocsPerRun(3, func() {
		var c collapser
		c.reserve(body, plans)
		for i := range body.Changes {
			c.add(t1, h, &body.Changes[i])
		}
		if got := len(c.byPlan[h].rows); got != n {
			t.Fatalf("%d rows collapsed, want %d", got, n)
		}
	})
	// The table, its map of tables, the rows' array and the index (a map
	// of n entries: its groups and directory, a few dozen allocations).
	t.Logf("%.0f allocations", allocs)
	if allocs > 100 {
		t.Fatalf("%.0f allocations to collapse %d rows: the collapser grew its arrays row by row", allocs, n)
	}
	var small collapser
	small.reserve(&txn.Body{Items: []txn.Item{{Kind: txn.ItemRows, First: 0, Last: 10}}, Changes: body.Changes[:10]}, plans)
	if len(small.tables) != 0 {
		t.Fatalf("a small body was sized: %d tables", len(small.tables))
	}
}
