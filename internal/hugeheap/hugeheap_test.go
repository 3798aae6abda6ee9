package hugeheap

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestReserve: the range Reserve marked lies in mappings the kernel lists
// with the huge-page advice (VmFlags "hg"), from its first byte to its last;
// the allocation that made it is collected; a second Reserve does nothing.
func TestReserve(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if _, n := Reserve(hugePage); n != 0 {
		t.Fatalf("Reserve of one huge page marked %d bytes: nothing whole fits", n)
	}
	addr, n := Reserve(16 << 20)
	if n == 0 {
		t.Skip("the kernel takes no MADV_HUGEPAGE (no transparent huge pages)")
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc >= 16<<20 {
		t.Errorf("heap allocated after Reserve: %d bytes: its 16 MiB were not collected", ms.HeapAlloc)
	}
	if _, again := Reserve(16 << 20); again != 0 {
		t.Errorf("a second Reserve marked %d bytes: the first one's range is the heap's already", again)
	}
	if addr%hugePage != 0 || n%hugePage != 0 || n < 12<<20 {
		t.Fatalf("marked %d bytes at %#x: want whole huge pages, most of 16 MiB", n, addr)
	}
	for _, at := range []uintptr{addr, addr + uintptr(n) - 1} {
		if flags := vmFlags(t, at); !strings.Contains(" "+flags+" ", " hg ") {
			t.Errorf("the mapping holding %#x has VmFlags %q: no huge-page advice", at, flags)
		}
	}
}

// vmFlags returns the VmFlags line of the mapping of this process that
// holds addr.
func vmFlags(t *testing.T, addr uintptr) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if lo, hi, ok := mappingRange(line); ok {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimSpace(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return ""
}

// mappingRange parses a mapping's first line ("lo-hi perms ...").
func mappingRange(line string) (lo, hi uintptr, ok bool) {
	r, _, found := strings.Cut(line, " ")
	a, b, dash := strings.Cut(r, "-")
	if !found || !dash {
		return 0, 0, false
	}
	l, err1 := strconv.ParseUint(a, 16, 64)
	h, err2 := strconv.ParseUint(b, 16, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uintptr(l), uintptr(h), true
}
