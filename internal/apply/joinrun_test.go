package apply

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
)

// joinRunTable is a bulk.history-shaped table with an ON UPDATE column
// (its value must be the source's, not the target's clock).
var joinRunTable = []string{"CREATE DATABASE app", `CREATE TABLE app.h (id BIGINT PRIMARY KEY, customer_id INT NOT NULL,
		amount DECIMAL(12,2) NOT NULL, at DATETIME(6) NOT NULL, note VARCHAR(40) NOT NULL,
		stamp TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6), KEY customer (customer_id))`,
	"INSERT INTO app.h (id, customer_id, amount, at, note, stamp) SELECT seq, 1 + seq % 100, seq % 1000, " +
		"TIMESTAMP'2026-01-01 00:00:00' - INTERVAL seq MINUTE, 'payment', TIMESTAMP'2026-01-01 00:00:00' FROM app.seq_1_to_5000"}

// multiUpdates is the target's count of multi-table UPDATEs (join runs).
func multiUpdates(t *testing.T, s *sandbox.Server) int {
	var name string
	var n int
	if err := s.OpenT(t, "").QueryRow("SHOW GLOBAL STATUS LIKE 'Com_update_multi'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJoinRunApplies: a bulk UPDATE of thousands of rows (an upsert run
// longer than rowsql.DefaultJoinRows) is written as a join run and leaves
// the target's rows equal to the source's, in a merged batch and in a
// transaction sent in parts; so do rows updated twice in the run and
// updates of other columns after it.
func TestJoinRunApplies(t *testing.T) {
	for _, maxTxn := range []int{0, 64 << 10} {
		p, start := driftPair(t, joinRunTable...)
		p.src.ExecT(t, "BEGIN",
			"UPDATE app.h SET amount = amount + 1, note = 'rerated' WHERE id BETWEEN 1 AND 3000",
			"UPDATE app.h SET note = 'again' WHERE id BETWEEN 2900 AND 3100",
			"UPDATE app.h SET customer_id = customer_id + 1 WHERE id BETWEEN 3050 AND 4500",
			"COMMIT",
			"UPDATE app.h SET amount = 0 WHERE id = 17")
		before := multiUpdates(t, p.dst)
		if _, err := p.replay(t, runOpts{workers: 2, maxBatch: 16, maxTxn: maxTxn, mode: scheduler.ModeWriteset, start: start}); err != nil {
			t.Fatalf("max txn %d: %v", maxTxn, err)
		}
		if multiUpdates(t, p.dst) == before {
			t.Errorf("max txn %d: no join run was written", maxTxn)
		}
		p.compare(t, "app")
	}
}

// TestJoinRunDetectsMissingRow: a row of a join run missing on the target
// stops the stream with the row named, and nothing of the transaction is
// committed (the UPDATE's found rows fall short of its temporary table's).
func TestJoinRunDetectsMissingRow(t *testing.T) {
	p, start := driftPair(t, joinRunTable...)
	p.src.ExecT(t, "UPDATE app.h SET amount = amount + 1, note = 'rerated' WHERE id BETWEEN 1 AND 3000")
	p.dst.ExecT(t, "DELETE FROM app.h WHERE id = 2500") // drift
	before := multiUpdates(t, p.dst)
	_, err := p.replay(t, runOpts{workers: 2, maxBatch: 16, mode: scheduler.ModeWriteset, start: start})
	if err == nil {
		t.Fatal("a row missing on the target went unnoticed")
	}
	if multiUpdates(t, p.dst) == before {
		t.Error("no join run was written")
	}
	for _, want := range []string{"`app`.`h`", "id=2500", "affected 0 rows on the target, expected 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	var changed int
	p.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM app.h WHERE note <> 'payment' OR id = 2500").Scan(&changed)
	if changed != 0 {
		t.Errorf("%d rows of the failed transaction committed (or the missing row was recreated)", changed)
	}
}
