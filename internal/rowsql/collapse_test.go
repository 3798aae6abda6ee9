package rowsql

import (
	"strings"
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

// TestCollapseReplace: where a collapsible table's rows are written whole
// (plan.Table.WholeRows), the rows that existed and changed go as one
// REPLACE that must count 2 per row; a row updated and back stays in the
// upsert (a REPLACE would count 1 for it, as for a row missing on the
// target), new rows stay an INSERT, gone ones a DELETE. Without WholeRows
// (a target column the source lacks) every changed row is upserted.
func TestCollapseReplace(t *testing.T) {
	changes := []txn.Change{
		upd(row(i64(1), i64(0)), row(i64(1), i64(1))),
		upd(row(i64(1), i64(1)), row(i64(1), i64(2))),      // changed twice: one image
		del(row(i64(4), i64(0))), ins(row(i64(4), i64(7))), // deleted and inserted again: changed
		upd(row(i64(6), i64(0)), row(i64(6), i64(1))),
		upd(row(i64(6), i64(1)), row(i64(6), i64(0))), // back where it began
		ins(row(i64(5), i64(3))),                      // new
		del(row(i64(2), i64(0))),                      // gone
	}
	cases := []struct {
		whole bool
		want  []string
	}{
		{true, []string{
			"DELETE FROM `d`.`h` WHERE `id` IN (2)",
			"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
			"INSERT INTO `d`.`h` (`id`,`v`) VALUES (5,3)",
			"REPLACE INTO `d`.`h` (`id`,`v`) VALUES (1,2),(4,7)",
			"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>4)",
			"INSERT INTO `d`.`h` (`id`,`v`) VALUES (6,0) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)",
			"SET @binlane_bad=@binlane_bad+(@binlane_n<>1),@binlane_n=0",
		}},
		{false, []string{
			"DELETE FROM `d`.`h` WHERE `id` IN (2)",
			"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
			"INSERT INTO `d`.`h` (`id`,`v`) VALUES (5,3)",
			"INSERT INTO `d`.`h` (`id`,`v`) VALUES (1,2),(4,7),(6,0) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)",
			"SET @binlane_bad=@binlane_bad+(@binlane_n<>3),@binlane_n=0",
		}},
	}
	for _, c := range cases {
		h := table("h", 1, true, "id", "v")
		h.WholeRows = c.whole
		s := &sink{}
		w := NewWriter(s)
		w.Collapse = true
		w.Begin()
		if err := w.Rows(t1, h, changes); err != nil {
			t.Fatal(err)
		}
		w.Finish()
		w.Flush()
		var got []string
		for _, q := range s.all() {
			if strings.Contains(q, "`d`.`h`") || strings.Contains(q, "ROW_COUNT()") || strings.Contains(q, "@binlane_n<>") {
				got = append(got, q)
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("whole rows %v:\n got %q\nwant %q", c.whole, got, c.want)
		}
		if c.whole {
			for _, trip := range s.stmts {
				for _, st := range trip {
					if strings.HasPrefix(st.What, "replace") && (st.Expect != -1 || st.Table != h || st.Txn != t1) {
						t.Errorf("the REPLACE's description %+v: its rows are counted by the guard after it", st)
					}
				}
			}
		}
	}
}
