package txn

import (
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

// TestFillUnwritten: a partial update's after image takes the before
// image's value of each column the update did not write; a column in
// neither image stays absent.
func TestFillUnwritten(t *testing.T) {
	v := func(n int64) binlog.Value { return binlog.Value{Kind: binlog.KindInt, N: n} }
	absent := binlog.Value{Kind: binlog.KindAbsent}
	null := binlog.Value{Kind: binlog.KindNull}
	cases := []struct {
		name                string
		before, after, want []binlog.Value
	}{
		{"MINIMAL: the key from the before image", []binlog.Value{v(1), absent, absent}, []binlog.Value{absent, v(5), absent},
			[]binlog.Value{v(1), v(5), absent}},
		{"a written key stays the new one", []binlog.Value{v(1), absent}, []binlog.Value{v(2), absent}, []binlog.Value{v(2), absent}},
		{"NOBLOB: unwritten blob absent, the rest filled", []binlog.Value{v(1), null, absent}, []binlog.Value{absent, absent, absent},
			[]binlog.Value{v(1), null, absent}},
		{"a written NULL stays NULL", []binlog.Value{v(1), v(3)}, []binlog.Value{absent, null}, []binlog.Value{v(1), null}},
	}
	for _, c := range cases {
		(&Change{Kind: binlog.RowsUpdate, Before: c.before, After: c.after}).FillUnwritten()
		for i := range c.want {
			if c.after[i].Kind != c.want[i].Kind || c.after[i].N != c.want[i].N {
				t.Errorf("%s: column %d is %+v, want %+v", c.name, i, c.after[i], c.want[i])
			}
		}
	}
}
