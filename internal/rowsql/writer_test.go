package rowsql

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// sink keeps what a Writer sends.
type sink struct {
	trips [][]string // statements of each round trip
	stmts [][]Stmt
}

// Send answers every statement with the count it expects.
func (s *sink) Send(sql []byte, stmts []Stmt) ([]int64, error) {
	var trip []string
	for _, q := range strings.Split(strings.TrimSuffix(string(sql), ";\n"), ";\n") {
		trip = append(trip, q)
	}
	s.trips = append(s.trips, trip)
	kept := append([]Stmt(nil), stmts...)
	for i := range kept {
		kept[i].File = append([]byte(nil), kept[i].File...) // the writer reuses its buffer
	}
	s.stmts = append(s.stmts, kept)
	counts := make([]int64, len(stmts))
	for i, st := range stmts {
		counts[i] = max(st.Expect, 0)
	}
	return counts, nil
}

func (s *sink) all() []string {
	var out []string
	for _, t := range s.trips {
		out = append(out, t...)
	}
	return out
}

// table plans a test table: columns by name, the first rowKey of them
// identify a row; utf8mb4 strings unless a column is named bin*.
func table(name string, rowKey int, collapsible bool, cols ...string) *plan.Table {
	p := &plan.Table{Name: "`d`.`" + name + "`", Source: &binlog.TableMap{Schema: "d", Table: name}, Collapsible: collapsible}
	for i, c := range cols {
		col := plan.Col{Name: c, Quoted: "`" + c + "`", Target: i, Introducer: "utf8mb4"}
		if strings.HasPrefix(c, "bin") {
			col.Introducer = ""
		}
		p.Cols = append(p.Cols, col)
		p.Source.Columns = append(p.Source.Columns, binlog.Column{Name: c})
		p.Write = append(p.Write, i)
		if i < rowKey {
			p.RowKey = append(p.RowKey, i)
		}
	}
	return p
}

func i64(n int64) binlog.Value  { return binlog.Value{Kind: binlog.KindInt, N: n} }
func str(s string) binlog.Value { return binlog.Value{Kind: binlog.KindString, B: []byte(s)} }

var null = binlog.Value{Kind: binlog.KindNull}

func row(v ...binlog.Value) []binlog.Value { return v }
func ins(after []binlog.Value) txn.Change  { return txn.Change{Kind: binlog.RowsInsert, After: after} }
func del(before []binlog.Value) txn.Change {
	return txn.Change{Kind: binlog.RowsDelete, Before: before}
}
func upd(before, after []binlog.Value) txn.Change {
	return txn.Change{Kind: binlog.RowsUpdate, Before: before, After: after}
}

var t1 = &txn.Txn{Seq: 1}

func TestOrderedStatements(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	pair := table("pair", 2, false, "a", "b", "c")
	nokey := table("nokey", 0, false, "a", "b")
	cases := []struct {
		name    string
		p       *plan.Table
		changes []txn.Change
		want    []string // row statements (guards left out)
		expects []int64
	}{
		{"inserts merge into one statement", kv, []txn.Change{ins(row(i64(1), str("a"))), ins(row(i64(2), null))},
			[]string{"INSERT INTO `d`.`kv` (`k`,`v`) VALUES (1,_utf8mb4'a'),(2,NULL)"}, []int64{2}},
		{"deletes by key in one IN list", kv, []txn.Change{del(row(i64(1), str("a"))), del(row(i64(2), str("b")))},
			[]string{"DELETE FROM `d`.`kv` WHERE `k` IN (1,2)"}, []int64{2}},
		{"composite keys delete with OR", pair, []txn.Change{del(row(i64(1), i64(2), null)), del(row(i64(3), i64(4), null))},
			[]string{"DELETE FROM `d`.`pair` WHERE (`a`=1 AND `b`=2) OR (`a`=3 AND `b`=4)"}, []int64{2}},
		{"an update writes the changed columns only", pair, []txn.Change{upd(row(i64(1), i64(2), str("x")), row(i64(1), i64(2), str("y")))},
			[]string{"UPDATE `d`.`pair` SET `c`=_utf8mb4'y' WHERE `a`=1 AND `b`=2"}, []int64{1}},
		// An update that changes nothing still checks the row is there.
		{"an update without change checks the row exists", kv, []txn.Change{upd(row(i64(7), str("same")), row(i64(7), str("same")))},
			[]string{"UPDATE `d`.`kv` SET `k`=`k` WHERE `k`=7"}, []int64{1}},
		{"a key change updates the key", kv, []txn.Change{upd(row(i64(1), str("a")), row(i64(9), str("a")))},
			[]string{"UPDATE `d`.`kv` SET `k`=9 WHERE `k`=1"}, []int64{1}},
		// No key: one row at a time, matched on the whole image, byte for byte.
		{"no key matches the whole image", nokey, []txn.Change{del(row(i64(1), str("A "))), upd(row(null, str("b")), row(i64(2), str("b")))},
			[]string{"DELETE FROM `d`.`nokey` WHERE `a`<=>1 AND BINARY `b`<=>_utf8mb4'A ' LIMIT 1",
				"UPDATE `d`.`nokey` SET `a`=2 WHERE `a`<=>NULL AND BINARY `b`<=>_utf8mb4'b' LIMIT 1"}, []int64{1, 1}},
		{"a change of kind closes the statement", kv, []txn.Change{ins(row(i64(1), null)), del(row(i64(2), null)), ins(row(i64(3), null))},
			[]string{"INSERT INTO `d`.`kv` (`k`,`v`) VALUES (1,NULL)", "DELETE FROM `d`.`kv` WHERE `k` IN (2)",
				"INSERT INTO `d`.`kv` (`k`,`v`) VALUES (3,NULL)"}, []int64{1, 1, 1}},
	}
	for _, c := range cases {
		s := &sink{}
		w := NewWriter(s)
		if err := w.Begin(); err != nil {
			t.Fatal(err)
		}
		if err := w.Rows(t1, c.p, c.changes); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := w.Finish(); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var got []string
		var expects []int64
		for i, q := range s.all() {
			st := s.stmts[0][i]
			if st.Txn == nil {
				continue
			}
			got = append(got, q)
			expects = append(expects, st.Expect)
		}
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if len(expects) != len(c.expects) {
			t.Errorf("%s: expects %v, want %v", c.name, expects, c.expects)
			continue
		}
		for i := range expects {
			if expects[i] != c.expects[i] {
				t.Errorf("%s: expects %v, want %v", c.name, expects, c.expects)
			}
		}
	}
}

// TestCollapse: merged transactions write the last image of each row of a
// collapsible table: deletes, then inserts of new rows, then an upsert of
// changed ones whose found rows are counted for the guard.
func TestCollapse(t *testing.T) {
	h := table("h", 1, true, "id", "v")
	s := &sink{}
	w := NewWriter(s)
	w.Collapse = true
	w.Begin()
	changes := []txn.Change{
		upd(row(i64(1), i64(0)), row(i64(1), i64(1))),      // changed
		upd(row(i64(1), i64(1)), row(i64(1), i64(2))),      // changed again: one image
		ins(row(i64(5), i64(0))),                           // new
		upd(row(i64(5), i64(0)), row(i64(5), i64(9))),      // new, changed: still an insert
		del(row(i64(2), i64(0))),                           // gone
		ins(row(i64(3), i64(0))), del(row(i64(3), i64(0))), // in and out: nothing
		del(row(i64(4), i64(0))), ins(row(i64(4), i64(7))), // replaced: upsert
	}
	if err := w.Rows(t1, h, changes); err != nil {
		t.Fatal(err)
	}
	w.Finish()
	w.Flush()
	got := strings.Join(s.all(), "\n")
	for _, want := range []string{
		"DELETE FROM `d`.`h` WHERE `id` IN (2)",
		"INSERT INTO `d`.`h` (`id`,`v`) VALUES (5,9)",
		"INSERT INTO `d`.`h` (`id`,`v`) VALUES (1,2),(4,7) ON DUPLICATE KEY UPDATE `v`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`v`),NULL)",
		"SET @binlane_bad=@binlane_bad+(@binlane_n<>2),@binlane_n=0",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "(3,") || strings.Contains(got, "IN (2,3") {
		t.Errorf("a row inserted and deleted in the batch was written:\n%s", got)
	}
}

func TestLiterals(t *testing.T) {
	p := table("lit", 0, false, "s", "bin")
	enum := binlog.Column{EnumValues: [][]byte{[]byte("a"), []byte("b'c")}}
	set := binlog.Column{SetValues: [][]byte{[]byte("x"), []byte("y")}}
	cases := []struct {
		v    binlog.Value
		src  *binlog.Column
		col  *plan.Col
		want string
	}{
		{str("it's a \\ back\x00slash\n\r\x1a"), &p.Source.Columns[0], &p.Cols[0], `_utf8mb4'it\'s a \\ back\0slash\n\r\Z'`},
		{binlog.Value{Kind: binlog.KindString, B: []byte{0xff, 0x00, '\''}}, &p.Source.Columns[1], &p.Cols[1], `_binary'` + "\xff" + `\0\''`},
		{str(""), &p.Source.Columns[0], &p.Cols[0], `_utf8mb4''`},
		{null, &p.Source.Columns[0], &p.Cols[0], "NULL"},
		{i64(-42), nil, &p.Cols[0], "-42"},
		{binlog.Value{Kind: binlog.KindUint, N: -1}, nil, &p.Cols[0], "18446744073709551615"},
		{binlog.Value{Kind: binlog.KindDouble, N: int64(math.Float64bits(0.1))}, nil, &p.Cols[0], "1e-01"},
		{binlog.Value{Kind: binlog.KindEnum, N: 2}, &enum, &p.Cols[0], `_utf8mb4'b\'c'`},
		{binlog.Value{Kind: binlog.KindSet, N: 3}, &set, &p.Cols[0], `_utf8mb4'x,y'`},
	}
	for _, c := range cases {
		var l literal
		got, err := l.append(nil, &c.v, c.src, c.col)
		if err != nil || string(got) != c.want {
			t.Errorf("%v: got %s (%v), want %s", c.v, got, err, c.want)
		}
	}
	var l literal
	if _, err := l.append(nil, &binlog.Value{Kind: binlog.KindDouble, N: int64(math.Float64bits(math.Inf(1)))}, nil, &p.Cols[0]); err == nil {
		t.Error("infinity rendered")
	}
	// The ENUM error value 0 needs a relaxed sql_mode for its statement.
	if _, err := l.append(nil, &binlog.Value{Kind: binlog.KindEnum, N: 0}, &enum, &p.Cols[0]); err != nil || !l.lax {
		t.Errorf("enum 0: lax %v, %v", l.lax, err)
	}
}

// TestLargeValueNotDoubled: a value is sent about its own size (a hex
// literal doubled it, so a 9 MiB BLOB that both servers accept did not fit
// a 16 MiB max_allowed_packet).
// TestStoredBytes: a string written into a column that stores the
// source's bytes (plan.Col.StoreBytes) is a _binary literal wherever a
// statement writes it (VALUES, SET), and keeps its charset's introducer
// wherever a statement compares it (the key that finds a row): a binary
// string compares bytes, not the column's collation.
func TestStoredBytes(t *testing.T) {
	p := table("sb", 1, false, "k", "v", "e")
	p.Cols[0].StoreBytes, p.Cols[1].StoreBytes = true, true
	enumCol := binlog.Column{EnumValues: [][]byte{[]byte("x")}}
	p.Source.Columns[2] = enumCol
	row1 := row(str("k1"), str("it's"), binlog.Value{Kind: binlog.KindEnum, N: 1})
	row2 := row(str("k1"), str("v2"), binlog.Value{Kind: binlog.KindEnum, N: 1})
	cases := []struct {
		name string
		c    txn.Change
		want string
	}{
		{"insert", ins(row1), "INSERT INTO `d`.`sb` (`k`,`v`,`e`) VALUES (_binary'k1',_binary'it\\'s',_utf8mb4'x')"},
		{"update", upd(row1, row2), "UPDATE `d`.`sb` SET `v`=_binary'v2' WHERE `k`=_utf8mb4'k1'"},
		{"delete", del(row1), "DELETE FROM `d`.`sb` WHERE `k` IN (_utf8mb4'k1')"},
	}
	for _, c := range cases {
		got := rowStatements(t, p, c.c)
		if len(got) == 0 || got[0] != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// writeRows renders changes of one table as one transaction.
func writeRows(t *testing.T, p *plan.Table, changes ...txn.Change) *sink {
	t.Helper()
	return writeWith(t, nil, p, changes)
}

// writeWith renders groups of changes of one table, a Rows call each, as
// one transaction of a writer that configure (when not nil) set up, and
// sends what it holds.
func writeWith(t *testing.T, configure func(*Writer), p *plan.Table, groups ...[]txn.Change) *sink {
	t.Helper()
	s := &sink{}
	w := NewWriter(s)
	if configure != nil {
		configure(w)
	}
	if err := w.Begin(); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if err := w.Rows(t1, p, g); err != nil {
			t.Fatal(err)
		}
	}
	finish(t, w)
	return s
}

// finish ends the writer's transaction and sends what it holds.
func finish(t *testing.T, w *Writer) {
	t.Helper()
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// rowStatements renders changes of one table as one transaction and
// returns its row statements.
func rowStatements(t *testing.T, p *plan.Table, changes ...txn.Change) []string {
	t.Helper()
	s := writeRows(t, p, changes...)
	var got []string
	for i, q := range s.all() {
		if s.stmts[0][i].Txn != nil {
			got = append(got, q)
		}
	}
	return got
}

func TestLargeValueNotDoubled(t *testing.T) {
	p := table("blob", 1, false, "id", "bin")
	big := make([]byte, 9<<20)
	for i := range big {
		big[i] = byte(i * 7)
	}
	s := &sink{}
	w := NewWriter(s)
	w.Begin()
	w.Rows(t1, p, []txn.Change{ins(row(i64(1), binlog.Value{Kind: binlog.KindString, B: big}))})
	w.Finish()
	w.Flush()
	n := 0
	for _, q := range s.all() {
		n = max(n, len(q))
	}
	if n > len(big)*103/100 {
		t.Fatalf("a %d-byte value took a %d-byte statement", len(big), n)
	}
}

func TestRoundTripsAndSession(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	s := &sink{}
	w := NewWriter(s)
	w.MaxRoundTrip = 200
	w.Begin()
	noFK := txn.Change{Kind: binlog.RowsInsert, After: row(i64(1), str(strings.Repeat("x", 300))), Flags: binlog.RowsFlagNoForeignKeyChecks}
	if err := w.Rows(t1, kv, []txn.Change{noFK, ins(row(i64(2), null))}); err != nil {
		t.Fatal(err)
	}
	w.Finish()
	if err := w.Commit(&position.Tail{Stream: "s", Owner: "owner", Save: position.Save{GTID: "0-1-5", Applied: 1}}); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(s.all(), "\n")
	for _, want := range []string{"SET SESSION foreign_key_checks=0", "SET SESSION foreign_key_checks=1", "START TRANSACTION", "COMMIT",
		"@binlane_bad=0"} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in\n%s", want, all)
		}
	}
	// A plain INSERT inserts every row or fails: it needs no guard.
	if strings.Contains(all, "ROW_COUNT()") {
		t.Errorf("an INSERT got a guard:\n%s", all)
	}
	if len(s.trips) < 2 {
		t.Errorf("a round trip over MaxRoundTrip was not split: %d trips", len(s.trips))
	}
	if !strings.HasSuffix(all, "COMMIT") {
		t.Errorf("COMMIT is not last:\n%s", all)
	}
}

func TestCheck(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	stmts := []Stmt{{Expect: -1, What: "session"}, {Expect: 1, Txn: &txn.Txn{}, Table: kv, What: "delete", Row: row(i64(42), null), Key: []int{0}}}
	if err := check(stmts, []int64{0, 1}); err != nil {
		t.Fatal(err)
	}
	err := check(stmts, []int64{0, 0})
	var rc *RowCountError
	if !errors.As(err, &rc) || !errors.Is(err, ErrRowCount) || !strings.Contains(err.Error(), "`d`.`kv`, row (k=42)") ||
		!strings.Contains(err.Error(), "delete affected 0 rows on the target, expected 1") {
		t.Fatalf("row count error: %v", err)
	}
}

// TestSelfReferencingOrder: the rows of a table that references itself
// are deleted one statement per row, in source order (issue 16 G: a
// merged DELETE ... IN (4,3,2,1) runs in key order and fails with 1451).
func TestSelfReferencingOrder(t *testing.T) {
	tree := table("tree", 1, false, "a", "b")
	tree.OrderedRows = true
	s := writeRows(t, tree, ins(row(i64(1), null)), ins(row(i64(2), i64(1))), del(row(i64(2), i64(1))), del(row(i64(1), null)))
	var got []string
	for _, q := range s.all() {
		if strings.HasPrefix(q, "INSERT") || strings.HasPrefix(q, "DELETE") {
			got = append(got, q)
		}
	}
	want := []string{"INSERT INTO `d`.`tree` (`a`,`b`) VALUES (1,NULL),(2,1)",
		"DELETE FROM `d`.`tree` WHERE `a` IN (2)", "DELETE FROM `d`.`tree` WHERE `a` IN (1)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("statements:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// countingSink answers every statement with the row count it expects,
// except statement miss of the first round trip, which affects none: what
// a row missing on the target looks like. It checks each round trip as the
// applier's worker does.
type countingSink struct {
	sink
	miss int
}

func (s *countingSink) Send(sql []byte, stmts []Stmt) ([]int64, error) {
	first := len(s.trips) == 0
	counts, _ := s.sink.Send(sql, stmts)
	if first && s.miss < len(counts) {
		counts[s.miss] = 0
	}
	return counts, nil
}

// TestGuardedRows: the first guardedRows row statements of a transaction
// carry a guard, so a small transaction commits in one round trip; later
// ones do not (a guard costs the server two thirds of an UPDATE), and their
// round trip is sent and checked before the position update and COMMIT.
func TestGuardedRows(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	updates := func(n int) []txn.Change {
		var out []txn.Change
		for i := range n {
			out = append(out, upd(row(i64(int64(i)), null), row(i64(int64(i)), i64(1))))
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		rows, miss    int
		trips, guards int
		err           bool
	}{
		{"small: one round trip", 3, -1, 1, 3, false},
		{"at the limit", guardedRows, -1, 1, guardedRows, false},
		{"large: rows first", guardedRows + 10, -1, 2, guardedRows, false},
		{"large, unguarded row missing: no COMMIT", guardedRows + 10, 2 + 2*guardedRows + 5, 1, guardedRows, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &countingSink{miss: tc.miss}
			if tc.miss < 0 {
				s.miss = math.MaxInt
			}
			w := NewWriter(s)
			w.Begin()
			if err := w.Rows(t1, kv, updates(tc.rows)); err != nil {
				t.Fatal(err)
			}
			w.Finish()
			err := w.Commit(&position.Tail{Stream: "s", Owner: "owner", Save: position.Save{GTID: "0-1-5", Applied: 1}})
			if (err != nil) != tc.err || tc.err && !errors.Is(err, ErrRowCount) {
				t.Fatalf("Commit: %v", err)
			}
			all := s.all()
			if got := strings.Count(strings.Join(all, "\n"), "ROW_COUNT()"); got != tc.guards {
				t.Errorf("%d guards, want %d", got, tc.guards)
			}
			if len(s.trips) != tc.trips {
				t.Errorf("%d round trips, want %d", len(s.trips), tc.trips)
			}
			committed := slices.Contains(all, "COMMIT")
			if committed == tc.err {
				t.Errorf("COMMIT sent: %v\n%s", committed, strings.Join(all, "\n"))
			}
			if !tc.err && tc.trips == 2 && slices.ContainsFunc(s.trips[0], func(q string) bool { return q == "COMMIT" || strings.Contains(q, "streams") }) {
				t.Errorf("position or COMMIT rode with unguarded rows:\n%s", strings.Join(s.trips[0], "\n"))
			}
		})
	}
}

// TestCheckWithoutCounts: a round trip whose result holds fewer counts than
// statements fails the check instead of passing unchecked rows.
func TestCheckWithoutCounts(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	stmts := []Stmt{{Expect: -1, What: "session"}, {Expect: 1, Txn: &txn.Txn{}, Table: kv, What: "update", Row: row(i64(7), null), Key: []int{0}}}
	if err := check(stmts, []int64{0}); !errors.Is(err, ErrRowCount) || !strings.Contains(err.Error(), "no row count") {
		t.Fatalf("check without counts: %v", err)
	}
}

// TestBlocks: with Blocks, row statements go into compound statements with a
// guard after each, which the client sees as one statement; session
// statements, LOAD DATA, the position update and COMMIT stay outside.
func TestBlocks(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	s := &sink{}
	w := NewWriter(s)
	w.Blocks = true
	w.Begin()
	noFK := upd(row(i64(3), null), row(i64(3), i64(1)))
	noFK.Flags = binlog.RowsFlagNoForeignKeyChecks
	changes := []txn.Change{upd(row(i64(1), null), row(i64(1), i64(1))), upd(row(i64(2), null), row(i64(2), i64(1))), noFK,
		ins(row(i64(4), null)), ins(row(i64(5), null))}
	if err := w.Rows(t1, kv, changes); err != nil {
		t.Fatal(err)
	}
	w.Finish()
	if err := w.Commit(&position.Tail{Stream: "s", Owner: "owner", Save: position.Save{GTID: "0-1-5", Applied: 1}}); err != nil {
		t.Fatal(err)
	}
	if len(s.trips) != 1 {
		t.Fatalf("%d round trips, want 1", len(s.trips))
	}
	sql := strings.Join(s.trips[0], ";\n")
	want := []string{
		"START TRANSACTION",
		"SET @binlane_bad=0,@binlane_n=0",
		"BEGIN NOT ATOMIC\nUPDATE `d`.`kv` SET `v`=1 WHERE `k`=1",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"UPDATE `d`.`kv` SET `v`=1 WHERE `k`=2",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"END",
		"SET SESSION foreign_key_checks=0",
		"BEGIN NOT ATOMIC\nUPDATE `d`.`kv` SET `v`=1 WHERE `k`=3",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"END",
		"SET SESSION foreign_key_checks=1",
		"BEGIN NOT ATOMIC\nINSERT INTO `d`.`kv` (`k`,`v`) VALUES (4,NULL),(5,NULL)", // no guard: it inserts both or fails
		"END",
	}
	if got := strings.Join(s.trips[0][:len(want)], ";\n"); got != strings.Join(want, ";\n") {
		t.Fatalf("round trip:\n%s\nwant it to start:\n%s", sql, strings.Join(want, ";\n"))
	}
	rest := s.trips[0][len(want):]
	if len(rest) != 2 || !strings.Contains(rest[0], "`binlane`.`streams`") || rest[1] != "COMMIT" {
		t.Fatalf("the position update and COMMIT do not end the round trip:\n%s", sql)
	}
	// What the client checks: one result per top-level statement.
	var kinds []string
	for _, st := range s.stmts[0] {
		kinds = append(kinds, st.What)
	}
	wantKinds := []string{"session", "session", BlockWhat, "session", BlockWhat, "session", BlockWhat, "position update", "session"}
	if !slices.Equal(kinds, wantKinds) {
		t.Fatalf("statements %q, want %q", kinds, wantKinds)
	}
	if err := blame(s.stmts[0][2:3], errors.New("x")); errors.As(err, new(*StmtError)) {
		t.Errorf("a failed block was blamed on its first row: %v", err)
	}
}

// TestBlockBounds: a block is closed once it reaches MaxStatement bytes or
// blockStatements row statements, however small they are.
func TestBlockBounds(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	for _, tc := range []struct {
		name             string
		rows, maxStmt    int
		minBlocks, exact int // exact 0: at least minBlocks
	}{
		{name: "bytes", rows: 10, maxStmt: 200, minBlocks: 3},
		{name: "statements", rows: 3*blockStatements + 1, exact: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{}
			w := NewWriter(s)
			w.Blocks = true
			if tc.maxStmt > 0 {
				w.MaxStatement = tc.maxStmt
			}
			w.Begin()
			var changes []txn.Change
			for i := range tc.rows {
				changes = append(changes, upd(row(i64(int64(i)), null), row(i64(int64(i)), i64(1))))
			}
			if err := w.Rows(t1, kv, changes); err != nil {
				t.Fatal(err)
			}
			w.Finish()
			w.Flush()
			all := strings.Join(s.all(), ";\n")
			begins, ends := strings.Count(all, "BEGIN NOT ATOMIC"), strings.Count(all, "END")
			if begins != ends || begins < tc.minBlocks || tc.exact > 0 && begins != tc.exact {
				t.Fatalf("%d blocks opened, %d closed for %d statements:\n%s", begins, ends, tc.rows, all)
			}
			if n := strings.Count(all, "UPDATE"); n != tc.rows {
				t.Fatalf("%d updates, want %d", n, tc.rows)
			}
		})
	}
}

// TestLongStatementOutsideBlocks: a statement of blockStatementBytes or
// more goes on its own between blocks, with its own guard; short ones
// around it stay in blocks.
func TestLongStatementOutsideBlocks(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	s := &sink{}
	w := NewWriter(s)
	w.Blocks = true
	w.Begin()
	long := str(strings.Repeat("x", blockStatementBytes))
	changes := []txn.Change{upd(row(i64(1), null), row(i64(1), i64(1))), upd(row(i64(2), null), row(i64(2), long)),
		upd(row(i64(3), null), row(i64(3), i64(1)))}
	if err := w.Rows(t1, kv, changes); err != nil {
		t.Fatal(err)
	}
	w.Finish()
	w.Flush()
	var got []string
	for _, q := range s.all() {
		if len(q) > 60 {
			q = q[:60]
		}
		got = append(got, q)
	}
	want := []string{
		"START TRANSACTION",
		"SET @binlane_bad=0,@binlane_n=0",
		"BEGIN NOT ATOMIC\nUPDATE `d`.`kv` SET `v`=1 WHERE `k`=1",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"END",
		("UPDATE `d`.`kv` SET `v`=_utf8mb4'" + strings.Repeat("x", 60))[:60],
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"BEGIN NOT ATOMIC\nUPDATE `d`.`kv` SET `v`=1 WHERE `k`=3",
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"END",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("statements:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestCommitTail: the records of a commit go in one order, each checked
// as it should be, the position update and COMMIT last.
func TestCommitTail(t *testing.T) {
	tail := &position.Tail{Stream: "s", Owner: "o", Save: position.Save{GTID: "0-1-9", Applied: 2},
		Deferred:   []position.Deferred{{GTID: "0-1-8", Schema: "shop", Reason: "trigger", Statement: "CREATE TRIGGER x"}},
		XAPrepared: "xid1", XAPreparedGTID: "0-1-9", XAFinished: "xid0",
		Copy: []position.CopyProgress{{Schema: "shop", Table: "t"}}}
	cases := []struct {
		miss int // a statement answering 0 rows (-1: none)
		want string
	}{
		{-1, ""},
		{0, "record deferred statement affected 0 rows"},
		{2, "forget the finished XA transaction affected 0 rows"},
		{3, "record the copy's progress affected 0 rows"},
		{4, "position update affected 0 rows"},
	}
	for _, c := range cases {
		s := &countingSink{miss: c.miss}
		if c.miss < 0 {
			s.miss = 1 << 30
		}
		w := NewWriter(s)
		err := w.Commit(tail)
		if c.want == "" {
			if err != nil {
				t.Fatal(err)
			}
			var whats []string
			for _, st := range s.stmts[0] {
				whats = append(whats, st.What)
			}
			want := "record deferred statement|record the prepared XA transaction|forget the finished XA transaction|" +
				"record the copy's progress|position update|session"
			if got := strings.Join(whats, "|"); got != want {
				t.Errorf("commit tail:\n%s\nwant\n%s", got, want)
			}
			if q := s.all(); q[len(q)-1] != "COMMIT" {
				t.Errorf("last statement %q, want COMMIT", q[len(q)-1])
			}
			continue
		}
		if err == nil || !errors.Is(err, ErrRowCount) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("statement %d answering 0 rows: %v, want %q", c.miss, err, c.want)
		}
	}
}

// TestDeleteRowsFollowStatistics: a DELETE takes no more keys than the
// target's statistics (TABLE_ROWS when the plan was made) let the
// optimizer look up: with a table it counts as nearly empty, MariaDB
// scans the whole table for an IN list of 3 keys or more, so such a
// table's deletes go one key each, and a table it counts as large gets
// lists of up to maxDeleteRows. Rows the writer inserted count too: the
// server adds them to its count as they come.
func TestDeleteRowsFollowStatistics(t *testing.T) {
	for _, c := range []struct {
		rows    int64 // TABLE_ROWS; -1: no target statistics
		inserts int   // rows inserted before the deletes, in another transaction
		deletes int
		want    []int64 // rows of each DELETE
	}{
		{-1, 0, 600, []int64{500, 100}},
		{0, 0, 3, []int64{1, 1, 1}},
		{40, 0, 5, []int64{2, 2, 1}},
		{1600, 0, 250, []int64{100, 100, 50}},
		{0, 1600, 250, []int64{100, 100, 50}},
		{1_000_000, 0, 1200, []int64{500, 500, 200}},
	} {
		p := table("kv", 1, false, "k", "v")
		if c.rows >= 0 {
			p.Target = &schema.Table{Rows: c.rows}
		}
		var changes, inserts []txn.Change
		for i := range c.deletes {
			changes = append(changes, del(row(i64(int64(i)), null)))
		}
		for i := range c.inserts {
			inserts = append(inserts, ins(row(i64(int64(i)), null)))
		}
		s := writeWith(t, nil, p, inserts, changes)
		var got []int64
		for _, trip := range s.stmts {
			for _, st := range trip {
				if st.Txn != nil && st.What == "delete" {
					got = append(got, st.Expect)
				}
			}
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("TABLE_ROWS %d, %d inserted, %d deletes: statements of %v rows, want %v", c.rows, c.inserts, c.deletes, got, c.want)
		}
	}
}
