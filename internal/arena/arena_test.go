package arena

import "testing"

// TestTake: regions are zero, disjoint, capped at their length, and a new
// array starts when the one in use has too little left.
func TestTake(t *testing.T) {
	var a []int
	var got [][]int
	for _, n := range []int{0, 3, 5, 1, 8, 20, 2} {
		r := Take(&a, n, 10)
		if len(r) != n || cap(r) != n {
			t.Fatalf("Take(%d): len %d cap %d", n, len(r), cap(r))
		}
		for i := range r {
			if r[i] != 0 {
				t.Fatalf("Take(%d): element %d is %d, not zero", n, i, r[i])
			}
			r[i] = len(got) + 1
		}
		got = append(got, r)
	}
	for k, r := range got {
		for i := range r {
			if r[i] != k+1 {
				t.Fatalf("region %d element %d was overwritten with %d", k, i, r[i])
			}
		}
	}
	if len(got[5]) != 20 {
		t.Fatal("a region larger than the array size")
	}
}
