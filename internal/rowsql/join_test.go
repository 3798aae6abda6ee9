package rowsql

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// TestCollapsedRowsJoined: the changed rows of a table that can be joined
// (plan.Table.JoinBytes) go, sorted by key, as a temporary table loaded
// and joined into the target over their key range, counted one per row
// twice (load and UPDATE), when their keys run on without a gap for
// loadMinRows rows at least; the rest (a run cut short by a gap, keys far
// apart) go to the LOAD DATA ... REPLACE; without a join budget, or one
// too small for loadMinRows rows, every row does.
func TestCollapsedRowsJoined(t *testing.T) {
	h := table("h", 1, true, "id", "v")
	h.Loadable, h.Upsert, h.JoinBytes = true, true, 32
	h.Target = &schema.Table{Schema: "d", Name: "h"}
	var changes []txn.Change
	for i := int64(1499); i >= -1000; i-- { // runs of 1,500 and 999 rows, negative keys too, in reverse
		if i != 500 {
			changes = append(changes, upd(row(i64(i), i64(0)), row(i64(i), i64(i+5000))))
		}
	}
	for i := range int64(loadMinRows) { // 1,000 rows a million keys apart
		k := 1_000_000 + i*1_000_000
		changes = append(changes, upd(row(i64(k), i64(0)), row(i64(k), str("x"))))
	}
	run := func(budget int64) []Stmt {
		s := writeWith(t, func(w *Writer) { w.Collapse, w.InfilePrefix, w.JoinBudget = true, "Reader::j-", budget }, h, changes)
		all := s.all()
		var stmts []Stmt
		for _, trip := range s.stmts {
			stmts = append(stmts, trip...)
		}
		for i := range stmts {
			stmts[i].What = all[i] // the text, for the checks below
		}
		return stmts
	}
	stmts := run(32 * 5000)
	var texts []string
	for _, st := range stmts {
		texts = append(texts, st.What)
	}
	joined := strings.Join(texts, "\n")
	want := []string{
		"CREATE OR REPLACE TEMPORARY TABLE `d`.`_binlane_rows` (PRIMARY KEY (`id`)) ENGINE=MEMORY SELECT `id`,`v` FROM `d`.`h` LIMIT 0",
		"LOAD DATA LOCAL INFILE 'Reader::j-0' INTO TABLE `d`.`_binlane_rows`" + loadFormat + " (`id`,`v`)",
		"UPDATE `d`.`h` `binlane_t` STRAIGHT_JOIN `d`.`_binlane_rows` `binlane_v` ON `binlane_t`.`id`=`binlane_v`.`id` " +
			"SET `binlane_t`.`v`=`binlane_v`.`v` WHERE `binlane_t`.`id` BETWEEN -1000 AND 499",
		"DROP TEMPORARY TABLE IF EXISTS `d`.`_binlane_rows`",
		"LOAD DATA LOCAL INFILE 'Reader::j-1' REPLACE INTO TABLE `d`.`h`" + loadFormat + " (`id`,`v`)",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(joined[at:], w)
		if i < 0 {
			t.Fatalf("missing, or out of order:\n%s\nin\n%s", w, joined)
		}
		at += i + len(w)
	}
	for _, st := range stmts {
		switch {
		case strings.Contains(st.What, "INTO TABLE `d`.`_binlane_rows`"):
			lines := strings.Split(strings.TrimSuffix(string(st.File), "\n"), "\n")
			if st.Expect != 1500 || len(lines) != 1500 || lines[0] != "-1000\t4000" || lines[1499] != "499\t5499" {
				t.Errorf("temporary load expects %d, file of %d lines %q ... %q", st.Expect, len(lines), lines[0], lines[len(lines)-1])
			}
		case strings.HasPrefix(st.What, "UPDATE `d`.`h` `binlane_t`") && st.Expect != 1500:
			t.Errorf("join expects %d rows, want 1500", st.Expect)
		case strings.Contains(st.What, "REPLACE INTO") && st.Expect != 2*(999+loadMinRows):
			t.Errorf("load of the other rows expects %d, want %d", st.Expect, 2*(999+loadMinRows))
		}
	}
	for _, budget := range []int64{0, 32 * (loadMinRows - 1)} {
		for _, st := range run(budget) {
			if strings.Contains(st.What, "_binlane_rows") {
				t.Fatalf("budget %d: joined: %s", budget, st.What)
			}
		}
	}
}

// TestJoinColumns: a join loads and assigns the key, the columns one of
// its rows changed and the ON UPDATE columns; a column no row changed is
// left out of the temporary table, the file and the SET.
func TestJoinColumns(t *testing.T) {
	h := table("h", 1, true, "id", "same", "some", "up", "all")
	h.Loadable, h.Upsert, h.JoinBytes = true, true, 64
	h.Cols[3].OnUpdate = true
	h.Target = &schema.Table{Schema: "d", Name: "h"}
	var changes []txn.Change
	for i := range int64(loadMinRows) {
		before := row(i64(i), str("s"), i64(0), i64(5), i64(i))
		after := row(i64(i), str("s"), i64(0), i64(5), i64(i+1))
		if i == 500 {
			after[2] = i64(7) // "some": changed by one row only
		}
		changes = append(changes, upd(before, after))
	}
	s := writeWith(t, func(w *Writer) { w.Collapse, w.InfilePrefix, w.JoinBudget = true, "Reader::j-", 1<<20 }, h, changes)
	joined := strings.Join(s.all(), "\n")
	for _, want := range []string{
		"ENGINE=MEMORY SELECT `id`,`some`,`up`,`all` FROM `d`.`h` LIMIT 0",
		"INTO TABLE `d`.`_binlane_rows`" + loadFormat + " (`id`,`some`,`up`,`all`)",
		"SET `binlane_t`.`some`=`binlane_v`.`some`,`binlane_t`.`up`=`binlane_v`.`up`,`binlane_t`.`all`=`binlane_v`.`all` WHERE",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("missing %s\nin\n%s", want, joined)
		}
	}
	loads := 0
	for _, trip := range s.stmts {
		for _, st := range trip {
			if st.File == nil {
				continue
			}
			loads++
			if !strings.HasPrefix(string(st.File), "0\t0\t5\t1\n1\t0\t5\t2\n") {
				t.Errorf("file starts %q", st.File[:min(len(st.File), 40)])
			}
		}
	}
	if loads != 1 {
		t.Errorf("%d loads, want 1", loads)
	}
}
