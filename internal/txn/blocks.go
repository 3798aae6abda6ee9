package txn

import "github.com/binlane/binlane/internal/binlog"

// blocks carves the arrays a small part is handed over in (its items,
// changes and values) out of shared blocks: one allocation per block
// instead of three per transaction. The arrays hold pointers, so each
// allocation also paid for setting up the collector's view of it: in a
// profile of order entry, the three allocations were 60% of handing a
// transaction over and 6% of binlane's CPU.
//
// A block lives as long as any part carved from it; parts are applied,
// and dropped, in about the order they were carved, so what a block keeps
// alive beyond its parts is bounded by one block. A carved array's
// capacity is its length: an append by its reader cannot write into the
// next part's.
type blocks struct {
	items   []Item
	changes []Change
	values  []binlog.Value
}

// blockBytes is the size of a block; an array larger than a quarter of it
// gets its own allocation, so a block's unused tail stays under a quarter.
const blockBytes = 32 << 10

// carve returns n zeroed elements from free, starting a block of
// blockBytes when free holds too few.
func carve[T any](free *[]T, n, size int) []T {
	per := blockBytes / size
	if n > per/4 {
		return make([]T, n)
	}
	if len(*free) < n {
		*free = make([]T, per)
	}
	s := (*free)[:n:n]
	*free = (*free)[n:]
	return s
}
