package copier

// arena holds the values of a chunk's rows in a few large blocks instead
// of an allocation per value and per row (a sysbench row is five of them):
// the copy reads millions of rows, and the garbage collector's share of
// binlane's CPU is taken from the target on a shared machine.
//
// A reader's arena is used again for its next chunk (reset), which it reads
// only once its last chunk committed (reader.waitWritten): nothing holds
// that chunk's rows then. Memory new to the process costs a page fault per
// 4 KiB on first touch, about 11 µs each on the benchmark VM; reading every
// chunk into fresh blocks grew binlane's heap to 230 MiB in a 2M-row copy
// (65,000 faults, half of its CPU in the kernel), where the reused blocks
// of four readers hold what four chunks need.
type arena struct {
	vals  blocks[byte]   // the values' bytes
	slots blocks[[]byte] // the rows' value slots
	rows  [][][]byte
}

const arenaBlock = 64 << 10

// bytes returns a copy of v (never nil: nil is NULL).
func (a *arena) bytes(v []byte) []byte {
	if len(v) == 0 {
		return make([]byte, 0) // no allocation
	}
	if len(v) > arenaBlock/4 {
		return append([]byte(nil), v...)
	}
	b := a.vals.take(len(v), arenaBlock)
	copy(b, v)
	return b
}

// row returns n nil values.
func (a *arena) row(n int) [][]byte {
	row := a.slots.take(n, max(n, 1024))
	clear(row) // a block used before holds the values of its last chunk
	return row
}

// batch returns the slice a chunk's rows are appended to: the one a reset
// gave back, empty, with room for the rows expected.
func (a *arena) batch(expect int) [][][]byte {
	if expect = min(expect, 1<<16); cap(a.rows) < expect {
		a.rows = make([][][]byte, 0, expect)
	}
	return a.rows[:0]
}

// keep records the rows' slice, to be used again after reset.
func (a *arena) keep(rows [][][]byte) [][][]byte {
	a.rows = rows
	return rows
}

// reset makes every block free for the next chunk. The caller promises
// that nothing holds the rows read into the arena any more.
func (a *arena) reset() {
	a.vals.reset()
	a.slots.reset()
	clear(a.rows) // no row of the last chunk kept reachable through it
	a.rows = a.rows[:0]
}

// blocks hands out pieces of large blocks of T: the blocks filled since the
// last reset (full, and cur being filled), and those a reset freed (used
// again, last first).
type blocks[T any] struct {
	cur        []T
	full, free [][]T
}

// take returns n elements, in a new block of size elements (at least n)
// when the current one has no room; capped, so that an append to them
// cannot reach the next.
func (b *blocks[T]) take(n, size int) []T {
	if cap(b.cur)-len(b.cur) < n {
		if b.cur != nil {
			b.full = append(b.full, b.cur)
		}
		b.cur = nil
		if k := len(b.free); k > 0 && cap(b.free[k-1]) >= n {
			b.cur, b.free = b.free[k-1][:0], b.free[:k-1]
		} else {
			b.cur = make([]T, 0, size)
		}
	}
	k := len(b.cur)
	b.cur = b.cur[:k+n]
	return b.cur[k : k+n : k+n]
}

// reset frees every block.
func (b *blocks[T]) reset() {
	if b.cur != nil {
		b.full = append(b.full, b.cur)
	}
	b.free = append(b.free, b.full...)
	clear(b.full)
	b.cur, b.full = nil, b.full[:0]
}
