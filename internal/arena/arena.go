// Package arena carves small slices out of shared arrays, for the
// per-transaction bookkeeping of the apply path: one allocation per
// thousands of elements instead of one per transaction.
//
// A region is handed out once and its array is never reused: its owner
// holds it as it would hold an array of its own. What it must never do:
// hand out memory that was handed out before, or hold pointers into
// memory that outlives the regions' owners by much (an array lives as long
// as any region of it, so element types with pointers keep what all its
// regions point to alive: callers bound the array size accordingly).
package arena

// Take returns n zero elements from *a, with a capacity that ends with
// them, starting a new array of size elements (or n, when larger) when
// fewer than n are left.
func Take[T any](a *[]T, n, size int) []T {
	s := *a
	if cap(s)-len(s) < n {
		s = make([]T, 0, max(size, n))
	}
	l := len(s)
	*a = s[:l+n]
	return s[l : l+n : l+n]
}
