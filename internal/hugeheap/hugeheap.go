// Package hugeheap asks Linux for transparent huge pages under the Go heap.
//
// Every page of heap costs a page fault when first touched: 11-13 µs each
// on the benchmark's VM, where a drain of 28,000 document transactions
// faulted 30,883 times (its peak RSS of 134 MiB, page by page), a quarter
// of binlane's CPU. Where THP is "always" (RHEL's default) the heap gets
// 2 MiB pages anyway; where it is "madvise" (Debian's) only memory marked
// MADV_HUGEPAGE does, and the Go runtime marks none of its heap. A 2 MiB
// page faults once, zeroed in about 0.2 ms, against 512 faults.
//
// Reserve grows the heap once, by n bytes, with one allocation the
// runtime takes from fresh address space, marks that range and lets the
// allocation go: the heap keeps the range, and the spans it later makes
// there fault in 2 MiB at a time. Nothing is touched, so RSS does not
// grow until the heap does. The package owns that one call; it must never
// hold memory or change anything but the advice on the range.
package hugeheap

import (
	"runtime"
	"sync/atomic"
)

const hugePage = 2 << 20

// reserved is set by the process's one Reserve: the range is the
// process's heap, and a second allocation of n bytes would come from the
// first one's freed range and be zeroed, touching it all (a test process
// runs many commands).
var reserved atomic.Bool

// Reserve marks n bytes of new heap for huge pages and returns where the
// marked range starts and how long it is (0 where the kernel refuses: no
// THP, not Linux; and after the process's first call). The address is for
// a test to look up, never a pointer.
func Reserve(n int) (addr uintptr, size int) {
	if !marks || n < 2*hugePage || !reserved.CompareAndSwap(false, true) {
		return 0, 0
	}
	addr, size = mark(n)
	// The allocation is garbage once mark returns. A collection it
	// started may still have found it live and set the next one's goal at
	// three times n (GOGC 200): collect it now, while the heap is small.
	runtime.GC()
	return addr, size
}
