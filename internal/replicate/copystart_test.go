package replicate

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/workload"
)

// sideTableDDL is the workload's side table (see workload's ddl).
const sideTableDDL = " (id INT PRIMARY KEY, v VARCHAR(10) COLLATE utf8mb4_general_ci UNIQUE) ENGINE=InnoDB"

// TestCopyStartDDLWhileListing forces DDL that cancels out while the copy
// lists the source's tables to pick its start, the race behind "table
// `wl`.`side_2` does not exist on the target": right after a listing the
// source creates a table and writes a row to it, and right before the
// next listing it writes another row and drops the table again (or the
// other way round: drops a table, and creates it again with a row). Two
// listings around the start position agree (neither has the table; or
// both have it, with the same definition), but at the position the table
// existed (or did not): the stream then started with rows of a table the
// target never got (or with the CREATE of a table it already had). Each
// case must end with the copy done and caught up, and the target equal to
// the source row by row.
func TestCopyStartDDLWhileListing(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := workload.Setup(ctx, e.src.OpenT(t, "")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name         string
		setup        []string
		listed, next []string // right after a listing; right before the next
	}{
		{name: "created and dropped",
			listed: []string{"CREATE TABLE wl.side_0" + sideTableDDL, "INSERT INTO wl.side_0 VALUES (1, 'a')"},
			next:   []string{"INSERT INTO wl.side_0 VALUES (2, 'b')", "DROP TABLE wl.side_0"}},
		{name: "dropped and created again",
			setup:  []string{"CREATE TABLE wl.side_1" + sideTableDDL, "INSERT INTO wl.side_1 VALUES (1, 'a')"},
			listed: []string{"DROP TABLE wl.side_1"},
			next:   []string{"CREATE TABLE wl.side_1" + sideTableDDL, "INSERT INTO wl.side_1 VALUES (2, 'b')"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if len(c.setup) > 0 {
				e.src.ExecT(t, c.setup...)
			}
			step := 0
			hook := func(listed bool) {
				switch {
				case listed && step == 0:
					e.src.ExecT(t, c.listed...)
					step++
				case !listed && step == 1:
					e.src.ExecT(t, c.next...)
					step++
				}
			}
			stream := "c" + strconv.Itoa(i)
			cfg := e.copyConfig(t)
			cfg.Stream = stream
			cfg.Copy.ExitWhenDone = true
			cfg.Copy.AroundListing = hook
			err := Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if step != 2 {
				t.Fatalf("the source changed %d times of 2 while the tables were listed", step)
			}
			cfg = e.copyConfig(t)
			cfg.Stream = stream
			cfg.StopAtGTID = gtidPos(t, e.src)
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			e.verifyEqual(t)
			// The next case starts with an empty target, and a stream of
			// its own: this one is retired (it would own the tables).
			e.dst.ExecT(t, "DROP DATABASE IF EXISTS wl", "DELETE FROM binlane.streams WHERE name = '"+stream+"'")
		})
	}
}

// TestCopyStartUnderDDLChurn starts the copy into an empty target again and
// again while side tables are created, written and dropped on the source
// (each there for a short while now and then), and the listing of the
// source's tables takes long (filler tables that sort first). Each start
// must end with the copy done and caught up, and the target equal to the
// source row by row.
//
// By default it starts 4 times with one side table. BINLANE_COPY_START_ATTEMPTS=N
// starts N times with three: before the start was checked against the
// binlog, 3 of 20 such starts stopped with "table `wl`.`side_2` does not
// exist on the target". With three side tables the start often needs 10
// or more listings to find one without DDL, too close to its limit of 20
// for the default run.
func TestCopyStartUnderDDLChurn(t *testing.T) {
	attempts, sides := 4, 1
	if n, err := strconv.Atoi(os.Getenv("BINLANE_COPY_START_ATTEMPTS")); err == nil && n > 0 {
		attempts, sides = n, 3
	}
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(3+attempts/2)*time.Minute)
	defer cancel()
	if err := workload.Setup(ctx, e.src.OpenT(t, "")); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		e.src.ExecT(t, fmt.Sprintf("CREATE TABLE wl.fill_%02d (id INT PRIMARY KEY, v INT) ENGINE=InnoDB", i),
			fmt.Sprintf("INSERT INTO wl.fill_%02d VALUES (1, %d), (2, %d)", i, i, i))
	}
	for a := 1; a <= attempts; a++ {
		t0 := time.Now()
		churnCtx, stopChurn := context.WithCancel(ctx)
		wait := e.churnSideTables(t, churnCtx, sides, 150*time.Millisecond, time.Second)
		time.Sleep(300 * time.Millisecond)
		stream := "s" + strconv.Itoa(a)
		cfg := e.copyConfig(t)
		cfg.Stream = stream
		cfg.Copy.ExitWhenDone = true
		err := Run(ctx, cfg)
		stopChurn()
		cycles := wait()
		if err != nil {
			t.Errorf("start %d (%d side tables created and dropped): %v", a, cycles, err)
			e.dst.ExecT(t, "DROP DATABASE IF EXISTS wl", "DELETE FROM binlane.streams WHERE name = '"+stream+"'")
			continue
		}
		cfg = e.copyConfig(t)
		cfg.Stream = stream
		cfg.StopAtGTID = gtidPos(t, e.src)
		if err := Run(ctx, cfg); err != nil {
			t.Fatalf("start %d, catching up: %v", a, err)
		}
		e.verifyEqual(t)
		t.Logf("start %d: equal after %s (%d side tables created and dropped)", a, time.Since(t0).Round(time.Millisecond), cycles)
		e.dst.ExecT(t, "DROP DATABASE IF EXISTS wl", "DELETE FROM binlane.streams WHERE name = '"+stream+"'")
	}
}

// churnSideTables creates, writes and drops the workload's side tables
// (wl.side_N) on the source, one session per table, until ctx ends: each
// table exists for about exist (a row written at each end), then is gone
// for about gone. The function it returns waits for the sessions and
// counts the tables created and dropped.
func (e *env) churnSideTables(t *testing.T, ctx context.Context, tables int, exist, gone time.Duration) func() int64 {
	t.Helper()
	db := e.src.OpenT(t, "")
	db.SetMaxOpenConns(tables)
	var cycles atomic.Int64
	var wg sync.WaitGroup
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d/2 + rand.N(d+1)):
		case <-ctx.Done():
		}
	}
	for n := range tables {
		wg.Go(func() {
			name := fmt.Sprintf("wl.side_%d", n)
			exec := func(ctx context.Context, q string) bool {
				_, err := db.ExecContext(ctx, q)
				if err != nil && ctx.Err() == nil {
					t.Errorf("churn: %s: %v", q, err)
				}
				return err == nil
			}
			sleep(rand.N(gone)) // the tables come and go out of step
			for i := 0; ctx.Err() == nil; i++ {
				ok := exec(ctx, "CREATE TABLE "+name+sideTableDDL) &&
					exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (1, 'a%d')", name, i))
				sleep(exist)
				ok = ok && exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (2, 'b%d')", name, i))
				// Dropped even after ctx ended: the next attempt starts without it.
				if !exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+name) {
					return
				}
				if ok {
					cycles.Add(1)
				}
				sleep(gone)
			}
		})
	}
	return func() int64 { wg.Wait(); return cycles.Load() }
}
