package keyrange

import (
	"encoding/json"
	"reflect"
	"testing"
)

var intKey = []Column{{Name: "id", Kind: Int}}

func ik(n int64) Key { return Key{n} }

func TestAppendLiteral(t *testing.T) {
	cases := []struct {
		c    Column
		v    any
		want string
	}{
		{Column{Kind: Int}, int64(-5), "-5"},
		{Column{Kind: Uint}, uint64(1 << 63), "9223372036854775808"},
		{Column{Kind: Text}, []byte("2024-01-02 03:04:05.123456"), "'2024-01-02 03:04:05.123456'"},
		{Column{Kind: Bytes}, []byte("a'\\\x00"), "X'61275c00'"},
		{Column{Kind: Bytes, Charset: "latin1", PadSpace: true}, []byte("\xe9 "), "_latin1 X'e920'"},
	}
	for _, c := range cases {
		if got := string(AppendLiteral(nil, c.c, c.v)); got != c.want {
			t.Errorf("%+v %v: %s, want %s", c.c, c.v, got, c.want)
		}
	}
	k, err := FromText([]Column{{Kind: Int}, {Kind: Uint}, {Kind: Bytes}}, [][]byte{[]byte("-3"), []byte("18446744073709551615"), []byte("x")})
	if err != nil || !reflect.DeepEqual(k, Key{int64(-3), uint64(1<<64 - 1), []byte("x")}) {
		t.Errorf("FromText: %v %v", k, err)
	}
	if _, err := FromText([]Column{{Name: "id", Kind: Int}}, [][]byte{nil}); err == nil {
		t.Error("FromText took a NULL key value")
	}
}

func TestCompare(t *testing.T) {
	cols := []Column{{Kind: Bytes, PadSpace: true}, {Kind: Uint}}
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
	bytesCov := Coverage{Cols: []Column{{Kind: Bytes}}}
	bytesCov.Add(Range{Lo: Key{[]byte{}}, Hi: Key{[]byte("m\x00")}})
	b, _ = json.Marshal(&bytesCov)
	back = Coverage{Cols: bytesCov.Cols}
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.Ranges, bytesCov.Ranges) {
		t.Fatalf("bytes round trip %s: %+v %v", b, back.Ranges, err)
	}
}
