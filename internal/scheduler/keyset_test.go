package scheduler

import (
	"slices"
	"testing"
)

// TestCopyFromArenas: copies carved from shared arenas equal their source,
// keep nothing of it, and one set's copy never overlaps another's.
func TestCopyFromArenas(t *testing.T) {
	var keys []uint64
	var tables []TableAccess
	srcs := []KeySet{
		{Keys: []uint64{1, 2}, Shared: []uint64{3}, Tables: []TableAccess{{Table: 7}}, Barrier: "why"},
		{},
		{Keys: []uint64{4}, Tables: []TableAccess{{Table: 8, Exclusive: true}, {Table: 9}}},
		{Shared: []uint64{5, 6}},
	}
	copies := make([]KeySet, len(srcs))
	for i := range srcs {
		copies[i].CopyFromArenas(&srcs[i], &keys, &tables)
	}
	for i := range srcs {
		c, s := copies[i], srcs[i]
		if !slices.Equal(c.Keys, s.Keys) || !slices.Equal(c.Shared, s.Shared) || !slices.Equal(c.Tables, s.Tables) || c.Barrier != s.Barrier {
			t.Fatalf("copy %d is %+v, want %+v", i, c, s)
		}
		if cap(c.Keys) != len(c.Keys) || cap(c.Shared) != len(c.Shared) || cap(c.Tables) != len(c.Tables) {
			t.Fatalf("copy %d has capacity beyond its length: an append would write into the next copy", i)
		}
		for j := range s.Keys {
			s.Keys[j] = 99
		}
	}
	if copies[0].Keys[0] != 1 || copies[2].Keys[0] != 4 || copies[3].Shared[1] != 6 {
		t.Fatalf("a copy shares memory with its source or another copy: %+v", copies)
	}
}
