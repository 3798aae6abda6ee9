package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/testutil"
)

// runsSchema adds to cascadeSchema what the run planner must keep in order
// besides foreign keys: a unique key whose values rows swap (inside one
// transaction and across merged ones), a table without a key, and a
// stock-like table whose key-preserving updates interleave with inserts.
var runsSchema = []string{
	"CREATE TABLE fk.s (id INT PRIMARY KEY, u INT UNIQUE, v INT NOT NULL DEFAULT 0)",
	"CREATE TABLE fk.bag (a INT, b INT)",
	"CREATE TABLE fk.st (id INT PRIMARY KEY, qty INT NOT NULL, a_id INT, FOREIGN KEY (a_id) REFERENCES fk.a (id) ON DELETE SET NULL)",
	"CREATE TABLE fk.line (id INT AUTO_INCREMENT PRIMARY KEY, st_id INT NOT NULL, n INT NOT NULL, FOREIGN KEY (st_id) REFERENCES fk.st (id))",
}

// runsTxn is one random transaction of several statements over small id
// ranges, interleaving tables as applications do: cascadeTxn's statements,
// unique-value swaps, keyless rows, stock updates and their order lines.
func runsTxn(r *rand.Rand) []string {
	var out []string
	for range 1 + r.IntN(6) {
		s1, s2, st := r.IntN(16), r.IntN(16), r.IntN(20)
		switch r.IntN(12) {
		case 0, 1:
			out = append(out, cascadeTxn(r)...)
		case 2: // a swap of unique values between two rows
			out = append(out, fmt.Sprintf("SET @x=(SELECT u FROM fk.s WHERE id=%d), @y=(SELECT u FROM fk.s WHERE id=%d)", s1, s2),
				fmt.Sprintf("UPDATE fk.s SET u=NULL WHERE id=%d", s1),
				fmt.Sprintf("UPDATE fk.s SET u=@x WHERE id=%d", s2),
				fmt.Sprintf("UPDATE fk.s SET u=@y WHERE id=%d", s1))
		case 3: // a value freed by a row and taken by another
			out = append(out, fmt.Sprintf("UPDATE fk.s SET u=u+100 WHERE id=%d", s1),
				fmt.Sprintf("INSERT INTO fk.s VALUES (%d, %d, 0)", 16+r.IntN(16), r.IntN(16)))
		case 4:
			out = append(out, fmt.Sprintf("INSERT INTO fk.s VALUES (%d, %d, 0) ON DUPLICATE KEY UPDATE v=v+1", s1, r.IntN(16)),
				fmt.Sprintf("DELETE FROM fk.s WHERE id=%d", 16+r.IntN(16)))
		case 5:
			out = append(out, fmt.Sprintf("UPDATE fk.s SET v=v+1 WHERE id IN (%d, %d)", s1, s2))
		case 6:
			out = append(out, fmt.Sprintf("INSERT INTO fk.bag VALUES (%d, %d)", r.IntN(5), r.IntN(3)),
				fmt.Sprintf("UPDATE fk.bag SET b=b+1 WHERE a=%d LIMIT 1", r.IntN(5)))
		case 7:
			out = append(out, fmt.Sprintf("DELETE FROM fk.bag WHERE a=%d LIMIT 1", r.IntN(5)))
		case 8, 9: // order entry: a stock update, its line, another stock update
			out = append(out, fmt.Sprintf("INSERT INTO fk.st VALUES (%d, 100, %d) ON DUPLICATE KEY UPDATE qty=qty-1", st, r.IntN(12)),
				fmt.Sprintf("INSERT INTO fk.line (st_id, n) VALUES (%d, %d)", st, r.IntN(5)),
				fmt.Sprintf("UPDATE fk.st SET qty=qty-1 WHERE id=%d", r.IntN(20)))
		case 10:
			out = append(out, fmt.Sprintf("DELETE FROM fk.line WHERE st_id=%d ORDER BY id LIMIT 2", st),
				fmt.Sprintf("UPDATE fk.st SET qty=qty+1 WHERE id=%d", st))
		default:
			out = append(out, fmt.Sprintf("DELETE FROM fk.st WHERE id=%d", st))
		}
	}
	return out
}

// runsLoad runs the transactions of runsTxn from sessions sessions and
// returns how many committed.
func runsLoad(t *testing.T, src *sandbox.Server, seed uint64, sessions, txns int) int {
	db := src.OpenT(t, "")
	db.SetMaxOpenConns(sessions + 2)
	var committed atomic.Int64
	var wg sync.WaitGroup
	var alone checksOffAlone
	for s := range sessions {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(s)))
			for range txns {
				checks := []string{"1", "1", "1", "1", "1", "1", "1", "0"}[r.IntN(8)]
				ok, err := alone.run(db, checks, runsTxn(r))
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				committed.Add(1)
			}
		})
	}
	wg.Wait()
	return int(committed.Load())
}

// checksOffAlone runs a workload's transactions with foreign_key_checks=0
// alone among its sessions: beside an open transaction whose parent delete
// cascades, an insert with the checks off commits a child row the cascade
// has passed, and the binlog then orders it before the delete, which a
// replay in binlog order cascades into (TestChecksOffInsertBesideCascade).
// Such a source history is not serializable and no applier reproduces it.
type checksOffAlone struct{ mu sync.RWMutex }

// run applies one transaction on db in its turn, with foreign_key_checks
// set to checks: ok when it committed. A statement the server refuses (a
// duplicate, a missing parent, RESTRICT) rolls it back; err is a failure
// that is not the server's refusal.
func (a *checksOffAlone) run(db *sql.DB, checks string, stmts []string) (ok bool, err error) {
	defer a.begin(checks == "0")()
	tx, err := db.Begin()
	if err != nil {
		return false, err
	}
	for _, q := range append([]string{"SET SESSION foreign_key_checks = " + checks}, stmts...) {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			if sqlerr.Code(err) == 0 {
				return false, err
			}
			return false, nil
		}
	}
	if tx.Commit() != nil {
		tx.Rollback()
		return false, nil
	}
	return true, nil
}

// begin waits for the transaction's turn; the returned func ends it.
func (a *checksOffAlone) begin(off bool) (end func()) {
	if off {
		a.mu.Lock()
		return a.mu.Unlock
	}
	a.mu.RLock()
	return a.mu.RUnlock
}

// diagnosed counts the batches applied one statement at a time after their
// merged attempt failed: with one worker nothing else is retried, so a run
// that moved a change where it fails would show here (and only here: the
// retry in source order commits it).
type diagnosed struct {
	slog.Handler
	n *atomic.Int64
}

func (d diagnosed) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "batch applied one statement at a time") {
		d.n.Add(1)
	}
	return d.Handler.Handle(ctx, r)
}

func (d diagnosed) WithAttrs(as []slog.Attr) slog.Handler {
	return diagnosed{d.Handler.WithAttrs(as), d.n}
}

func (d diagnosed) WithGroup(g string) slog.Handler { return diagnosed{d.Handler.WithGroup(g), d.n} }

// TestRunsRandom: random interleaved transactions (cascades of every
// action, self-references, unique-value swaps within and across
// transactions, keyless rows, stock updates with their lines) replicated
// with 1 and 8 workers and batches of 1 to 256 source transactions, the
// run planner reordering inside each; every target ends equal, and with
// one worker no batch needed its source-order retry.
func TestRunsRandom(t *testing.T) {
	src, from, to := runsSource(t, 29)
	for _, c := range []struct{ workers, batch int }{{1, 1}, {1, 128}, {1, 256}, {1, 37}, {8, 16}, {8, 128}} {
		t.Run(fmt.Sprintf("workers=%d,batch=%d", c.workers, c.batch), func(t *testing.T) {
			runsReplicate(t, src, from, to, c.workers, c.batch)
		})
	}
}

// TestSoakRuns: TestRunsRandom's workload over the soak's seeds, each with
// its own worker count (1 or 8) and batch size (1-256: one thread's
// default is 256).
func TestSoakRuns(t *testing.T) {
	for _, seed := range soakSeeds(t, 4) {
		workers, batch := pick(seed, 1, 8), 1+int(seed*37%256)
		t.Run(fmt.Sprintf("%d/workers=%d,batch=%d", seed, workers, batch), func(t *testing.T) {
			src, from, to := runsSource(t, uint64(seed))
			runsReplicate(t, src, from, to, workers, batch)
		})
	}
}

// runsSource starts a source and runs the workload of seed on it; from and
// to bound its transactions.
func runsSource(t *testing.T, seed uint64) (src *sandbox.Server, from, to string) {
	src = sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	src.ExecT(t, "CREATE DATABASE marker")
	from = gtidPos(t, src)
	src.ExecT(t, cascadeSchema...)
	src.ExecT(t, runsSchema...)
	committed := runsLoad(t, src, seed, 6, 250)
	t.Logf("seed %d: %d transactions committed on the source", seed, committed)
	return src, from, gtidPos(t, src)
}

// runsReplicate replicates from..to into a new target and verifies it.
func runsReplicate(t *testing.T, src *sandbox.Server, from, to string, workers, batch int) {
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	var n atomic.Int64
	err := corpusRun(t, src, dst, "runs", from, to, workers, []string{"fk"}, func(cfg *Config) {
		cfg.Apply.MaxBatch = batch
		cfg.Logger = slog.New(diagnosed{testutil.Logger(t).Handler(), &n})
	})
	if err != nil {
		t.Fatal(err)
	}
	verifyServers(t, src, dst, "fk")
	if workers == 1 && n.Load() > 0 {
		t.Errorf("%d batches failed merged and were applied one statement at a time", n.Load())
	}
}
