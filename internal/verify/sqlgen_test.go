package verify

import (
	"reflect"
	"strings"
	"testing"
)

func TestRangeWhereSpellsOutRowComparisons(t *testing.T) {
	a := column{Name: "a", DataType: "int", Type: "int(11)"}
	b := column{Name: "b", DataType: "varchar", Charset: "utf8mb3", Collation: "utf8mb3_unicode_ci"}
	c := column{Name: "c", DataType: "datetime"}
	cond, args := rangeWhere([]column{a, b, c}, keyBound{int64(1), "x", "t1"}, keyBound{int64(2), "y", "t2"})
	conv := "CONVERT(? USING utf8mb3) COLLATE utf8mb3_unicode_ci"
	want := "(`a` > ? OR (`a` = ? AND (`b` > " + conv + " OR (`b` = " + conv + " AND `c` > ?))))" +
		" AND (`a` < ? OR (`a` = ? AND (`b` < " + conv + " OR (`b` = " + conv + " AND `c` <= ?))))"
	if cond != want {
		t.Errorf("got  %s\nwant %s", cond, want)
	}
	wantArgs := []any{int64(1), int64(1), "x", "x", "t1", int64(2), int64(2), "y", "y", "t2"}
	if !reflect.DeepEqual(args, wantArgs) {
		t.Errorf("args %v, want %v", args, wantArgs)
	}
	if strings.Contains(cond, "(`a`, `b`") {
		t.Error("row constructor used")
	}

	cond, args = rangeWhere([]column{a}, nil, keyBound{int64(9)})
	if cond != "(`a` <= ?)" || !reflect.DeepEqual(args, []any{int64(9)}) {
		t.Errorf("single column: %s %v", cond, args)
	}
	if cond, args = rangeWhere([]column{a}, nil, nil); cond != "" || args != nil {
		t.Errorf("unbounded: %q %v", cond, args)
	}
}

func TestCanonicalExpressions(t *testing.T) {
	cases := map[string]string{
		"int": "`x`", "bigint": "`x`", "decimal": "`x`", "datetime": "`x`", "timestamp": "`x`", "year": "`x`",
		"float": "CAST(`x` AS DOUBLE)", "double": "CAST(`x` AS DOUBLE)",
		"bit": "(`x`+0)", "enum": "(`x`+0)", "set": "(`x`+0)",
		"varchar": "HEX(`x`)", "char": "HEX(`x`)", "blob": "HEX(`x`)", "longtext": "HEX(`x`)",
		"point": "HEX(`x`)", "inet6": "HEX(`x`)", "json": "HEX(`x`)", "some_future_type": "HEX(`x`)",
	}
	for typ, want := range cases {
		if got := (column{Name: "x", DataType: typ}).canonical(); got != want {
			t.Errorf("%s: %s, want %s", typ, got, want)
		}
	}
	cols := []column{{Name: "id", DataType: "int"}, {Name: "v`q", DataType: "varchar"}}
	want := "CONCAT_WS('#', CONCAT(ISNULL(`id`), ISNULL(`v``q`)), `id`, HEX(`v``q`))"
	if got := rowString(cols); got != want {
		t.Errorf("rowString: %s", got)
	}
}

func TestKeyArgs(t *testing.T) {
	cases := []struct {
		col  column
		raw  string
		want any
	}{
		{column{DataType: "bigint", Type: "bigint(20) unsigned"}, "18446744073709551615", uint64(18446744073709551615)},
		{column{DataType: "int", Type: "int(11)"}, "-5", int64(-5)},
		{column{DataType: "varbinary"}, "\xff\x00", "ff00"},
		{column{DataType: "varchar"}, "abc", "abc"},
		{column{DataType: "datetime"}, "2024-01-01 00:00:00.000001", "2024-01-01 00:00:00.000001"},
	}
	for _, c := range cases {
		got, err := c.col.arg([]byte(c.raw))
		if err != nil || got != c.want {
			t.Errorf("%s %q: %v %v, want %v", c.col.DataType, c.raw, got, err, c.want)
		}
	}
	if _, err := (column{DataType: "int", Type: "int"}).arg([]byte("x")); err == nil {
		t.Error("bad integer accepted")
	}
}

func TestCompareColumns(t *testing.T) {
	src := []column{
		{Name: "id", Type: "int(11)"},
		{Name: "v", Type: "varchar(10)", Collation: "utf8mb4_general_ci"},
		{Name: "w", Type: "int(11)"},
	}
	if d := compareColumns(src, src); d != nil {
		t.Fatalf("equal columns: %v", d)
	}
	tgt := []column{
		{Name: "id", Type: "bigint(20)"},
		{Name: "v", Type: "varchar(10)", Collation: "utf8mb4_bin"},
	}
	d := compareColumns(src, tgt)
	want := []string{
		"column 1: source `id` int(11), target `id` bigint(20)",
		"column 2: source `v` varchar(10) COLLATE utf8mb4_general_ci, target `v` varchar(10) COLLATE utf8mb4_bin",
		"column 3: source `w` int(11), target (none)",
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got %q", d)
	}
}

func TestFormatValue(t *testing.T) {
	vc := column{DataType: "varchar"}
	cases := []struct {
		col   column
		canon []byte
		want  string
	}{
		{vc, nil, "NULL"},
		{vc, []byte(""), "''"},
		{vc, []byte("6120"), "'a '"},
		{vc, []byte("4F27"), `'O\''`},
		{column{DataType: "varbinary"}, []byte("FF00"), "0xFF00"},
		{column{DataType: "int"}, []byte("-7"), "-7"},
		{column{DataType: "enum"}, []byte("2"), "2"},
		{column{DataType: "varchar", Charset: "latin1"}, []byte("DF8033"), "'ß€3'"},
		{column{DataType: "varbinary"}, []byte("616263"), "'abc'"},
	}
	for _, c := range cases {
		if got := formatValue(c.col, c.canon); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.col.DataType, c.canon, got, c.want)
		}
	}
	long := quoteBytes([]byte(strings.Repeat("x", 100)))
	if !strings.HasSuffix(long, "'...(100 chars)") || len(long) != 2+maxValueRunes+len("...(100 chars)") {
		t.Errorf("long value: %s", long)
	}
}
