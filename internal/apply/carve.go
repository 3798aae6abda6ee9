package apply

// carver hands out the small arrays every transaction's work needs (its
// table plans, its writeset's spans) from shared blocks: one allocation
// per block instead of one per transaction (two of the twenty allocations
// per transaction on the shop benchmark). A slice handed out is fresh
// zeroed memory that is never handed out again, with its capacity cut to
// its length (an append copies it away), so it is as safe to keep as one
// from make. It keeps its block alive while it lives; works live until
// their batch commits, so that is a few blocks. An array larger than an
// eighth of a block gets an allocation of its own. Not safe for concurrent
// use: the coordinator's goroutine owns it.
type carver[T any] struct{ free []T }

// carveBlock is the elements of one block (8 KiB of plan pointers, 24 KiB
// of spans).
const carveBlock = 1024

// take returns a zeroed slice of n elements; not nil, also when n is 0.
func (c *carver[T]) take(n int) []T {
	if n == 0 || n > carveBlock/8 {
		return make([]T, n)
	}
	if len(c.free) < n {
		c.free = make([]T, carveBlock)
	}
	s := c.free[:n:n]
	c.free = c.free[n:]
	return s
}
