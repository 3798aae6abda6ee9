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
	buf  []byte   // the block values are added to
	vals [][]byte // the block of row slots rows are cut from
	rows [][][]byte
	// full and fullVals are the blocks filled since reset, free ones
	// those a reset gave back (in use again, last first).
	full, free         [][]byte
	fullVals, freeVals [][][]byte
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
	if cap(a.buf)-len(a.buf) < len(v) {
		if a.buf != nil {
			a.full = append(a.full, a.buf)
		}
		a.buf = nil
		if n := len(a.free); n > 0 {
			a.buf, a.free = a.free[n-1][:0], a.free[:n-1]
		} else {
			a.buf = make([]byte, 0, arenaBlock)
		}
	}
	n := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

// row returns n nil values.
func (a *arena) row(n int) [][]byte {
	if cap(a.vals)-len(a.vals) < n {
		if a.vals != nil {
			a.fullVals = append(a.fullVals, a.vals)
		}
		a.vals = nil
		if k := len(a.freeVals); k > 0 && cap(a.freeVals[k-1]) >= n {
			a.vals, a.freeVals = a.freeVals[k-1][:0], a.freeVals[:k-1]
		} else {
			a.vals = make([][]byte, 0, max(n, 1024))
		}
	}
	k := len(a.vals)
	a.vals = a.vals[:k+n]
	row := a.vals[k : k+n : k+n]
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
	if a.buf != nil {
		a.full = append(a.full, a.buf)
	}
	if a.vals != nil {
		a.fullVals = append(a.fullVals, a.vals)
	}
	a.free = append(a.free, a.full...)
	a.freeVals = append(a.freeVals, a.fullVals...)
	clear(a.full)
	clear(a.fullVals)
	a.buf, a.vals, a.full, a.fullVals = nil, nil, a.full[:0], a.fullVals[:0]
	clear(a.rows) // no row of the last chunk kept reachable through it
	a.rows = a.rows[:0]
}
