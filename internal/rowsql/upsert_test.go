package rowsql

import (
	"slices"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// upsertTable plans a table whose primary key is its first column and its
// only unique key; fk names the columns in foreign keys; child gives it a
// foreign key of its own (the insert attempt would check it).
func upsertTable(name string, child bool, fk []int, cols ...string) *plan.Table {
	p := table(name, 1, false, cols...)
	p.Upsert = true
	for _, c := range fk {
		p.Cols[c].ForeignKey = true
	}
	if child {
		p.Parents = []plan.Parent{{Cols: fk}}
	}
	return p
}

// TestUpsertRuns: runs of updates that keep the key and change no
// foreign-key column become one INSERT ... ON DUPLICATE KEY UPDATE whose
// found rows the guard counts; any other update is an UPDATE of its own.
func TestUpsertRuns(t *testing.T) {
	stock := upsertTable("stock", true, []int{1}, "id", "item", "qty")
	plain := upsertTable("plain", false, nil, "id", "v")
	other := upsertTable("other", false, nil, "id", "v")
	noUpsert := table("uk", 1, false, "id", "v")
	unique := upsertTable("u", false, nil, "id", "email", "n")
	unique.Cols[1].Unique = true
	enum := upsertTable("en", false, nil, "id", "e")
	enum.Source.Columns[1].EnumValues = [][]byte{[]byte("a")}
	u := func(id, item, before, after int64) txn.Change {
		return upd(row(i64(id), i64(item), i64(before)), row(i64(id), i64(item), i64(after)))
	}
	enumRun := []txn.Change{upd(row(i64(1), binlog.Value{Kind: binlog.KindEnum, N: 1}), row(i64(1), binlog.Value{Kind: binlog.KindEnum, N: 0})),
		upd(row(i64(2), binlog.Value{Kind: binlog.KindEnum, N: 0}), row(i64(2), binlog.Value{Kind: binlog.KindEnum, N: 1}))}
	const odku = " ON DUPLICATE KEY UPDATE `item`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`item`),NULL),`qty`=VALUES(`qty`)"
	guard := func(n string) string { return "SET @binlane_bad=@binlane_bad+(@binlane_n<>" + n + "),@binlane_n=0" }
	type rows struct {
		p       *plan.Table
		changes []txn.Change
		flags   uint16
	}
	cases := []struct {
		name string
		in   []rows
		want []string
	}{
		{"a run of updates is one upsert, foreign-key checks off for its insert attempts",
			[]rows{{stock, []txn.Change{u(1, 7, 5, 4), u(2, 8, 5, 3), u(1, 7, 4, 2)}, 0}},
			[]string{"SET STATEMENT foreign_key_checks=0 FOR INSERT INTO `d`.`stock` (`id`,`item`,`qty`) VALUES (1,7,4),(2,8,3),(1,7,2)" + odku,
				guard("3")}},
		{"a run of one is an UPDATE",
			[]rows{{stock, []txn.Change{u(1, 7, 5, 4)}, 0}},
			[]string{"UPDATE `d`.`stock` SET `qty`=4 WHERE `id`=1"}},
		{"a session with the checks off needs no SET STATEMENT",
			[]rows{{stock, []txn.Change{u(1, 7, 5, 4), u(2, 7, 5, 4)}, binlog.RowsFlagNoForeignKeyChecks}},
			[]string{"SET SESSION foreign_key_checks=0", "INSERT INTO `d`.`stock` (`id`,`item`,`qty`) VALUES (1,7,4),(2,7,4)" + odku, guard("2"),
				"SET SESSION foreign_key_checks=1"}},
		{"a foreign-key column change is an UPDATE and ends the run",
			[]rows{{stock, []txn.Change{u(1, 7, 5, 4), u(4, 7, 5, 4), upd(row(i64(2), i64(8), i64(5)), row(i64(2), i64(9), i64(5))), u(3, 7, 1, 0)}, 0}},
			[]string{"SET STATEMENT foreign_key_checks=0 FOR INSERT INTO `d`.`stock` (`id`,`item`,`qty`) VALUES (1,7,4),(4,7,4)" + odku, guard("2"),
				"UPDATE `d`.`stock` SET `item`=9 WHERE `id`=2",
				"UPDATE `d`.`stock` SET `qty`=0 WHERE `id`=3"}},
		{"a key change is an UPDATE",
			[]rows{{plain, []txn.Change{upd(row(i64(1), i64(0)), row(i64(2), i64(0)))}, 0}},
			[]string{"UPDATE `d`.`plain` SET `id`=2 WHERE `id`=1"}},
		{"another table or kind ends the run",
			[]rows{{plain, []txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(4), i64(0)), row(i64(4), i64(1))), ins(row(i64(3), i64(3))),
				upd(row(i64(2), i64(0)), row(i64(2), i64(1)))}, 0},
				{other, []txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(1), i64(1)), row(i64(1), i64(2)))}, 0}},
			[]string{"INSERT INTO `d`.`plain` (`id`,`v`) VALUES (1,1),(4,1) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)", guard("2"),
				"INSERT INTO `d`.`plain` (`id`,`v`) VALUES (3,3)",
				"UPDATE `d`.`plain` SET `v`=1 WHERE `id`=2",
				"INSERT INTO `d`.`other` (`id`,`v`) VALUES (1,1),(1,2) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)", guard("2")}},
		{"unique values that move share a run, in source order",
			[]rows{{unique, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("b"), i64(0))), upd(row(i64(2), str("c"), i64(0)), row(i64(2), str("d"), i64(0)))}, 0}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,_utf8mb4'b',0),(2,_utf8mb4'd',0) ON DUPLICATE KEY UPDATE `email`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`email`),NULL),`n`=VALUES(`n`)", guard("2")}},
		{"two rows exchange unique values through NULL: one run, in source order",
			[]rows{{unique, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), null, i64(0))), upd(row(i64(2), str("c"), i64(0)), row(i64(2), str("a"), i64(0))),
				upd(row(i64(1), null, i64(0)), row(i64(1), str("c"), i64(0)))}, 0}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,NULL,0),(2,_utf8mb4'a',0),(1,_utf8mb4'c',0) ON DUPLICATE KEY UPDATE `email`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`email`),NULL),`n`=VALUES(`n`)", guard("3")}},
		{"a primary-key change of a table with a unique key is an UPDATE",
			[]rows{{unique, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(3), str("a"), i64(0))), upd(row(i64(2), str("c"), i64(0)), row(i64(2), str("d"), i64(0)))}, 0}},
			[]string{"UPDATE `d`.`u` SET `id`=3 WHERE `id`=1", "UPDATE `d`.`u` SET `email`=_utf8mb4'd' WHERE `id`=2"}},
		{"a table with a unique key InnoDB checks upserts the updates that keep it",
			[]rows{{unique, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("a"), i64(5))), upd(row(i64(2), str("c"), i64(0)), row(i64(2), str("c"), i64(6)))}, 0}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,_utf8mb4'a',5),(2,_utf8mb4'c',6) ON DUPLICATE KEY UPDATE `email`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`email`),NULL),`n`=VALUES(`n`)", guard("2")}},
		{"a table with a long unique key or a trigger updates row by row",
			[]rows{{noUpsert, []txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(2), i64(0)), row(i64(2), i64(1)))}, 0}},
			[]string{"UPDATE `d`.`uk` SET `v`=1 WHERE `id`=1", "UPDATE `d`.`uk` SET `v`=1 WHERE `id`=2"}},
		{"a relaxed sql_mode joins the statement's SET STATEMENT",
			[]rows{{enum, enumRun, 0}},
			[]string{"SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION' FOR INSERT INTO `d`.`en` (`id`,`e`) VALUES (1,0),(2,_utf8mb4'a')" +
				" ON DUPLICATE KEY UPDATE `e`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`e`),NULL)", guard("2")}},
	}
	for _, c := range cases {
		s := &sink{}
		w := NewWriter(s)
		w.Begin()
		for _, r := range c.in {
			for i := range r.changes {
				r.changes[i].Flags = r.flags
			}
			if err := w.Rows(t1, r.p, r.changes); err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		w.Flush()
		var got []string
		for _, q := range s.all()[2:] { // START TRANSACTION and the guards' reset
			if !strings.HasPrefix(q, "SET @binlane_bad=@binlane_bad+(ROW_COUNT()") {
				got = append(got, q)
			}
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestUpsertWithLaxAndChecksOff: both session settings go into one SET
// STATEMENT.
func TestUpsertWithLaxAndChecksOff(t *testing.T) {
	p := upsertTable("en", true, []int{0}, "id", "e")
	p.Source.Columns[1].EnumValues = [][]byte{[]byte("a")}
	s := &sink{}
	w := NewWriter(s)
	w.Begin()
	w.Rows(t1, p, []txn.Change{upd(row(i64(1), binlog.Value{Kind: binlog.KindEnum, N: 1}), row(i64(1), binlog.Value{Kind: binlog.KindEnum, N: 0})),
		upd(row(i64(2), binlog.Value{Kind: binlog.KindEnum, N: 1}), row(i64(2), binlog.Value{Kind: binlog.KindEnum, N: 1}))})
	w.Finish()
	w.Flush()
	want := "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION',foreign_key_checks=0 FOR INSERT INTO `d`.`en`"
	if got := s.all()[2]; !strings.HasPrefix(got, want) {
		t.Errorf("got %s\nwant %s...", got, want)
	}
}

// TestUpsertNotInDiagnosis: diagnosis writes one UPDATE per row, so a row
// missing on the target fails a statement that names it.
func TestUpsertNotInDiagnosis(t *testing.T) {
	p := upsertTable("plain", false, nil, "id", "v")
	s := &sink{}
	w := NewWriter(s)
	w.OneByOne = true
	w.Begin()
	w.Rows(t1, p, []txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(2), i64(0)), row(i64(2), i64(1)))})
	w.Finish()
	w.Flush()
	got := strings.Join(s.all(), "\n")
	if strings.Contains(got, "DUPLICATE") || !strings.Contains(got, "UPDATE `d`.`plain` SET `v`=1 WHERE `id`=2") {
		t.Errorf("diagnosis wrote:\n%s", got)
	}
}

// TestFlushEndsOpenStatement: a statement that commits implicitly can
// follow rows in one transaction (the applier flushes before it): a held
// update and an open multi-row statement must be sent then, whole.
func TestFlushEndsOpenStatement(t *testing.T) {
	p := upsertTable("plain", false, nil, "id", "v")
	for _, c := range []struct {
		changes []txn.Change
		want    string // the whole row statement sent
	}{
		{[]txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1)))}, // held
			"UPDATE `d`.`plain` SET `v`=1 WHERE `id`=1"},
		{[]txn.Change{upd(row(i64(1), i64(0)), row(i64(1), i64(1))), upd(row(i64(2), i64(0)), row(i64(2), i64(1)))}, // open upsert
			"INSERT INTO `d`.`plain` (`id`,`v`) VALUES (1,1),(2,1) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)"},
		{[]txn.Change{ins(row(i64(3), i64(0))), ins(row(i64(4), i64(0)))}, // open insert
			"INSERT INTO `d`.`plain` (`id`,`v`) VALUES (3,0),(4,0)"},
	} {
		s := &sink{}
		w := NewWriter(s)
		w.Begin()
		w.Rows(t1, p, c.changes)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var rows int
		for _, st := range s.stmts[0] {
			if st.Txn != nil {
				rows++
			}
		}
		if got := s.all(); rows != 1 || !slices.Contains(got, c.want) {
			t.Errorf("flushed %d row statements, want 1:\n%s\nwant %s", rows, strings.Join(got, "\n"), c.want)
		}
		if w.Pending() {
			t.Error("statements left after the flush")
		}
	}
}

// TestUpsertableWideRows: an update of a wide row that changes little of it
// is an UPDATE of the changed columns, not part of an upsert run that
// would re-send the whole row; a narrow row, or one that mostly changed,
// still joins runs.
func TestUpsertableWideRows(t *testing.T) {
	p := upsertTable("doc", false, nil, "id", "body", "n")
	big := binlog.Value{Kind: binlog.KindString, B: []byte(strings.Repeat("x", 3000))}
	big2 := binlog.Value{Kind: binlog.KindString, B: []byte(strings.Repeat("y", 3000))}
	for _, c := range []struct {
		name   string
		change txn.Change
		want   bool
	}{
		{"narrow row", upd(row(i64(1), i64(2), i64(3)), row(i64(1), i64(2), i64(4))), true},
		{"wide row, a small column changed", upd(row(i64(1), big, i64(3)), row(i64(1), big, i64(4))), false},
		{"wide row, the wide column changed", upd(row(i64(1), big, i64(3)), row(i64(1), big2, i64(3))), true},
	} {
		if got := upsertable(p, &c.change); got != c.want {
			t.Errorf("%s: upsertable %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFormOf: the one choice of a change's statement form.
func TestFormOf(t *testing.T) {
	u := keyed(upsertTable("u", false, nil, "id", "email", "n"), 1)
	plain := table("plain", 1, false, "id", "n")
	partial := func(c txn.Change) txn.Change { c.Partial = true; return c }
	keep := upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("a"), i64(1)))
	cases := []struct {
		name     string
		p        *plan.Table
		c        txn.Change
		oneByOne bool
		want     form
		shares   bool
	}{
		{"insert", u, ins(row(i64(1), str("a"), i64(0))), false, formInsert, true},
		{"partial insert", u, partial(ins(row(i64(1), str("a"), i64(0)))), false, formInsertPartial, false},
		{"delete", u, del(row(i64(1), str("a"), i64(0))), false, formDelete, true},
		{"partial delete", u, partial(del(row(i64(1), str("a"), i64(0)))), false, formDelete, true},
		{"update keeping its keys", u, keep, false, formUpsert, true},
		{"the same in diagnosis", u, keep, true, formUpdate, false},
		{"the same from a partial image", u, partial(keep), false, formUpdate, false},
		{"update of a unique value", u, upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("b"), i64(0))), false, formUpsert, true},
		{"update of the primary key", u, upd(row(i64(1), str("a"), i64(0)), row(i64(2), str("a"), i64(0))), false, formUpdate, false},
		{"update of a table that is not upserted", plain, upd(row(i64(1), i64(0)), row(i64(1), i64(1))), false, formUpdate, false},
	}
	for _, c := range cases {
		f := formOf(c.p, &c.c, c.oneByOne)
		if f != c.want || f.shares() != c.shares {
			t.Errorf("%s: form %d (shares %v), want %d (%v)", c.name, f, f.shares(), c.want, c.shares)
		}
	}
}

// TestDiagnosisOneRowPerStatement: diagnosis sends every row change as a
// statement of its own, inserts and deletes too, within a transaction and
// across the transactions of a batch: a failed round trip is then blamed
// on the row that failed. (A multi-row INSERT of rows 31-38 was once
// blamed for the duplicate of row 37 on row 31, the first it held.)
func TestDiagnosisOneRowPerStatement(t *testing.T) {
	p := upsertTable("plain", false, nil, "id", "v")
	t2 := &txn.Txn{Seq: 2}
	s := &sink{}
	w := NewWriter(s)
	w.OneByOne = true
	w.Begin()
	w.Rows(t1, p, []txn.Change{ins(row(i64(1), i64(0))), ins(row(i64(2), i64(0)))})
	w.Rows(t2, p, []txn.Change{ins(row(i64(3), i64(0))), del(row(i64(4), i64(0))), del(row(i64(5), i64(0)))})
	w.Finish()
	w.Flush()
	var rows []string
	for _, trip := range s.stmts {
		for _, st := range trip {
			if st.Txn == nil {
				continue
			}
			if st.Expect != 1 {
				t.Errorf("a diagnosis statement of %d rows (%s)", st.Expect, Describe(st))
			}
			rows = append(rows, st.Txn.Describe()+" "+st.What+" "+st.Row[0].String())
		}
	}
	want := []string{t1.Describe() + " insert 1", t1.Describe() + " insert 2", t2.Describe() + " insert 3",
		t2.Describe() + " delete 4", t2.Describe() + " delete 5"}
	if !slices.Equal(rows, want) {
		t.Errorf("diagnosis wrote statements for\n%s\nwant\n%s\nsent:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"), strings.Join(s.all(), "\n"))
	}
}
