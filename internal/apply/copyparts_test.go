package apply

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/txn"
)

// partsCopy is a copy of app.t in one pass whose chunk the test places in
// the stream: before it, changes of app.t are the chunk's to carry
// (filtered out); after it, they apply.
type partsCopy struct {
	mu        sync.Mutex
	sequenced bool
	late      []string // changes of app.t kept by filters after its chunk
}

func (f *partsCopy) Copying() bool { return true }

func (f *partsCopy) Filter(p *plan.Table, changes []txn.Change) ([]txn.Change, []keyrange.Key, bool, error) {
	if p.Target.Name != "t" {
		return changes, nil, false, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sequenced {
		if len(changes) > 0 {
			f.late = append(f.late, fmt.Sprintf("%d changes", len(changes)))
		}
		return changes, nil, false, nil
	}
	return changes[:0:0], nil, true, nil
}

func (f *partsCopy) Sequenced(c *txn.Chunk) (position.CopyProgress, bool, error) {
	f.mu.Lock()
	f.sequenced = true
	f.mu.Unlock()
	return position.CopyProgress{}, true, nil // nothing to write: the test's chunk has no rows
}

func (f *partsCopy) Committed(*txn.Chunk, int, time.Duration) {}

func (f *partsCopy) Statement(*txn.Statement) ([]position.CopyProgress, []*txn.IndexBuild, error) {
	return nil, nil, nil
}

// TestCopyFiltersPartsInStreamOrder: a transaction sent in parts is
// filtered for the copy where it stands in the stream, not when its worker
// gets to it. Its last part relayed, the coordinator takes the chunk that
// follows it; the worker, held back by an earlier transaction (a row lock
// on the target), then wrote the parts with the chunk's coverage: rows
// the chunk's snapshot already holds (a duplicate when the chunk is
// written, or, for a table copied in one pass, rows applied twice).
func TestCopyFiltersPartsInStreamOrder(t *testing.T) {
	p := newPair(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	setup := []string{"CREATE DATABASE app",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(200) NOT NULL)",
		"CREATE TABLE app.u (id INT PRIMARY KEY, v INT NOT NULL)",
		"INSERT INTO app.u VALUES (1, 0)"}
	p.src.ExecT(t, setup...)
	p.dst.ExecT(t, setup...)
	var startText string
	if err := p.src.OpenT(t, "").QueryRow("SELECT @@gtid_binlog_pos").Scan(&startText); err != nil {
		t.Fatal(err)
	}
	start, err := gtid.ParseSet(startText)
	if err != nil {
		t.Fatal(err)
	}
	// P, then T (two statements of about 13 KiB: one part past 16 KiB, then
	// the last one, its COMMIT), then U.
	var big []string
	for s := 0; s < 2; s++ {
		var rows []string
		for i := 0; i < 40; i++ {
			rows = append(rows, fmt.Sprintf("(%d, '%s')", s*40+i, strings.Repeat("x", 190)))
		}
		big = append(big, "INSERT INTO app.t VALUES "+strings.Join(rows, ", "))
	}
	p.src.ExecT(t, "UPDATE app.u SET v = 1 WHERE id = 1")
	db := p.src.OpenT(t, "")
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range big {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	p.src.ExecT(t, "INSERT INTO app.u VALUES (2, 2)")

	d, meta, builder, start := p.binlaneTarget(t, ctx, false, false, start, "app")
	defer meta.Close()
	cp := &partsCopy{}
	a := New(Config{Stream: "test", Owner: testOwner, Target: d, Workers: 2,
		Logger: testutil.Logger(t), Flavor: sqlerr.MariaDB, Copy: cp}, builder, meta)

	// The stream as a copy's merger would send it: the chunk of app.t right
	// after T (its snapshot holds T), Seq renumbered around it.
	asm := txn.NewAssembler(&skipSource{inner: newFileSource(t, p.src), skip: start}, txn.Config{MaxTxnBytes: 16 << 10})
	raw, pipe := txn.NewPipe(0), txn.NewPipe(0)
	asmErr := make(chan error, 1)
	go func() {
		asmErr <- asm.Run(ctx, raw)
		raw.Close()
	}()
	split := make(chan struct{}, 1)
	go func() {
		defer pipe.Close()
		seq, inParts := uint64(0), false
		for part := range raw.C() {
			raw.Taken(&part)
			if part.First {
				seq++
				part.Txn.Seq = seq
				inParts = !part.Last
			}
			if err := pipe.Send(ctx, part); err != nil {
				return
			}
			if part.Last && inParts && !part.First {
				inParts = false
				split <- struct{}{}
				seq++
				chunk := txn.Part{Txn: &txn.Txn{Seq: seq}, Chunk: &txn.Chunk{Schema: "app", Table: "t", Whole: true, Pos: "test"},
					First: true, Last: true}
				if err := pipe.Send(ctx, chunk); err != nil {
					return
				}
			}
		}
	}()

	// P waits for a row lock on the target until T's parts and the chunk
	// are all in: T starts at the head, after P.
	hold, err := p.dst.OpenT(t, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(ctx, "START TRANSACTION"); err != nil {
		t.Fatal(err)
	}
	if _, err := hold.ExecContext(ctx, "SELECT * FROM app.u WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-split:
		case <-ctx.Done():
		}
		time.Sleep(500 * time.Millisecond)
		_, _ = hold.ExecContext(ctx, "ROLLBACK")
	}()
	if err := a.Run(ctx, pipe, Start{GTID: start, FirstSeq: 1}); err != nil {
		t.Fatal(err)
	}
	if err := <-asmErr; err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	var n int
	if err := p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM app.t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	var v int
	if err := p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM app.u").Scan(&v); err != nil {
		t.Fatal(err)
	}
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if n != 0 || len(cp.late) > 0 {
		t.Fatalf("app.t has %d rows on the target, want 0 (T precedes the chunk, which carries them); filters after the chunk: %v", n, cp.late)
	}
	if v != 2 {
		t.Fatalf("app.u has %d rows, want 2", v)
	}
}
