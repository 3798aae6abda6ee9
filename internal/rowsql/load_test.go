package rowsql

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/txn"
)

// TestLoadValues: each value's text in a LOAD DATA file is its literal's,
// without quotes or introducer; a string's tab, newline and backslash are
// escaped, NULL is \N, and a value a file cannot carry is refused.
func TestLoadValues(t *testing.T) {
	dec := binlog.Value{Kind: binlog.KindDecimal, Prec: 5, Scale: 2, B: []byte{0x80, 0x01, 0x02}}
	decText, err := binlog.AppendDecimal(nil, dec.B, 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		v    binlog.Value
		want string
		ok   bool
	}{
		{null, `\N`, true},
		{i64(-42), "-42", true},
		{binlog.Value{Kind: binlog.KindUint, N: -1}, "18446744073709551615", true},
		{binlog.Value{Kind: binlog.KindYear, N: 2024}, "2024", true},
		{str("a\tb\nc\\d'e\x00"), "a\\tb\\nc\\\\d'e\x00", true},
		{str(`\N`), `\\N`, true},
		{str(""), "", true},
		{dec, string(decText), true},
		{binlog.Value{Kind: binlog.KindEnum, N: 1}, "", false},
		{binlog.Value{Kind: binlog.KindBit, N: 5}, "", false},
		{binlog.Value{Kind: binlog.KindAbsent}, "", false},
	} {
		got, ok := appendLoadValue(nil, &tc.v)
		if ok != tc.ok || ok && string(got) != tc.want {
			t.Errorf("%v %q: %q %v, want %q %v", tc.v.Kind, tc.v.B, got, ok, tc.want, tc.ok)
		}
	}
}

// TestCollapsedRowsLoaded: a batch with at least loadMinRows changed rows
// of a loadable table sends them as one LOAD DATA ... REPLACE that must
// count two per row, followed by its warning guard. A row back to its
// image before the batch, and a row with a value a file cannot carry,
// stay upserts; a few new rows stay an INSERT, many are loaded too.
// Without an infile prefix (a target refusing local files), or below
// loadMinRows, nothing is loaded.
func TestCollapsedRowsLoaded(t *testing.T) {
	h := table("h", 1, true, "id", "v")
	h.Loadable, h.Upsert = true, true
	var changes []txn.Change
	for i := range loadMinRows {
		changes = append(changes, upd(row(i64(int64(i)), i64(0)), row(i64(int64(i)), i64(int64(i+1)))))
	}
	changes = append(changes,
		upd(row(i64(-1), i64(0)), row(i64(-1), i64(5))), upd(row(i64(-1), i64(5)), row(i64(-1), i64(0))), // back as it was
		upd(row(i64(-2), i64(0)), row(i64(-2), binlog.Value{Kind: binlog.KindEnum, N: 1})), // no text form
		ins(row(i64(-3), i64(3))),
	)
	run := func(prefix string, changes []txn.Change) *sink {
		return writeWith(t, func(w *Writer) { w.Collapse, w.InfilePrefix = true, prefix }, h, changes)
	}
	s := run("Reader::x-", changes)
	var load *Stmt
	var loadAt int
	all := s.all()
	var stmts []Stmt
	for _, trip := range s.stmts {
		stmts = append(stmts, trip...)
	}
	for i := range stmts {
		if stmts[i].File != nil {
			if load != nil {
				t.Fatal("two loads for one table's rows")
			}
			load, loadAt = &stmts[i], i
		}
	}
	if load == nil {
		t.Fatalf("no load among\n%s", strings.Join(all, "\n"))
	}
	if want := "LOAD DATA LOCAL INFILE 'Reader::x-0' REPLACE INTO TABLE `d`.`h`" + loadFormat + " (`id`,`v`)"; all[loadAt] != want {
		t.Errorf("load statement\n%s\nwant\n%s", all[loadAt], want)
	}
	if load.Expect != 2*loadMinRows {
		t.Errorf("load expects %d rows, want %d", load.Expect, 2*loadMinRows)
	}
	lines := strings.Split(strings.TrimSuffix(string(load.File), "\n"), "\n")
	if len(lines) != loadMinRows || lines[0] != "0\t1" || lines[len(lines)-1] != "999\t1000" {
		t.Errorf("file of %d lines, %q ... %q", len(lines), lines[0], lines[len(lines)-1])
	}
	rest := strings.Join(all[loadAt+1:], "\n")
	for _, want := range []string{loadWarnings, "INSERT INTO `d`.`h` (`id`,`v`) VALUES (-3,3)", "VALUES (-1,0),(-2,"} {
		if !strings.Contains(strings.Join(all, "\n"), want) {
			t.Errorf("missing %q in\n%s", want, rest)
		}
	}
	if !strings.HasPrefix(all[loadAt+1], "SET @binlane_bad") || !strings.Contains(rest, loadWarnings) {
		t.Errorf("the load is not followed by its guards:\n%s", rest)
	}
	// New rows: a plain load that counts one per row.
	var inserts []txn.Change
	for i := range loadMinRows {
		inserts = append(inserts, ins(row(i64(int64(i)), str("v\t"))))
	}
	s = run("Reader::y-", inserts)
	if all := s.all(); len(s.stmts) == 0 || !strings.Contains(strings.Join(all, "\n"), "LOAD DATA LOCAL INFILE 'Reader::y-0' INTO TABLE `d`.`h`"+loadFormat) {
		t.Errorf("new rows not loaded:\n%s", strings.Join(all, "\n"))
	}
	for _, trip := range s.stmts {
		for _, st := range trip {
			if st.File != nil && (st.Expect != loadMinRows || !strings.HasPrefix(string(st.File), "0\tv\\t\n1\t")) {
				t.Errorf("load of new rows expects %d, file %.20q", st.Expect, st.File)
			}
		}
	}
	for _, s := range []*sink{run("", changes), run("Reader::x-", changes[1:]), run("Reader::y-", inserts[1:])} {
		for _, trip := range s.stmts {
			for _, st := range trip {
				if st.File != nil {
					t.Errorf("loaded without a prefix or below %d rows", loadMinRows)
				}
			}
		}
	}
}
