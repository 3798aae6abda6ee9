// Package workload generates write traffic on a source server, in modes
// (Mode), each a table of weighted operations on a database of its own:
//
//   - Mixed (the default, database wl): randomized, conflict-heavy test
//     traffic: hot rows, unique-key value swaps, primary-key changes,
//     foreign-key cascades two levels deep, case- and accent-variant values
//     in case-insensitive collations, NULLs in unique keys, a table without
//     a key, every column type, large transactions and DDL in the middle.
//   - Shop, OrderEntry, Bulk, Docs: the schemas people run: a web shop with
//     cascading foreign keys, TPC-C-like order entry, bulk updates and
//     deletes of 100,000 rows among small transactions, wide rows and JSON
//     documents. The demo and the benchmark (bench/) use them.
//   - Slots: where an applier that regroups rows can go wrong: unique
//     values moving between rows, hot counters, RESTRICT foreign keys.
//
// Each session draws its transactions from its own generator seeded with
// (Config.Seed, session number): what a session writes is repeatable.
// Tests, the demo, the crash suite and the benchmark replicate the traffic
// and then compare both sides.
//
// The package only writes to the server it is given; it must never be
// pointed at a target.
package workload

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/binlane/binlane/internal/sqlerr"
)

// Schema is the database the workload writes to.
const Schema = "wl"

// Config shapes a run.
type Config struct {
	// Mode is the kind of traffic (Mixed by default); DDL, BigTxnRows,
	// Ledger and Savepoints shape Mixed only.
	Mode Mode
	// Seed makes a run repeatable: each session draws its transactions
	// from its own generator seeded with (Seed, session number), so a
	// session's sequence of statements depends on nothing else.
	Seed int64
	// Sessions write concurrently (more sessions: more group commits and
	// more real conflicts).
	Sessions int
	// Transactions in total across sessions (0: until ctx ends).
	Transactions int
	// Duration bounds the run (0: until Transactions are done).
	Duration time.Duration
	// DDL mixes schema changes into the stream.
	DDL bool
	// BigTxnRows, when > 0, adds one transaction inserting that many rows.
	BigTxnRows int
	// Ledger adds to every fifth transaction a row in wl.ledger, a table
	// without a key whose rows count transactions: one applied twice shows
	// as a duplicate row (verify compares such tables as multisets).
	Ledger bool
	// Savepoints adds transactions that roll back to a savepoint over
	// changes to wl.nontx, which the caller creates non-transactional on the
	// source (see NonTransactionalDDL).
	Savepoints bool
	// Rate caps transactions per second across sessions (0: as fast as
	// the source takes them).
	Rate int
	// ReadOnlyOK: the server may refuse writes because it is read-only
	// (a cut-over froze it), as an application would see it: such a
	// transaction is counted as failed and the session goes on.
	ReadOnlyOK bool
	// SeedOrders, Customers and Items size Shop and Bulk: the orders
	// Prepare seeds (default 10,000, each with 1-5 lines), the customers
	// (100,000) and the items (20,000) that transactions pick uniformly.
	SeedOrders, Customers, Items int
	// BulkRows and BulkEvery shape Bulk: one transaction in BulkEvery
	// (default 3,000) changes BulkRows rows (default 100,000).
	BulkRows  int
	BulkEvery int
	Logger    *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Sessions <= 0 {
		c.Sessions = 4
	}
	if c.SeedOrders <= 0 {
		c.SeedOrders = 10000
	}
	if c.Customers <= 0 {
		c.Customers = 100000
	}
	if c.Items <= 0 {
		c.Items = 20000
	}
	if c.BulkRows <= 0 {
		c.BulkRows = 100000
	}
	if c.BulkEvery <= 0 {
		c.BulkEvery = 3000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Stats count what a run did.
type Stats struct {
	Committed atomic.Int64
	Failed    atomic.Int64 // rolled back by the source (deadlocks, duplicates): not in the binlog
}

// schemaDDL creates the workload's tables.
var schemaDDL = []string{
	"CREATE DATABASE IF NOT EXISTS " + Schema,
	`CREATE TABLE IF NOT EXISTS wl.accounts (
		id INT PRIMARY KEY,
		email VARCHAR(64) COLLATE utf8mb4_general_ci NULL UNIQUE,
		handle VARCHAR(32) COLLATE utf8mb4_unicode_ci NOT NULL,
		balance DECIMAL(14,2) NOT NULL DEFAULT 0,
		status ENUM('new','active','closed') NOT NULL DEFAULT 'new',
		flags SET('a','b','c','d') NOT NULL DEFAULT '',
		updated DATETIME(6) NULL,
		note TEXT NULL,
		UNIQUE KEY handle_u (handle)
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.orders (
		id BIGINT PRIMARY KEY,
		account_id INT NOT NULL,
		amount DECIMAL(12,3) NOT NULL,
		created TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3),
		payload BLOB NULL,
		CONSTRAINT orders_account FOREIGN KEY (account_id) REFERENCES wl.accounts(id) ON DELETE CASCADE ON UPDATE CASCADE
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.items (
		order_id BIGINT NOT NULL,
		line SMALLINT UNSIGNED NOT NULL,
		sku CHAR(8) NOT NULL,
		qty MEDIUMINT NOT NULL,
		PRIMARY KEY (order_id, line),
		CONSTRAINT items_order FOREIGN KEY (order_id) REFERENCES wl.orders(id) ON DELETE CASCADE
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.kv (
		k VARCHAR(40) COLLATE utf8mb4_general_ci PRIMARY KEY,
		v JSON NULL,
		f FLOAT NULL, d DOUBLE NULL, t TIME(3) NULL, y YEAR NULL, b BIT(12) NULL,
		bin BINARY(8) NULL, vb VARBINARY(300) NULL, tiny TINYINT NULL, small SMALLINT UNSIGNED NULL,
		big BIGINT UNSIGNED NULL, day DATE NULL, ts TIMESTAMP NULL, ch CHAR(10) CHARACTER SET latin1 NULL,
		u VARCHAR(20) NULL UNIQUE
	) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.hot (id INT PRIMARY KEY, counter BIGINT NOT NULL, touched DATETIME(6) NULL) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.log (a INT NULL, b VARCHAR(20) NULL, c DOUBLE NULL) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.ledger (session INT NOT NULL, n INT NOT NULL, at DATETIME(6) NOT NULL) ENGINE=InnoDB`,
	`CREATE TABLE IF NOT EXISTS wl.audit (n BIGINT AUTO_INCREMENT PRIMARY KEY, order_id BIGINT NOT NULL, what CHAR(1) NOT NULL) ENGINE=InnoDB`,
}

// TriggerDDL creates the source's triggers: their effects reach the
// binlog as rows (wl.audit), and a replica must not run them again.
var TriggerDDL = []string{
	"CREATE TRIGGER IF NOT EXISTS wl.orders_ai AFTER INSERT ON wl.orders FOR EACH ROW INSERT INTO wl.audit (order_id, what) VALUES (NEW.id, 'i')",
	"CREATE TRIGGER IF NOT EXISTS wl.orders_ad AFTER DELETE ON wl.orders FOR EACH ROW INSERT INTO wl.audit (order_id, what) VALUES (OLD.id, 'd')",
}

// NonTransactionalDDL creates wl.nontx with engine (MyISAM on the source,
// InnoDB on a target: binlane refuses non-transactional target tables).
func NonTransactionalDDL(engine string) string {
	return "CREATE TABLE IF NOT EXISTS wl.nontx (id INT AUTO_INCREMENT PRIMARY KEY, session INT, n INT) ENGINE=" + engine
}

// Setup creates the schema and seed rows.
func Setup(ctx context.Context, db *sql.DB) error {
	for _, q := range schemaDDL {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("workload setup: %w", err)
		}
	}
	seed := []string{
		"INSERT IGNORE INTO wl.accounts (id, email, handle, balance) SELECT seq, CONCAT('user', seq, '@example.com'), CONCAT('h', seq), seq FROM wl.seq_1_to_200",
		"INSERT IGNORE INTO wl.hot VALUES (1,0,NULL),(2,0,NULL),(3,0,NULL)",
		"INSERT IGNORE INTO wl.orders (id, account_id, amount) SELECT seq, 1 + seq % 200, seq / 7 FROM wl.seq_1_to_300",
		"INSERT IGNORE INTO wl.items SELECT 1 + seq % 300, seq, CONCAT('SKU', seq % 97), seq % 13 FROM wl.seq_1_to_600",
	}
	for _, q := range seed {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("workload seed: %w", err)
		}
	}
	return nil
}

// Run writes transactions until the configured count or duration is
// reached or ctx ends. Source-side failures (deadlocks, duplicates from
// racing sessions) are rolled back and counted: they never reach the
// binlog.
func Run(ctx context.Context, db *sql.DB, cfg Config) (*Stats, error) {
	if _, ok := modes[cfg.Mode]; !ok {
		return nil, fmt.Errorf("workload: unknown mode %q", cfg.Mode)
	}
	cfg = cfg.withDefaults()
	// Duration stops the sessions from starting transactions; it does not
	// cancel the ones running: a statement whose client gave up is still
	// finished and binlogged by the server, after Run returned and the
	// caller read the source's position.
	until := ctx
	if cfg.Duration > 0 {
		var cancel context.CancelFunc
		until, cancel = context.WithTimeout(ctx, cfg.Duration)
		defer cancel()
	}
	st := &Stats{}
	var budget, slots atomic.Int64
	budget.Store(int64(cfg.Transactions))
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Sessions)
	var limit *rate.Limiter
	if cfg.Rate > 0 {
		limit = rate.NewLimiter(rate.Limit(cfg.Rate), max(1, cfg.Rate/10))
	}
	for i := 0; i < cfg.Sessions; i++ {
		s := &session{db: db, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i))), id: i, cfg: cfg, st: st, limit: limit}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.loop(until, ctx, &budget, &slots)
		}()
	}
	if cfg.BigTxnRows > 0 && cfg.Mode == Mixed {
		if err := bigTransaction(ctx, db, cfg.BigTxnRows); err != nil {
			return st, err
		}
		st.Committed.Add(1)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return st, err
		}
	}
	return st, nil
}

type session struct {
	limit *rate.Limiter // nil: no cap
	db    *sql.DB
	rng   *rand.Rand
	id    int
	cfg   Config
	st    *Stats
	n     int
	shop  shopState // Shop and Bulk
	docs  int       // Docs: documents the session inserted
	slots slotsState
}

// loop runs transactions on ctx until until ends.
func (s *session) loop(until, ctx context.Context, budget, slots *atomic.Int64) error {
	var conn *sql.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for until.Err() == nil {
		if conn == nil {
			var err error
			if conn, err = s.connect(ctx); err != nil {
				return err
			}
		}
		if s.cfg.Transactions > 0 && budget.Add(-1) < 0 {
			return nil
		}
		if s.limit != nil && s.limit.Wait(until) != nil {
			return nil
		}
		s.n++
		stmts := s.transaction(slots.Add(1) - 1)
		if err := runTxn(ctx, conn, stmts); err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case lostConnection(err):
				// The source restarted (a test does that on purpose): the
				// transaction did not commit; carry on with a new session.
				conn.Close()
				conn = nil
			case s.cfg.ReadOnlyOK && sqlerr.Is(err, sqlerr.ReadOnly):
			case !expected(err):
				return fmt.Errorf("session %d: %v: %w", s.id, stmts, err)
			}
			s.st.Failed.Add(1)
			continue
		}
		s.st.Committed.Add(1)
	}
	return nil
}

// connect opens a session, waiting out a source restart.
func (s *session) connect(ctx context.Context) (*sql.Conn, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		conn, err := s.db.Conn(ctx)
		if err == nil {
			if _, err = conn.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout=5"); err == nil {
				return conn, nil
			}
			conn.Close()
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lostConnection(err error) bool { return sqlerr.ConnectionLost(err, sqlerr.MariaDB) }

func runTxn(ctx context.Context, conn *sql.Conn, stmts []string) error {
	if len(stmts) == 1 && isDDL(stmts[0]) {
		_, err := conn.ExecContext(ctx, stmts[0])
		return err
	}
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK")
			return err
		}
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	return err
}

func isDDL(q string) bool {
	return strings.HasPrefix(q, "ALTER") || strings.HasPrefix(q, "CREATE") || strings.HasPrefix(q, "DROP")
}

// expected lists the errors racing sessions produce on the source.
func expected(err error) bool {
	return sqlerr.Is(err, sqlerr.DupEntry, sqlerr.Deadlock, sqlerr.LockWaitTimeout, sqlerr.RowIsReferenced2,
		sqlerr.NoReferencedRow2, sqlerr.BadNull, sqlerr.DupColumn, sqlerr.CantDropField, sqlerr.TableExists,
		sqlerr.UnknownTable, sqlerr.UnknownColumn, sqlerr.NoSuchTable, sqlerr.KeyColumnDoesNotExist,
		sqlerr.TableDefChanged, sqlerr.InsufficientHistory)
}

// bigTransaction inserts rows rows into wl.log in one transaction.
func bigTransaction(ctx context.Context, db *sql.DB, rows int) error {
	q := fmt.Sprintf("INSERT INTO wl.log (a, b, c) SELECT seq, CONCAT('big', seq), seq / 3 FROM wl.seq_1_to_%d", rows)
	_, err := db.ExecContext(ctx, q)
	return err
}

// SeedBulk adds orders (ids from 1,000,001, beyond the ids Run picks) with
// two items each, 3 x orders rows for a copy to work on, owned by 200
// accounts of their own (ids from 100,001: Run's account deletes do not
// cascade into them, so a copy under load still has them to copy).
func SeedBulk(ctx context.Context, db *sql.DB, orders int) error {
	const batch = 20000
	stmts := []string{"INSERT IGNORE INTO wl.accounts (id, email, handle, balance) SELECT 100000 + seq, " +
		"CONCAT('bulk', seq, '@example.com'), CONCAT('bulk', seq), seq FROM wl.seq_1_to_200"}
	for from := 0; from < orders; from += batch {
		n := min(batch, orders-from)
		lo := 1000001 + from
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO wl.orders (id, account_id, amount, payload) SELECT %d + seq, 100001 + seq %% 200, seq / 7, "+
				"REPEAT(CHAR(65 + seq %% 26), 40) FROM wl.seq_0_to_%d", lo, n-1),
			fmt.Sprintf("INSERT INTO wl.items SELECT %d + seq DIV 2, 1 + seq %% 2, CONCAT('SKU', seq %% 97), 1 + seq %% 13 "+
				"FROM wl.seq_0_to_%d", lo, 2*n-1))
	}
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("workload bulk seed: %w", err)
		}
	}
	return nil
}
