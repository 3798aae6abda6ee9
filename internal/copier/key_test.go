package copier

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

var intKey = []KeyColumn{{Name: "id", Kind: KeyInt}}

func ik(n int64) Key { return Key{n} }

func TestKeyKindOf(t *testing.T) {
	cases := []struct {
		dt, ct, coll string
		kind         KeyKind
		pad, ok      bool
	}{
		{"int", "int(11)", "", KeyInt, false, true},
		{"bigint", "bigint(20) unsigned", "", KeyUint, false, true},
		{"datetime", "datetime(6)", "", KeyText, false, true},
		{"varbinary", "varbinary(10)", "", KeyBytes, false, true},
		{"varchar", "varchar(10)", "utf8mb4_bin", KeyBytes, true, true},
		{"varchar", "varchar(10)", "utf8mb4_nopad_bin", KeyBytes, false, true},
		// The server's order of these is not byte order.
		{"varchar", "varchar(10)", "utf8mb4_general_ci", 0, false, false},
		{"varchar", "varchar(10)", "latin1_swedish_ci", 0, false, false},
		{"double", "double", "", 0, false, false},
		{"decimal", "decimal(10,2)", "", 0, false, false},
		{"time", "time", "", 0, false, false},
	}
	for _, c := range cases {
		k, ok := KeyKindOf(c.dt, c.ct, c.coll)
		if ok != c.ok || ok && (k.Kind != c.kind || k.PadSpace != c.pad) {
			t.Errorf("%s %s %s: %+v %v", c.dt, c.ct, c.coll, k, ok)
		}
	}
}

func TestCompare(t *testing.T) {
	cols := []KeyColumn{{Kind: KeyBytes, PadSpace: true}, {Kind: KeyUint}}
	cases := []struct {
		a, b Key
		want int
	}{
		{Key{[]byte("a"), uint64(1)}, Key{[]byte("a  "), uint64(1)}, 0}, // PAD SPACE
		{Key{[]byte("a"), uint64(1)}, Key{[]byte("b"), uint64(0)}, -1},
		{Key{[]byte("b"), uint64(0)}, Key{[]byte("a"), uint64(9)}, 1},
		{Key{[]byte("a"), uint64(1 << 63)}, Key{[]byte("a"), uint64(1)}, 1}, // unsigned, not two's complement
		{Key{[]byte("é"), uint64(0)}, Key{[]byte("z"), uint64(0)}, 1},       // code point order
	}
	for _, c := range cases {
		if got := Compare(cols, c.a, c.b); got != c.want {
			t.Errorf("Compare(%v, %v) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestFromRow(t *testing.T) {
	cols := []KeyColumn{{Kind: KeyInt}, {Kind: KeyBytes}}
	row := []binlog.Value{{Kind: binlog.KindString, B: []byte("x")}, {Kind: binlog.KindInt, N: -4}}
	k, ok := FromRow(cols, row, []int{1, 0})
	if !ok || !reflect.DeepEqual(k, Key{int64(-4), []byte("x")}) {
		t.Fatalf("FromRow: %v %v", k, ok)
	}
	if _, ok := FromRow(cols, []binlog.Value{{Kind: binlog.KindNull}, {Kind: binlog.KindInt}}, []int{1, 0}); ok {
		t.Error("a NULL key value")
	}
}

func TestCoverage(t *testing.T) {
	c := Coverage{Cols: intKey}
	in := func(n int64) bool { return c.Contains(ik(n)) }
	c.Add(Range{Lo: ik(100), Hi: ik(200)})
	c.Add(Range{Lo: nil, Hi: ik(50)})
	if !in(50) || in(51) || in(100) || !in(101) || !in(200) || in(201) || !in(-1000) {
		t.Fatalf("after two ranges: %+v", c.Ranges)
	}
	if gaps := c.Gaps(); len(gaps) != 2 || !reflect.DeepEqual(gaps[0], Range{Lo: ik(50), Hi: ik(100)}) || gaps[1].Hi != nil {
		t.Fatalf("gaps: %+v", gaps)
	}
	c.Add(Range{Lo: ik(50), Hi: ik(100)}) // fills the gap: merges
	if len(c.Ranges) != 1 || c.Ranges[0].Lo != nil || !reflect.DeepEqual(c.Ranges[0].Hi, ik(200)) {
		t.Fatalf("merged: %+v", c.Ranges)
	}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	back := Coverage{Cols: intKey}
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Ranges, c.Ranges) {
		t.Fatalf("round trip %s: %+v %v", b, back.Ranges, err)
	}
	c.Add(Range{Lo: ik(200)})
	if !c.All || !in(1<<40) || c.Gaps() != nil {
		t.Fatalf("complete: %+v", c)
	}
	empty := Coverage{Cols: intKey}
	if in := empty.Contains(ik(1)); in {
		t.Error("empty coverage contains a key")
	}
	if g := empty.Gaps(); len(g) != 1 || g[0].Lo != nil || g[0].Hi != nil {
		t.Errorf("gaps of nothing: %+v", g)
	}
	bytesCov := Coverage{Cols: []KeyColumn{{Kind: KeyBytes}}}
	bytesCov.Add(Range{Lo: Key{[]byte{}}, Hi: Key{[]byte("m\x00")}})
	b, _ = json.Marshal(&bytesCov)
	back = Coverage{Cols: bytesCov.Cols}
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Ranges, bytesCov.Ranges) {
		t.Fatalf("bytes round trip %s: %+v %v", b, back.Ranges, err)
	}
}
