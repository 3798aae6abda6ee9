package copier

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/schema"
)

func TestArena(t *testing.T) {
	var a arena
	big := bytes.Repeat([]byte("x"), arenaBlock)
	var rows [][][]byte
	for i := range 3000 {
		row := a.row(3)
		row[0] = a.bytes([]byte(strconv.Itoa(i)))
		row[1] = a.bytes([]byte{})
		if i%1000 == 0 {
			row[2] = a.bytes(big)
		}
		rows = append(rows, row)
	}
	for i, row := range rows {
		if string(row[0]) != strconv.Itoa(i) || row[1] == nil || len(row[1]) != 0 || (row[2] != nil) != (i%1000 == 0) {
			t.Fatalf("row %d: %q", i, row)
		}
		if i%1000 == 0 && !bytes.Equal(row[2], big) {
			t.Fatalf("row %d: the large value changed", i)
		}
	}
	// A value's slice cannot grow into the next one.
	v := a.bytes([]byte("ab"))
	w := a.bytes([]byte("cd"))
	_ = append(v, 'Z')
	if string(w) != "cd" {
		t.Fatalf("appending to one value changed the next: %q", w)
	}
}

// TestArenaReset: after reset, the next chunk's rows are read into the same
// blocks (no new ones), and a NULL is nil in a reused row slot that held a
// value.
func TestArenaReset(t *testing.T) {
	var a arena
	fill := func(n int, null func(i int) bool) [][][]byte {
		rows := a.batch(n)
		for i := range n {
			row := a.row(2)
			row[0] = a.bytes([]byte(strconv.Itoa(i)))
			if !null(i) {
				row[1] = a.bytes(bytes.Repeat([]byte{'v'}, 100))
			}
			rows = append(rows, row)
		}
		return a.keep(rows)
	}
	fill(5000, func(int) bool { return false })
	a.reset()
	blocks, vals := len(a.vals.free), len(a.slots.free)
	if blocks == 0 || vals == 0 {
		t.Fatalf("reset freed %d value blocks and %d row blocks", blocks, vals)
	}
	rows := fill(5000, func(i int) bool { return i%2 == 0 })
	if len(a.vals.full)+1+len(a.vals.free) != blocks || len(a.slots.full)+1+len(a.slots.free) != vals {
		t.Fatalf("after the second chunk: %d+1 value blocks used, %d free, %d+1 row blocks used, %d free; want the %d and %d of the first, none new",
			len(a.vals.full), len(a.vals.free), len(a.slots.full), len(a.slots.free), blocks, vals)
	}
	for i, row := range rows {
		if string(row[0]) != strconv.Itoa(i) || (row[1] == nil) != (i%2 == 0) {
			t.Fatalf("row %d of the reused arena: %q", i, row)
		}
	}
}

func TestRowsQuery(t *testing.T) {
	key := []keyrange.Column{{Name: "a", Kind: keyrange.Int}, {Name: "b", Kind: keyrange.Bytes, Charset: "utf8mb4", PadSpace: true}}
	tb := &Table{Schema: "s", Name: "t", Key: key}
	cc, err := newChunkColumns(tb, []schema.Column{
		{Name: "a", DataType: "int"}, {Name: "b", DataType: "varchar", Charset: "utf8mb4"},
		{Name: "f", DataType: "float"}, {Name: "g", DataType: "int", Generated: true}, {Name: "u", DataType: "uuid"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := rowsQuery(tb, cc, keyrange.Range{Lo: keyrange.Key{int64(1), []byte("x")}, Hi: keyrange.Key{int64(9), []byte("y'")}}, 500)
	want := "SELECT `a`, `b`, CAST(`f` AS DOUBLE), CAST(`u` AS BINARY(16)) FROM `s`.`t` WHERE " +
		"((`a` > 1) OR (`a` = 1 AND `b` > _utf8mb4 X'78')) AND ((`a` < 9) OR (`a` = 9 AND `b` <= _utf8mb4 X'7927')) " +
		"ORDER BY `a`, `b` LIMIT 500"
	if got != want {
		t.Errorf("rowsQuery:\n got %s\nwant %s", got, want)
	}
	if got := rowsQuery(tb, cc, keyrange.Range{}, 10); got != "SELECT `a`, `b`, CAST(`f` AS DOUBLE), CAST(`u` AS BINARY(16)) FROM `s`.`t` ORDER BY `a`, `b` LIMIT 10" {
		t.Errorf("unbounded: %s", got)
	}
	whole := &Table{Schema: "s", Name: "t"}
	if got := rowsQuery(whole, cc, keyrange.Range{}, 0); got != "SELECT `a`, `b`, CAST(`f` AS DOUBLE), CAST(`u` AS BINARY(16)) FROM `s`.`t`" {
		t.Errorf("whole table: %s", got)
	}
	if len(cc.cols) != 4 || !reflect.DeepEqual(cc.key, []int{0, 1}) {
		t.Errorf("columns %+v, key at %v", cc.cols, cc.key)
	}
	if _, err := newChunkColumns(tb, []schema.Column{{Name: "a", DataType: "int"}}); err == nil {
		t.Error("a key column missing from the table: no error")
	}
	if _, err := newChunkColumns(tb, []schema.Column{{Name: "g", DataType: "int", Generated: true}}); err != errGone {
		t.Errorf("no columns to copy: %v, want errGone", err)
	}
}

// TestCursor: a table's cursor walks its gaps chunk by chunk, and readers
// take the tables of a level in turn, one reader per table at a time.
func TestCursor(t *testing.T) {
	key := []keyrange.Column{{Name: "id", Kind: keyrange.Int}}
	k := func(n int64) keyrange.Key { return keyrange.Key{n} }
	cur := &cursor{t: &Table{Key: key}, gaps: []keyrange.Range{{Hi: k(10)}, {Lo: k(20), Hi: k(30)}, {Lo: k(40)}}}
	var walk []string
	for _, hi := range []keyrange.Key{k(5), k(10), k(25), nil, k(50), nil} {
		walk = append(walk, fmt.Sprint(cur.lo, "-", cur.gapHi()))
		cur.advance(hi)
		if cur.exhausted {
			break
		}
	}
	want := "[]-[10] [5]-[10] [20]-[30] [25]-[30] [40]-[] [50]-[]"
	if strings.Join(walk, " ") != want || !cur.exhausted {
		t.Errorf("walk %v (exhausted %v), want %s", walk, cur.exhausted, want)
	}

	ctx := context.Background()
	a, b := &cursor{t: &Table{Name: "a"}}, &cursor{t: &Table{Name: "b"}}
	lv := &level{cursors: []*cursor{a, b}, changed: make(chan struct{})}
	first, _ := lv.take(ctx)
	second, _ := lv.take(ctx)
	if first != a || second != b {
		t.Fatalf("took %s then %s", first.t.Name, second.t.Name)
	}
	got := make(chan *cursor, 1)
	go func() { c, _ := lv.take(ctx); got <- c }()
	select {
	case c := <-got:
		t.Fatalf("took %s while every table was held", c.t.Name)
	case <-time.After(50 * time.Millisecond):
	}
	b.exhausted = true
	lv.give(b)
	lv.give(a)
	if c := <-got; c != a {
		t.Fatalf("took %v, want a (b is done)", c)
	}
	a.exhausted = true
	lv.give(a)
	if c, err := lv.take(ctx); c != nil || err != nil {
		t.Fatalf("every table read: %v %v", c, err)
	}
}
