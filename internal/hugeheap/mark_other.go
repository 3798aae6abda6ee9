//go:build !linux

package hugeheap

// mark does nothing: transparent huge pages are Linux's.
func mark(int) (addr uintptr, size int) { return 0, 0 }
