package rowsql

import (
	"fmt"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/txn"
)

// TestCollapsedRangeDeletes: the deleted rows of a table with an integer
// key (plan.Table.IntKey) whose keys run on without a gap for
// rangeMinRows rows at least go as one DELETE of the range, counted one
// per row; a run cut by a row the batch keeps (updated) or never had
// (inserted and deleted in the batch), a short run and keys far apart go
// in IN lists; without IntKey, or one statement at a time, every row does.
func TestCollapsedRangeDeletes(t *testing.T) {
	h := table("h", 1, true, "id", "v")
	h.IntKey = true
	var changes []txn.Change
	for i := int64(rangeMinRows + 99); i >= -49; i-- { // -49..199, in reverse
		switch i {
		case 60: // kept: cuts the run
			changes = append(changes, upd(row(i64(i), i64(0)), row(i64(i), i64(1))))
		case 0: // new in the batch: cuts the run
			changes = append(changes, ins(row(i64(i), i64(0))), del(row(i64(i), i64(0))))
		default:
			changes = append(changes, del(row(i64(i), i64(0))))
		}
	}
	for i := range int64(rangeMinRows) { // far apart
		changes = append(changes, del(row(i64(1000+i*1000), i64(0))))
	}
	run := func(configure func(*Writer)) (ranges []string, expect []int64, in int) {
		s := writeWith(t, configure, h, changes)
		all := s.all()
		var stmts []Stmt
		for _, trip := range s.stmts {
			stmts = append(stmts, trip...)
		}
		for i, q := range all {
			switch {
			case strings.Contains(q, "BETWEEN"):
				ranges, expect = append(ranges, q), append(expect, stmts[i].Expect)
			case strings.HasPrefix(q, "DELETE"):
				in += strings.Count(q, ",") + 1
			}
		}
		return ranges, expect, in
	}
	ranges, expect, in := run(func(w *Writer) { w.Collapse = true })
	want := []string{"DELETE FROM `d`.`h` WHERE `id` BETWEEN 61 AND 199"}
	if fmt.Sprint(ranges) != fmt.Sprint(want) || fmt.Sprint(expect) != "[139]" {
		t.Errorf("ranges %q expecting %v, want %q expecting [139]", ranges, expect, want)
	}
	if want := 49 + 59 + rangeMinRows; in != want { // -49..-1, 1..59, far apart
		t.Errorf("%d rows in IN lists, want %d", in, want)
	}
	for name, configure := range map[string]func(*Writer){
		"one by one": func(w *Writer) { w.Collapse, w.OneByOne = true, true },
		"no IntKey":  func(w *Writer) { w.Collapse = true; h.IntKey = false },
	} {
		if ranges, _, in := run(configure); len(ranges) != 0 || in != 49+59+139+rangeMinRows {
			t.Errorf("%s: ranges %q, %d rows in IN lists", name, ranges, in)
		}
	}
}

// TestOrderKey: signed and unsigned keys map to unsigned values of their
// order.
func TestOrderKey(t *testing.T) {
	vals := []binlog.Value{i64(-1 << 63), i64(-1), i64(0), i64(1), i64(1<<63 - 1)}
	var last uint64
	for i, v := range vals {
		k, ok := orderKey(&v)
		if !ok || i > 0 && k <= last {
			t.Fatalf("%d: %d after %d", v.N, k, last)
		}
		last = k
	}
	u := binlog.Value{Kind: binlog.KindUint, N: -1}
	if k, ok := orderKey(&u); !ok || k != 1<<64-1 {
		t.Errorf("unsigned max: %d", k)
	}
	if _, ok := orderKey(&binlog.Value{Kind: binlog.KindString}); ok {
		t.Error("a string key was taken")
	}
}
