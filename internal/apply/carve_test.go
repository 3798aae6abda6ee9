package apply

import "testing"

// TestCarver: every slice carved is zeroed, not nil, exactly as long as
// asked with no capacity past its end, and independent of the others: an
// append to one copies it away instead of writing into the next.
func TestCarver(t *testing.T) {
	var c carver[int]
	sizes := []int{0, 1, 3, carveBlock / 8, carveBlock/8 + 1, 5, carveBlock / 8, carveBlock / 8, 2, carveBlock, 7}
	var got [][]int
	for i, n := range sizes {
		s := c.take(n)
		if s == nil || len(s) != n || cap(s) != n {
			t.Fatalf("take(%d): nil %v, len %d, cap %d", n, s == nil, len(s), cap(s))
		}
		for j := range s {
			if s[j] != 0 {
				t.Fatalf("take(%d): element %d is %d, not zeroed", n, j, s[j])
			}
			s[j] = i + 1
		}
		got = append(got, s)
	}
	grown := append(got[1], -1) // capacity cut: a copy, not the next slice's first element
	grown[0] = -1
	for i, s := range got {
		for j, v := range s {
			if v != i+1 {
				t.Fatalf("slice %d (of %d): element %d is %d, want %d: carved slices overlap", i, sizes[i], j, v, i+1)
			}
		}
	}
}
