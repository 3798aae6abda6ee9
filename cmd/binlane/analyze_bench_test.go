package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestAnalyzeBenchBacklogs generates the benchmark's backlogs (bench/,
// sysbench with the same shapes, fewer transactions) on a sandbox source,
// analyses them with the benchmark machine's 2 cores, and prints predicted
// against measured speedups (bench/results/20261122-171516). It takes a
// few minutes: run it with BINLANE_ANALYZE_BENCH=1.
func TestAnalyzeBenchBacklogs(t *testing.T) {
	if os.Getenv("BINLANE_ANALYZE_BENCH") == "" {
		t.Skip("set BINLANE_ANALYZE_BENCH=1 to compare analyze's predictions with bench/results")
	}
	events := 20000
	if n, err := strconv.Atoi(os.Getenv("BINLANE_ANALYZE_BENCH_EVENTS")); err == nil {
		events = n
	}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	srcDB := src.OpenT(t, "")
	srcURL := binlaneURL(t, src, "sbtest", "hot")
	src.ExecT(t, "CREATE DATABASE sbtest", "CREATE DATABASE hot")
	sb := func(db, test, cmd string, tables, size, threads int) {
		t.Helper()
		args := []string{test, "--db-driver=mysql", "--mysql-host=127.0.0.1", "--mysql-port=" + strconv.Itoa(src.Port),
			"--mysql-user=root", "--mysql-db=" + db, "--tables=" + strconv.Itoa(tables), "--table-size=" + strconv.Itoa(size),
			"--threads=" + strconv.Itoa(threads), "--db-ps-mode=disable"}
		if cmd == "run" {
			args = append(args, "--events="+strconv.Itoa(events), "--time=0", "--rand-type=uniform")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "sysbench", append(args, cmd)...).CombinedOutput(); err != nil {
			t.Fatalf("sysbench %s %s: %v\n%s", test, cmd, err, out)
		}
	}
	sb("sbtest", "oltp_write_only", "prepare", 8, 100000, 4)
	sb("hot", "oltp_update_index", "prepare", 1, 16, 1)
	type scenario struct {
		name     string
		from, to string
		durable  bool
		measured []float64 // trx/s with 1, 2, 4, 8, 16 workers
	}
	var scenarios []scenario
	p0 := sourcePos(t, srcDB)
	sb("sbtest", "oltp_write_only", "run", 8, 100000, 16)
	p1 := sourcePos(t, srcDB)
	sb("sbtest", "oltp_update_index", "run", 8, 100000, 1)
	p2 := sourcePos(t, srcDB)
	sb("hot", "oltp_update_index", "run", 1, 16, 16)
	p3 := sourcePos(t, srcDB)
	scenarios = append(scenarios,
		scenario{"durable oltp_write_only", p0, p1, true, []float64{9711, 13980, 14512, 13006, 13129}},
		scenario{"non-durable oltp_write_only", p0, p1, false, []float64{13016, 17091, 16935, 17280, 14700}},
		scenario{"1-thread oltp_update_index, durable", p1, p2, true, []float64{18364, 22409, 25578, 25057, 25210}},
		scenario{"hot rows, durable", p2, p3, true, []float64{56840, 54470, 48603, 48545, 38937}})

	var table strings.Builder
	fmt.Fprintf(&table, "| scenario | | w1 | w2 | w4 | w8 | w16 |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, sc := range scenarios {
		args := []string{"--source", srcURL, "--start-gtid", sc.from, "--stop-at-gtid", sc.to, "--cores", "2",
			"--simulate-threads", "1,2,4,8,16", "--json", "--target-durable=" + strconv.FormatBool(sc.durable)}
		out, err := runAnalyzeCmd(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var r analyze.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		pred, meas := "| "+sc.name+" | predicted |", "| | measured |"
		rate := "| | predicted trx/s (measured) |"
		for i, s := range r.Simulations {
			m := sc.measured[i] / sc.measured[0]
			mark := ""
			if d := s.Writeset.Speedup/m - 1; d > 0.25 || d < -0.25 {
				mark = " (!)"
			}
			pred += fmt.Sprintf(" %.2fx%s |", s.Writeset.Speedup, mark)
			meas += fmt.Sprintf(" %.2fx |", m)
			rate += fmt.Sprintf(" %.0f (%.0f) |", s.Writeset.TxnPerSec, sc.measured[i])
		}
		fmt.Fprintln(&table, pred)
		fmt.Fprintln(&table, meas)
		fmt.Fprintln(&table, rate)
		text, _ := runAnalyzeCmd(t, append(args[:len(args)-2], "--target-durable="+strconv.FormatBool(sc.durable))...)
		t.Logf("%s:\n%s", sc.name, text)
	}
	t.Logf("predicted (analyze --cores 2) vs measured speedups over 1 worker:\n%s", table.String())
}
