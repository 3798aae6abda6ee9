package copier

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/testutil"
)

// TestWaitStartCommitted: the wait before a new copy's first snapshot ends
// once a snapshot holds the start position, told by the snapshot's
// coordinate or, when that stays before the start's binlog end, by its
// GTID state (which the copy's own account may read); it goes on while the
// start holds a transaction no snapshot has.
func TestWaitStartCommitted(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	root := src.OpenT(t, "")
	db := src.OpenBinlaneT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A write load: snapshots are placed by coordinate only.
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for load.Err() == nil {
			_, _ = root.ExecContext(load, "INSERT INTO app.t (v) VALUES (1)")
		}
	}()
	defer func() { stop(); wg.Wait() }()
	now := func() (gtid.Set, string, uint64) {
		var pos, file, a, b string
		var off uint64
		if err := root.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		if err := root.QueryRow("SHOW MASTER STATUS").Scan(&file, &off, &a, &b); err != nil {
			t.Fatal(err)
		}
		set, err := gtid.ParseSet(pos)
		if err != nil {
			t.Fatal(err)
		}
		return set, file, off
	}
	log := testutil.Logger(t)

	start, file, off := now()
	began := time.Now()
	if err := WaitStartCommitted(ctx, db, start, file, off, log); err != nil {
		t.Fatal(err)
	}
	t.Logf("reached by coordinate in %v", time.Since(began))

	// The binlog's end far ahead of any commit (as events that are not
	// commits can leave it): the snapshot's GTID state decides.
	start, file, off = now()
	began = time.Now()
	if err := WaitStartCommitted(ctx, db, start, file, off+1<<30, log); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 4*time.Second {
		t.Fatalf("the GTID state should have ended the wait, not its time bound: took %v", took)
	}

	// A start no snapshot holds: the wait goes on.
	start, file, off = now()
	last, ok := start.Domain(0)
	if !ok {
		t.Fatalf("no domain 0 in %s", start)
	}
	ahead, err := gtid.ParseSet(fmt.Sprintf("0-%d-%d", last.ServerID, last.Seq+1_000_000))
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancelShort()
	if err := WaitStartCommitted(short, db, ahead, file, off+1<<30, log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a start position no snapshot holds: got %v, want the wait to go on until the deadline", err)
	}
}
