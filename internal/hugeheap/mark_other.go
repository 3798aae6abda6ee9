//go:build !linux

package hugeheap

// marks is false: transparent huge pages are Linux's, so Reserve does
// nothing here (no allocation, no collection).
const marks = false

func mark(int) (addr uintptr, size int) { return 0, 0 }
