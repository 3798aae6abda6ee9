package txn

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

// TestResolveRollbacks replays what a source keeps of transactions that
// mix a transactional table (i) and a non-transactional one (m): rows of m
// survive every rollback, rows of i only those before the savepoint rolled
// back to.
func TestResolveRollbacks(t *testing.T) {
	i := &binlog.TableMap{Schema: "s", Table: "i"}
	m := &binlog.TableMap{Schema: "s", Table: "m"}
	rows := func(tm *binlog.TableMap, n int) Item {
		return Item{Kind: ItemRows, Rows: &binlog.RowsEvent{Table: tm}, First: n, Last: n + 1}
	}
	sp := func(k ItemKind, name string) Item { return Item{Kind: k, Savepoint: name} }
	cases := []struct {
		name       string
		items      []Item
		rolledBack bool
		want       string // First of the kept items
	}{
		{"rollback to undoes transactional rows after the savepoint",
			[]Item{rows(i, 1), sp(ItemSavepoint, "a"), rows(m, 2), rows(i, 3), sp(ItemRollbackTo, "a"), rows(i, 4)}, false, "1 2 4"},
		{"final rollback keeps only non-transactional rows",
			[]Item{rows(i, 1), rows(m, 2), rows(i, 3)}, true, "2"},
		{"nested savepoints: rolling back to the outer forgets the inner",
			[]Item{sp(ItemSavepoint, "a"), rows(i, 1), sp(ItemSavepoint, "b"), rows(i, 2), sp(ItemRollbackTo, "A"), rows(i, 3), sp(ItemRollbackTo, "a")}, false, ""},
		{"rollback to twice", []Item{rows(i, 1), sp(ItemSavepoint, "a"), rows(i, 2), sp(ItemRollbackTo, "a"), rows(m, 3), rows(i, 4), sp(ItemRollbackTo, "a"), rows(i, 5)}, false, "1 3 5"},
		{"release then rollback to an earlier one",
			[]Item{sp(ItemSavepoint, "a"), rows(i, 1), sp(ItemSavepoint, "b"), rows(i, 2), sp(ItemRelease, "b"), sp(ItemRollbackTo, "a")}, false, ""},
		{"a savepoint set again moves", []Item{sp(ItemSavepoint, "a"), rows(i, 1), sp(ItemSavepoint, "a"), rows(i, 2), sp(ItemRollbackTo, "a")}, false, "1"},
	}
	tx := func(tm *binlog.TableMap) (bool, error) { return tm.Table == "i", nil }
	for _, c := range cases {
		got, err := ResolveRollbacks(&Txn{RolledBack: c.rolledBack}, Body{Items: c.items}, tx)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var firsts []string
		for _, it := range got {
			if it.Kind != ItemRows {
				t.Fatalf("%s: a savepoint item survived: %+v", c.name, it)
			}
			firsts = append(firsts, string(rune('0'+it.First)))
		}
		if s := strings.Join(firsts, " "); s != c.want {
			t.Errorf("%s: kept %q, want %q", c.name, s, c.want)
		}
	}
	if _, err := ResolveRollbacks(&Txn{}, Body{Items: []Item{sp(ItemRollbackTo, "x")}}, tx); err == nil {
		t.Error("ROLLBACK TO an unknown savepoint: no error")
	}
}
