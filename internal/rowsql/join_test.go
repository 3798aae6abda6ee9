package rowsql

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// TestJoinRuns: an upsert run of JoinRows updates or more becomes a
// temporary table of the columns the run sets and one UPDATE that must
// find all its rows; shorter runs stay upserts.
func TestJoinRuns(t *testing.T) {
	p := upsertTable("h", false, nil, "id", "a", "v", "ts")
	p.Target = &schema.Table{Schema: "d", Name: "h"}
	stamped := upsertTable("s", false, nil, "id", "v", "ts")
	stamped.Target = &schema.Table{Schema: "d", Name: "s"}
	stamped.Cols[2].OnUpdate = true
	u := func(id, a, v int64) txn.Change {
		return upd(row(i64(id), i64(1), i64(0), i64(9)), row(i64(id), i64(a), i64(v), i64(9)))
	}
	us := func(id, v int64) txn.Change {
		return upd(row(i64(id), i64(0), i64(5)), row(i64(id), i64(v), i64(5)))
	}
	create := func(tbl, cols string) string {
		return "CREATE OR REPLACE TEMPORARY TABLE `d`.`_binlane_rows` (PRIMARY KEY (`id`)) SELECT " + cols + " FROM `d`.`" + tbl + "` LIMIT 0"
	}
	update := func(tbl, set string) string {
		return "UPDATE `d`.`" + tbl + "` `binlane_t` JOIN `d`.`_binlane_rows` `binlane_v` USING (`id`) SET " + set
	}
	const (
		setV  = "`binlane_t`.`v`=`binlane_v`.`v`"
		setAV = "`binlane_t`.`a`=`binlane_v`.`a`," + setV
		drop  = "DROP TEMPORARY TABLE `d`.`_binlane_rows`"
	)
	guard := func(n string) string { return "SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>" + n + ")" }
	cases := []struct {
		name    string
		p       *plan.Table
		changes []txn.Change
		want    []string
	}{
		{"a run shorter than JoinRows is an upsert", p, []txn.Change{u(1, 1, 1), u(2, 1, 1)},
			[]string{"INSERT INTO `d`.`h` (`id`,`a`,`v`,`ts`) VALUES (1,1,1,9),(2,1,1,9) ON DUPLICATE KEY UPDATE " +
				"`a`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`a`),NULL),`v`=VALUES(`v`),`ts`=VALUES(`ts`)",
				"SET @binlane_bad=@binlane_bad+(@binlane_n<>2),@binlane_n=0"}},
		{"a long run sends only the columns it changes", p, []txn.Change{u(1, 1, 1), u(2, 1, 2), u(3, 1, 3), u(4, 1, 4)},
			[]string{create("h", "`id`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,1),(2,2),(3,3),(4,4)",
				update("h", setV), guard("4"), drop}},
		{"the columns any held update changes", p, []txn.Change{u(1, 1, 1), u(2, 2, 0), u(3, 1, 3)},
			[]string{create("h", "`id`,`a`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`a`,`v`) VALUES (1,1,1),(2,2,0),(3,1,3)",
				update("h", setAV), guard("3"), drop}},
		{"a row updated again starts the next run", p, []txn.Change{u(1, 1, 1), u(2, 1, 2), u(1, 1, 3), u(3, 1, 4)},
			[]string{create("h", "`id`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,1),(2,2)", update("h", setV), guard("2"), drop,
				create("h", "`id`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,3),(3,4)", update("h", setV), guard("2"), drop}},
		{"a later update of another column starts the next run, with both", p,
			[]txn.Change{u(1, 1, 1), u(2, 1, 2), u(3, 1, 3), u(4, 7, 4), u(5, 1, 5)},
			[]string{create("h", "`id`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,1),(2,2),(3,3)", update("h", setV), guard("3"), drop,
				create("h", "`id`,`a`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`a`,`v`) VALUES (4,7,4),(5,1,5)", update("h", setAV), guard("2"), drop}},
		{"a row updated again that changes another column starts one run, with both", p,
			[]txn.Change{u(1, 1, 1), u(2, 1, 2), u(3, 1, 3), u(2, 7, 4), u(5, 1, 5)},
			[]string{create("h", "`id`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,1),(2,2),(3,3)", update("h", setV), guard("3"), drop,
				create("h", "`id`,`a`,`v`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`a`,`v`) VALUES (2,7,4),(5,1,5)", update("h", setAV), guard("2"), drop}},
		{"ON UPDATE columns are always set", stamped, []txn.Change{us(1, 1), us(2, 2), us(3, 3)},
			[]string{create("s", "`id`,`v`,`ts`"), "INSERT INTO `d`.`_binlane_rows` (`id`,`v`,`ts`) VALUES (1,1,5),(2,2,5),(3,3,5)",
				update("s", setV+",`binlane_t`.`ts`=`binlane_v`.`ts`"), guard("3"), drop}},
		{"a run that changes nothing still finds its rows", p, []txn.Change{u(1, 1, 0), u(2, 1, 0), u(3, 1, 0)},
			[]string{create("h", "`id`"), "INSERT INTO `d`.`_binlane_rows` (`id`) VALUES (1),(2),(3)",
				update("h", "`binlane_t`.`id`=`binlane_t`.`id`"), guard("3"), drop}},
	}
	for _, c := range cases {
		s := &sink{}
		w := NewWriter(s)
		w.JoinRows = 3
		w.Begin()
		if err := w.Rows(t1, c.p, c.changes); err != nil {
			t.Fatal(err)
		}
		w.Finish()
		w.Flush()
		got := s.all()[2:]
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestJoinRunChecks: the UPDATE of a join run must find every row of its
// temporary table (a row missing on the target leaves its count short),
// and the INSERT that fills it is exact.
func TestJoinRunChecks(t *testing.T) {
	p := upsertTable("h", false, nil, "id", "v")
	p.Target = &schema.Table{Schema: "d", Name: "h"}
	s := &sink{}
	w := NewWriter(s)
	w.JoinRows = 2
	w.Begin()
	w.Rows(t1, p, []txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(2), i64(0)), row(i64(2), i64(1)))})
	w.Finish()
	w.Flush()
	var fill, update *Stmt
	for i, st := range s.stmts[0] {
		switch {
		case strings.HasPrefix(st.What, "fill"):
			fill = &s.stmts[0][i]
		case st.What == "update (join run)":
			update = &s.stmts[0][i]
		}
	}
	if fill == nil || !fill.Exact || fill.Expect != 2 {
		t.Errorf("the INSERT into the temporary table: %+v, want exact, 2 rows", fill)
	}
	if update == nil || update.Expect != 2 || update.Txn != t1 || update.Exact {
		t.Errorf("the UPDATE: %+v, want 2 rows checked, of transaction 1", update)
	}
	err := check([]Stmt{*update}, []int64{1})
	if err == nil || !strings.Contains(err.Error(), "affected 1 rows on the target, expected 2") {
		t.Errorf("a row missing on the target: %v", err)
	}
}

// TestJoinRunCollapsed: in a merged batch, the changed rows of a
// collapsible table are a join run of the columns their net change sets
// (from the image before the batch to the last one); a row changed and
// changed back sets nothing, yet must still be found.
func TestJoinRunCollapsed(t *testing.T) {
	p := table("c", 1, true, "id", "a", "v")
	p.Upsert = true
	p.Target = &schema.Table{Schema: "d", Name: "c"}
	u := func(id, a, v, a2, v2 int64) txn.Change {
		return upd(row(i64(id), i64(a), i64(v)), row(i64(id), i64(a2), i64(v2)))
	}
	s := &sink{}
	w := NewWriter(s)
	w.JoinRows = 3
	w.Collapse = true
	w.Begin()
	w.Rows(t1, p, []txn.Change{u(1, 0, 0, 0, 1), u(2, 0, 0, 0, 1), u(1, 0, 1, 0, 2), u(3, 0, 0, 5, 0), u(3, 5, 0, 0, 0), ins(row(i64(9), i64(0), i64(0)))})
	w.Finish()
	w.Flush()
	want := []string{"INSERT INTO `d`.`c` (`id`,`a`,`v`) VALUES (9,0,0)",
		"CREATE OR REPLACE TEMPORARY TABLE `d`.`_binlane_rows` (PRIMARY KEY (`id`)) SELECT `id`,`v` FROM `d`.`c` LIMIT 0",
		"INSERT INTO `d`.`_binlane_rows` (`id`,`v`) VALUES (1,2),(2,1),(3,0)",
		"UPDATE `d`.`c` `binlane_t` JOIN `d`.`_binlane_rows` `binlane_v` USING (`id`) SET `binlane_t`.`v`=`binlane_v`.`v`",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>3)", "DROP TEMPORARY TABLE `d`.`_binlane_rows`"}
	if got := s.all()[2:]; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
