package main

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

// TestSoakCrash runs TestCrashAndResume's scenario over many seeds (the
// workload's and the kill times'), with 1-16 workers and big transactions
// of random size, 10 kills or more each. Only when asked: make soak (see
// internal/replicate/soak_test.go).
func TestSoakCrash(t *testing.T) {
	from, err := strconv.ParseInt(os.Getenv("BINLANE_SOAK"), 10, 64)
	if err != nil {
		t.Skip("a soak test: set BINLANE_SOAK to the first seed (make soak)")
	}
	n, _ := strconv.Atoi(os.Getenv("BINLANE_SOAK_N"))
	for seed := from; seed < from+int64(max(n, 2)); seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			got := crashAndResume(t, crashPlan{workloadSeed: seed, killSeed: uint64(seed), workers: 1 + int(seed*7%16),
				kills: 10, duration: 10 * time.Second, bigTxnRows: []int{0, 5000, 40000}[seed%3]})
			t.Logf("seed %d: %+v", seed, got)
		})
	}
}
