package hugeheap

import (
	"syscall"
	"unsafe"
)

// marks: Reserve allocates and marks (see mark).
const marks = true

// madvHugePage is Linux's MADV_HUGEPAGE.
const madvHugePage = 14

// mark allocates n bytes, marks the whole huge pages among them and lets
// them go.
//
//go:noinline
func mark(n int) (addr uintptr, size int) {
	b := make([]byte, n)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	beg := (start + hugePage - 1) &^ (hugePage - 1)
	end := (start + uintptr(n)) &^ (hugePage - 1)
	if end <= beg {
		return 0, 0
	}
	if err := syscall.Madvise(b[beg-start:end-start], madvHugePage); err != nil {
		return 0, 0
	}
	return beg, int(end - beg)
}
