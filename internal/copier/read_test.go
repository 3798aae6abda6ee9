package copier

import (
	"bytes"
	"strconv"
	"testing"
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
