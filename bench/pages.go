package main

import (
	"fmt"
	"os"
	"path/filepath"
)

// warmPages writes mib MiB to a file in dir and deletes it, just before a
// drain's clock starts. On this VM the balloon driver hands pages that
// stayed free for about 2 s back to the host (free page reporting), and
// the kernel then spends 2-3x the CPU writing into them again (dd of 500
// MB into the page cache: 0.08 s with pages freed a second before, 0.16-
// 0.22 s after 3 s or more). A drain writes its target's binlog, redo and
// data files into fresh page cache, so its target CPU depended on how
// long the memory it got had been free: docs, MariaDB serial, 1.8 or 2.3
// target CPU-s run by run, the difference all in the kernel's
// copy_folio_from_iter_atomic and clear_page_erms (perf, 2026-11-29).
// Pages freed just before the clock starts are the first the drain gets,
// whoever drains.
func warmPages(dir string, mib int) error {
	name := filepath.Join(dir, "warm-pages")
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer os.Remove(name)
	buf := make([]byte, 1<<20)
	for i := 0; i < mib; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return fmt.Errorf("warming pages: %w", err)
		}
	}
	return f.Close()
}

// warmMiB: more than a drain of the benchmark writes in its first seconds.
const warmMiB = 2048
