package replicate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/workload"
)

// TestTwoSourcesOneTarget: two streams (README, "Several sources into one
// target") copy and replicate two sources into one target at the same
// time, each its own database, while both sources take writes; each
// database ends equal to its source, row by row. A third stream whose
// selection holds a table of the first one's is refused at start, naming
// both streams and the table, and writes nothing; so is one selecting
// everything (the other streams' tables on the target included).
func TestTwoSourcesOneTarget(t *testing.T) {
	e := newEnv(t)
	src2 := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, ServerID: 3, Name: "source2"})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	e.seedCopy(t, ctx, 5000)
	src2.ExecT(t, "CREATE DATABASE b", "CREATE TABLE b.t (id INT PRIMARY KEY, v INT NOT NULL, note VARCHAR(40))",
		"INSERT INTO b.t SELECT seq, seq, CONCAT('n', seq) FROM b.seq_1_to_5000")
	src2URL, err := src2.GrantBinlane(ctx, false, "b")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.dst.GrantBinlane(ctx, false, "b"); err != nil {
		t.Fatal(err)
	}
	src2DSN, err := dsn.Parse(src2URL)
	if err != nil {
		t.Fatal(err)
	}

	one := e.copyConfig(t)
	one.Stream, one.Rules = "one", mustRules(t, workload.Schema)
	two := e.copyConfig(t)
	two.Stream, two.Rules, two.Source = "two", mustRules(t, "b"), src2DSN
	stopOne := runInBackground(ctx, one)
	stopTwo := runInBackground(ctx, two)
	loadDone := make(chan error, 1)
	go func() { loadDone <- loadB(ctx, src2, 600) }()
	e.workload(t, ctx, workload.Config{Seed: 41, Sessions: 4, Transactions: 600, DDL: true, Ledger: true})
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	// A copying stream's position can pass the source's before its last
	// tables are copied: both copies end first.
	e.waitCopied(t, "one")
	e.waitCopied(t, "two")
	e.waitStream(t, "one", gtidPos(t, e.src))
	e.waitStream(t, "two", gtidPos(t, src2))
	if err := stopOne(); err != nil {
		t.Fatalf("stream one: %v", err)
	}
	if err := stopTwo(); err != nil {
		t.Fatalf("stream two: %v", err)
	}
	verifyServers(t, e.src, e.dst, workload.Schema)
	verifyServers(t, src2, e.dst, "b")

	// A stream that would write wl.accounts, which stream one writes
	// (stopped now: it still owns its tables), and one that selects
	// everything, from the second source.
	for _, c := range []struct {
		name, other, table string
		cfg                func(*Config)
	}{
		{"three", "one", "wl.accounts", func(c *Config) {
			c.Rules = filter.Rules{Tables: []string{"wl.accounts"}}
			c.StartGTID = gtidPos(t, e.src)
		}},
		// The target's wl tables come first (streams are checked by name).
		{"all", "one", "wl.accounts", func(c *Config) {
			c.Source, c.Rules = src2DSN, filter.Rules{}
			c.StartGTID = gtidPos(t, src2)
		}},
	} {
		cfg := e.config(t, 2)
		cfg.Stream, cfg.FirstTries = c.name, 1
		c.cfg(&cfg)
		other := c.other
		// Bounded: a stream that is not refused runs until stopped.
		runCtx, cancelRun := context.WithTimeout(ctx, time.Minute)
		err := Run(runCtx, cfg)
		cancelRun()
		var overlap *OverlapError
		if !errors.As(err, &overlap) || !strings.Contains(err.Error(), fmt.Sprintf("stream %q would write table %s", c.name, c.table)) ||
			!strings.Contains(err.Error(), fmt.Sprintf("which stream %q writes", other)) {
			t.Fatalf("stream %s selecting %s of stream %s: %v", c.name, c.table, other, err)
		}
		t.Logf("refused: %v", err)
		// A refused start leaves no stream behind (status --check would
		// report it in error from then on).
		if _, ok, err := position.Load(ctx, e.dst.OpenT(t, ""), c.name); err != nil || ok {
			t.Errorf("the refused stream %s left its row (%v)", c.name, err)
		}
	}
	verifyServers(t, e.src, e.dst, workload.Schema)
	verifyServers(t, src2, e.dst, "b")
}

// waitCopied waits until every table of the stream's copy is done.
func (e *env) waitCopied(t *testing.T, stream string) {
	t.Helper()
	dst := e.dst.OpenT(t, "")
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		tables, err := position.LoadCopy(context.Background(), dst, stream)
		if err != nil {
			t.Fatal(err)
		}
		done := len(tables) > 0
		for _, tb := range tables {
			done = done && tb.State == position.CopyDone
		}
		if done {
			return
		}
	}
	st, _, err := position.Load(context.Background(), dst, stream)
	t.Fatalf("the copy of stream %s did not end: stream state %q, message %q (%v)", stream, st.State, st.Message, err)
}

// loadB writes n transactions to b.t on s (inserts, updates, deletes; two
// sessions) and returns once every statement ended.
func loadB(ctx context.Context, s *sandbox.Server, n int) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	errs := make(chan error, 2)
	for session := range 2 {
		go func() {
			rnd := rand.New(rand.NewPCG(uint64(session), 7))
			for i := range n / 2 {
				id := 1 + rnd.IntN(6000)
				var q string
				switch rnd.IntN(3) {
				case 0:
					q = fmt.Sprintf("INSERT INTO b.t VALUES (%d, %d, 'ins') ON DUPLICATE KEY UPDATE v = v + 1", id, i)
				case 1:
					q = fmt.Sprintf("UPDATE b.t SET v = v * 2 + %d, note = CONCAT('u', %d) WHERE id BETWEEN %d AND %d", i, session, id, id+3)
				default:
					q = fmt.Sprintf("DELETE FROM b.t WHERE id = %d", id)
				}
				if _, err := db.ExecContext(ctx, q); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	return errors.Join(<-errs, <-errs)
}
