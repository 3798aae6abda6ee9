package copier

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// TestFilterPartialImages: during a copy, partial row images (MINIMAL,
// NOBLOB) are kept or dropped as full ones are, by the chunking key their
// before image holds; what cannot be placed exactly is an error.
func TestFilterPartialImages(t *testing.T) {
	tbl := &Table{Schema: "d", Name: "t", Key: []keyrange.Column{{Name: "id", Kind: keyrange.Int}}}
	p := &plan.Table{Name: "`d`.`t`", Target: &schema.Table{Schema: "d", Name: "t"}, Cols: []plan.Col{{Name: "id"}, {Name: "v"}, {Name: "w"}}}
	id := func(n int64) binlog.Value { return binlog.Value{Kind: binlog.KindInt, N: n} }
	absent := binlog.Value{Kind: binlog.KindAbsent}
	row := func(v ...binlog.Value) []binlog.Value { return v }
	// An update's after image as txn completes it: the key from the before
	// image when the update did not write it.
	upd := func(before, after int64) txn.Change {
		return txn.Change{Kind: binlog.RowsUpdate, Partial: true, Before: row(id(before), absent, absent), After: row(id(after), id(5), absent)}
	}
	cases := []struct {
		name string
		c    txn.Change
		want binlog.RowsKind // 0: dropped
		err  string
	}{
		{"update of a copied row: kept", upd(3, 3), binlog.RowsUpdate, ""},
		{"update of a row not copied yet: its chunk carries it", upd(30, 30), 0, ""},
		{"update moving a row out of the copied range: a delete by key", upd(3, 30), binlog.RowsDelete, ""},
		{"update moving a row into the copied range: no whole row to insert", upd(30, 3), 0, "does not hold the whole row"},
		{"delete of a copied row", txn.Change{Kind: binlog.RowsDelete, Partial: true, Before: row(id(3), absent, absent)}, binlog.RowsDelete, ""},
		{"delete of a row not copied yet", txn.Change{Kind: binlog.RowsDelete, Partial: true, Before: row(id(30), absent, absent)}, 0, ""},
		{"insert into the copied range", txn.Change{Kind: binlog.RowsInsert, Partial: true, After: row(id(4), absent, id(1))}, binlog.RowsInsert, ""},
		{"an image without the chunking key", txn.Change{Kind: binlog.RowsDelete, Partial: true, Before: row(absent, id(1), absent)}, 0, "lacks its column `id`"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := NewState([]*Table{tbl}, nil)
			if err != nil {
				t.Fatal(err)
			}
			s.tables["d.t"].cov.Add(keyrange.Range{Hi: keyrange.Key{int64(10)}}) // rows up to 10 copied
			out, _, ok, err := s.Filter(p, []txn.Change{c.c})
			if !ok {
				t.Fatal("the table is being copied")
			}
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "`d`.`t`") {
					t.Fatalf("error %v, want %q and the table", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.want == 0 && len(out) != 0:
				t.Fatalf("kept %+v, want it dropped", out)
			case c.want != 0 && (len(out) != 1 || out[0].Kind != c.want || !out[0].Partial):
				t.Fatalf("got %+v, want one partial change of kind %v", out, c.want)
			}
		})
	}
}
