package schema

import "testing"

// TestChunkKeyChoice: the one rule that picks the index cutting a table
// into ranges, for the copy and for verify.
func TestChunkKeyChoice(t *testing.T) {
	cols := []Column{
		{Name: "id", DataType: "int"},
		{Name: "a", DataType: "varchar"},
		{Name: "b", DataType: "int"},
		{Name: "n", DataType: "int", Nullable: true},
		{Name: "f", DataType: "float"},
		{Name: "tx", DataType: "text"},
	}
	pos := map[string]int{}
	for i, c := range cols {
		pos[c.Name] = i
	}
	ix := func(name string, names ...string) Index {
		x := Index{Name: name, Unique: true, Type: "BTREE"}
		for _, n := range names {
			x.Columns, x.Prefix = append(x.Columns, pos[n]), append(x.Prefix, 0)
		}
		return x
	}
	def := func(ixs ...Index) *Table { return &Table{Columns: cols, Indexes: ixs} }
	prefixed := ix("PRIMARY", "a")
	prefixed.Prefix[0] = 3
	hash := ix("PRIMARY", "id")
	hash.Type = "HASH"
	plain := ix("b", "b")
	plain.Unique = false
	deferred := ix("b", "b")
	deferred.Deferred = true
	cases := []struct {
		name string
		t    *Table
		want string
	}{
		{"primary", def(ix("a_b", "a"), ix("PRIMARY", "id", "b")), "PRIMARY"},
		{"fewest columns", def(ix("ab", "a", "b"), ix("b", "b")), "b"},
		{"first among equals", def(ix("x", "a"), ix("y", "b")), "x"},
		{"nullable unique skipped", def(ix("n", "n")), ""},
		{"float primary skipped", def(ix("PRIMARY", "f"), ix("a", "a")), "a"},
		{"prefix skipped", def(prefixed), ""},
		{"text skipped", def(ix("tx", "tx")), ""},
		{"hash skipped", def(hash), ""},
		{"plain index skipped", def(plain), ""},
		{"deferred skipped", def(deferred), ""},
		{"none", def(), ""},
	}
	for _, c := range cases {
		got := ""
		if k := c.t.ChunkKey(); k != nil {
			got = k.Name
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
