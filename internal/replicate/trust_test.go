package replicate

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
)

// runStream runs a stream to end (the source's position now) and returns
// its error and what it logged.
func (e *env) runStream(t *testing.T, db, start, end string, mutate ...func(*Config)) (error, string) {
	t.Helper()
	cfg := e.config(t, 4)
	cfg.Stream, cfg.Rules, cfg.StartGTID, cfg.StopAtGTID = db, mustRules(t, db), start, end
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: &logs, t: t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, m := range mutate {
		m(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := Run(ctx, cfg)
	return err, logs.String()
}

// lockedWriter collects a run's log (and echoes it to the test log).
type lockedWriter struct {
	w *bytes.Buffer
	t *testing.T
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	return l.w.Write(b)
}

func (e *env) state(t *testing.T, stream string) position.State {
	t.Helper()
	st, ok, err := position.Load(context.Background(), e.dst.OpenT(t, ""), stream)
	if err != nil || !ok {
		t.Fatalf("stream %s: %v %v", stream, ok, err)
	}
	return st
}

// TestFailedDDLIsNeverSkipped: a DDL statement the target refuses stops the
// stream with the GTID, the statement and the server's error, records the
// error in the stream's row, leaves the position before it — and a restart
// runs it again instead of taking the failure for "already applied" (which
// once turned a supervisor's restart loop into silent schema divergence).
// Once the target is repaired, the statement applies and the tables end
// equal. An account statement (CREATE OR REPLACE USER, once taken for DDL,
// which crashed the applier) is skipped, its password never logged.
func TestFailedDDLIsNeverSkipped(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "ddl")
	e.src.ExecT(t, "CREATE DATABASE ddl", "CREATE TABLE ddl.t (id INT PRIMARY KEY)", "INSERT INTO ddl.t VALUES (1)")
	e.dst.ExecT(t, "CREATE DATABASE ddl", "CREATE TABLE ddl.t (id INT PRIMARY KEY)", "INSERT INTO ddl.t VALUES (1)")
	start := gtidPos(t, e.src)
	// A table the target lacks (created on the source without binlogging).
	e.src.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE TABLE ddl.missing (id INT PRIMARY KEY)")
	e.src.ExecT(t, "INSERT INTO ddl.t VALUES (2)",
		"CREATE OR REPLACE USER canary@'%' IDENTIFIED BY 'PlainTextPw111'")
	beforeAlter := gtidPos(t, e.src)
	e.src.ExecT(t, "ALTER TABLE ddl.missing ADD COLUMN c INT")
	alter := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO ddl.t VALUES (3)")
	end := gtidPos(t, e.src)

	for i, from := range []string{start, ""} { // then a restart from the saved position
		err, logs := e.runStream(t, "ddl", from, end)
		if err == nil {
			t.Fatalf("run %d: the stream did not stop at the failing ALTER", i)
		}
		for _, want := range []string{"transaction " + alter, "ALTER TABLE ddl.missing ADD COLUMN c INT", "doesn't exist"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("run %d: error lacks %q: %v", i, want, err)
			}
		}
		st := e.state(t, "ddl")
		if st.State != position.StateError || !strings.Contains(st.Message, "ALTER TABLE ddl.missing") {
			t.Errorf("run %d: state %q message %q", i, st.State, st.Message)
		}
		if samePos(t, st.GTID) != samePos(t, beforeAlter) {
			t.Errorf("run %d: position %s, want %s (right before the ALTER)", i, st.GTID, beforeAlter)
		}
		if st.DDL.State != position.DDLFailed || st.DDL.GTID != alter {
			t.Errorf("run %d: statement mark %+v, want failed %s", i, st.DDL, alter)
		}
		if strings.Contains(logs+err.Error()+st.Message, "PlainTextPw111") {
			t.Errorf("run %d: the account statement's password was printed", i)
		}
	}
	e.dst.ExecT(t, "CREATE TABLE ddl.missing (id INT PRIMARY KEY)") // the repair
	if err, _ := e.runStream(t, "ddl", "", end); err != nil {
		t.Fatalf("after the repair: %v", err)
	}
	var n int
	if err := e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='ddl' AND TABLE_NAME='missing' AND COLUMN_NAME='c'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the ALTER was not applied after the repair: %d %v", n, err)
	}
	if st := e.state(t, "ddl"); st.DDL.GTID != "" || st.State != position.StateStopped {
		t.Errorf("after the repair: mark %+v state %s", st.DDL, st.State)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "ddl")
}

// TestTriggers: the source's trigger effects are in its binlog as rows, so
// the target's triggers must not fire again. A replicated target table that
// has triggers stops the start with a clear error (unless allowed); trigger
// DDL read from the source is not run on the target but kept for cut-over
// in binlane.deferred; the tables end equal (an AFTER INSERT audit trigger
// once gave 2 audit rows on the source and 4 on the target).
func TestTriggers(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "trg")
	schemaSQL := []string{"CREATE DATABASE trg", "CREATE TABLE trg.t (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE trg.audit (n INT AUTO_INCREMENT PRIMARY KEY, id INT)"}
	e.src.ExecT(t, schemaSQL...)
	e.dst.ExecT(t, schemaSQL...)
	start := gtidPos(t, e.src)
	trigger := "CREATE TRIGGER trg.t_ai AFTER INSERT ON trg.t FOR EACH ROW INSERT INTO trg.audit (id) VALUES (NEW.id)"
	e.src.ExecT(t, trigger, "INSERT INTO trg.t VALUES (1, 1), (2, 2)")
	end := gtidPos(t, e.src)

	// A trigger on the target: refused, with what to do.
	e.dst.ExecT(t, "CREATE TRIGGER trg.t_bu BEFORE UPDATE ON trg.t FOR EACH ROW SET NEW.v = NEW.v")
	err, _ := e.runStream(t, "trg", start, end)
	var te *TargetError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "`trg`.`t` has triggers on the target") ||
		!strings.Contains(err.Error(), "--allow-target-triggers") {
		t.Fatalf("a target table with triggers: %v", err)
	}
	e.dst.ExecT(t, "DROP TRIGGER trg.t_bu")

	if err, _ := e.runStream(t, "trg", start, end); err != nil {
		t.Fatal(err)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "trg")
	var triggers int
	e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA='trg'").Scan(&triggers)
	if triggers != 0 {
		t.Errorf("the source's trigger DDL ran on the target")
	}
	deferred, err := position.ListDeferred(context.Background(), e.dst.OpenT(t, ""), "trg")
	if err != nil || len(deferred) != 1 || !strings.Contains(deferred[0].Statement, "TRIGGER trg.t_ai AFTER INSERT ON trg.t") ||
		deferred[0].Reason != "trigger DDL" {
		t.Fatalf("deferred statements: %+v %v", deferred, err)
	}
}

// TestTriggerAddedWhileReplicating: a trigger created on the target while
// the stream runs stops it (it would fire for every replicated row).
func TestTriggerAddedWhileReplicating(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "trg2")
	for _, s := range []string{"CREATE DATABASE trg2", "CREATE TABLE trg2.t (id INT PRIMARY KEY)"} {
		e.src.ExecT(t, s)
		e.dst.ExecT(t, s)
	}
	cfg := e.config(t, 2)
	cfg.Stream, cfg.Rules, cfg.StartGTID, cfg.WatchPeriod = "trg2", mustRules(t, "trg2"), gtidPos(t, e.src), 200*time.Millisecond
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go func() { done <- Run(ctx, cfg) }()
	time.Sleep(time.Second)
	e.dst.ExecT(t, "CREATE TRIGGER trg2.t_bi BEFORE INSERT ON trg2.t FOR EACH ROW SET NEW.id = NEW.id")
	select {
	case err := <-done:
		var te *plan.TriggerError
		if !errors.As(err, &te) {
			t.Fatalf("stopped with %v; want a trigger error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stream kept running with a trigger on a replicated table")
	}
}

// TestNonTransactionalTargetRefused: retries and crash recovery roll back;
// a MyISAM target table cannot, so it is refused before anything is
// applied (a retry once applied its rows twice).
func TestNonTransactionalTargetRefused(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "eng")
	e.src.ExecT(t, "CREATE DATABASE eng", "CREATE TABLE eng.t (id INT PRIMARY KEY) ENGINE=InnoDB")
	e.dst.ExecT(t, "CREATE DATABASE eng", "CREATE TABLE eng.t (id INT PRIMARY KEY) ENGINE=MyISAM")
	start := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO eng.t VALUES (1)")
	err, _ := e.runStream(t, "eng", start, gtidPos(t, e.src))
	if err == nil || !strings.Contains(err.Error(), "`eng`.`t` uses the MyISAM engine") || !strings.Contains(err.Error(), "ENGINE=InnoDB") {
		t.Fatalf("a MyISAM target table: %v", err)
	}
	var n int
	e.dst.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM eng.t").Scan(&n)
	if n != 0 {
		t.Errorf("rows were applied to the refused table")
	}
}

// TestStatementDMLOnUnreplicatedSchema: pt-table-checksum writes
// statement-based DML into its own schema on a row-based source; a stream
// that does not replicate that schema must skip it, not stop.
func TestStatementDMLOnUnreplicatedSchema(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "shop")
	e.src.ExecT(t, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)", "CREATE DATABASE percona",
		"CREATE TABLE percona.checksums (db CHAR(64), tbl CHAR(64), crc CHAR(40), PRIMARY KEY (db, tbl))")
	e.dst.ExecT(t, "CREATE DATABASE shop", "CREATE TABLE shop.t (id INT PRIMARY KEY)")
	start := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO shop.t VALUES (1)",
		"SET SESSION binlog_format = STATEMENT",
		"USE shop",
		"REPLACE INTO `percona`.`checksums` (db, tbl, crc) SELECT 'shop', 't', COUNT(*) FROM `shop`.`t`",
		"UPDATE `percona`.`checksums` SET crc = 'x' WHERE db = 'shop'",
		"SET SESSION binlog_format = ROW",
		"INSERT INTO shop.t VALUES (2)")
	if err, _ := e.runStream(t, "shop", start, gtidPos(t, e.src)); err != nil {
		t.Fatal(err)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "shop")
}

// TestRowsIgnoreCheckConstraints: rows are applied as MariaDB's replica
// applies row events, without evaluating CHECK constraints: a row a source
// session wrote with check_constraint_checks=0 (invalid JSON, a negative
// value) and a row only the target's own constraint refuses are stored, and
// the tables end equal. (binlane once re-checked them: the first stopped the
// stream, and JSON documents cost the target a fifth more CPU.)
func TestRowsIgnoreCheckConstraints(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "ck")
	def := "CREATE TABLE ck.t (id INT PRIMARY KEY, v INT, j JSON, CONSTRAINT pos CHECK (v > 0)"
	e.src.ExecT(t, "CREATE DATABASE ck", def+")")
	e.dst.ExecT(t, "CREATE DATABASE ck", def+", CONSTRAINT small CHECK (v < 100))")
	start := gtidPos(t, e.src)
	e.src.ExecT(t, "INSERT INTO ck.t VALUES (1, 5, '{}')",
		"SET SESSION check_constraint_checks=0", "INSERT INTO ck.t VALUES (2, -1, 'not json')",
		"SET SESSION check_constraint_checks=1", "UPDATE ck.t SET v = 500 WHERE id = 1")
	end := gtidPos(t, e.src)
	if err, _ := e.runStream(t, "ck", start, end); err != nil {
		t.Fatalf("rows the source stored were refused: %v", err)
	}
	verifyRows(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "ck") // the target's CHECK constraint is its own
}

// TestSavepointsWithNonTransactionalSource: a transaction that changed a
// non-transactional table on the source reaches the binlog with its
// SAVEPOINT / ROLLBACK TO (or ending in ROLLBACK): the source kept the
// non-transactional changes and undid the others. binlane once committed
// every logged row; it must apply what the source kept, nothing more.
// The target's tables are all InnoDB (non-transactional target tables are
// refused), so binlane reads the source's engines to resolve it.
func TestSavepointsWithNonTransactionalSource(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "sp")
	e.src.ExecT(t, "CREATE DATABASE sp", "CREATE TABLE sp.i (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE sp.m (id INT PRIMARY KEY) ENGINE=MyISAM")
	e.dst.ExecT(t, "CREATE DATABASE sp", "CREATE TABLE sp.i (id INT PRIMARY KEY) ENGINE=InnoDB",
		"CREATE TABLE sp.m (id INT PRIMARY KEY) ENGINE=InnoDB")
	start := gtidPos(t, e.src)
	e.src.ExecT(t,
		"BEGIN", "INSERT INTO sp.i VALUES (1)", "SAVEPOINT a", "INSERT INTO sp.m VALUES (1)", "INSERT INTO sp.i VALUES (2)",
		"ROLLBACK TO SAVEPOINT a", "INSERT INTO sp.i VALUES (3)", "COMMIT",
		"BEGIN", "INSERT INTO sp.i VALUES (4)", "INSERT INTO sp.m VALUES (2)", "ROLLBACK",
		"INSERT INTO sp.i VALUES (5)")
	end := gtidPos(t, e.src)
	for _, batch := range []int{1, 16} {
		e.dst.ExecT(t, "DELETE FROM sp.i", "DELETE FROM sp.m")
		obs := &Observer{}
		err, _ := e.runStream(t, "sp", start, end, func(c *Config) { c.Apply.MaxBatch, c.Observer = batch, obs })
		if err != nil {
			t.Fatalf("max batch %d: %v", batch, err)
		}
		if r, _ := obs.Read(); r.Snapshot.Serialized[apply.AloneSavepoint] == 0 {
			t.Errorf("max batch %d: %v transactions resolved; want the savepoint one (did the source binlog its savepoints?)", batch, r.Snapshot.Serialized)
		}
		verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "sp")
	}
}

// TestSecondProcessRefused: a second binlane on a running stream is refused
// with the first one named, and writes nothing (it once failed on a
// misleading duplicate key and wrote "error" into the running stream's row).
func TestSecondProcessRefused(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "two")
	e.src.ExecT(t, "CREATE DATABASE two", "CREATE TABLE two.t (id INT PRIMARY KEY)")
	e.dst.ExecT(t, "CREATE DATABASE two", "CREATE TABLE two.t (id INT PRIMARY KEY)")
	start := gtidPos(t, e.src)
	cfg := e.config(t, 2)
	cfg.Stream, cfg.Rules, cfg.StartGTID = "two", mustRules(t, "two"), start
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := make(chan error, 1)
	go func() { first <- Run(ctx, cfg) }()
	e.src.ExecT(t, "INSERT INTO two.t VALUES (1)")
	e.waitStream(t, "two", gtidPos(t, e.src))
	before := e.state(t, "two")

	err, _ := e.runStream(t, "two", start, "")
	var busy *position.BusyError
	if !errors.As(err, &busy) || !strings.Contains(err.Error(), "is run by another binlane process") ||
		!strings.Contains(err.Error(), before.Owner.Host) {
		t.Fatalf("second process: %v", err)
	}
	after := e.state(t, "two")
	if after.State != position.StateRunning || after.Message != "" || after.Owner.Token != before.Owner.Token {
		t.Errorf("the second process changed the stream: %+v", after)
	}
	e.src.ExecT(t, "INSERT INTO two.t VALUES (2)")
	e.waitStream(t, "two", gtidPos(t, e.src))
	cancel()
	if err := <-first; err != nil {
		t.Fatalf("first process: %v", err)
	}
	verifyDB(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "two")
}

// waitStream waits until a stream's saved position contains pos.
func (e *env) waitStream(t *testing.T, stream, pos string) {
	t.Helper()
	want := samePos(t, pos)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if st, ok, _ := position.Load(context.Background(), e.dst.OpenT(t, ""), stream); ok && st.GTID != "" && samePos(t, st.GTID) == want {
			return
		}
	}
	t.Fatalf("stream %s did not reach %s", stream, pos)
}

// TestUniqueKeyAddedOnTarget: the target's definitions are read when a
// table is first met; a unique key added on the target afterwards is not
// in the plans, and merged rows of that table can then collide with it
// in an order the source never had. The failure must lead to reading the
// definitions again (and a restart from the saved position with the new
// plans), not to 20 retries and a stop.
func TestUniqueKeyAddedOnTarget(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "uk")
	for _, s := range []*sandbox.Server{e.src, e.dst} {
		s.ExecT(t, "CREATE DATABASE uk", "CREATE TABLE uk.t (id INT PRIMARY KEY, u INT NOT NULL)",
			"CREATE TABLE uk.big (id INT PRIMARY KEY, pad CHAR(100))", "INSERT INTO uk.t VALUES (1, 1), (2, 2)")
	}
	cfg := e.config(t, 1)
	cfg.Stream, cfg.Rules, cfg.StartGTID = "uk", mustRules(t, "uk"), gtidPos(t, e.src)
	obs := &Observer{}
	cfg.Observer = obs
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	e.src.ExecT(t, "UPDATE uk.t SET u = 3 WHERE id = 1", "UPDATE uk.t SET u = 1 WHERE id = 1", "INSERT INTO uk.big VALUES (0, '')") // plans built
	e.waitStream(t, "uk", gtidPos(t, e.src))
	e.dst.ExecT(t, "ALTER TABLE uk.t ADD UNIQUE KEY u (u)")
	// A big transaction, then a swap through a free value: merged behind it
	// (one worker), the last images collide on the new key.
	e.src.ExecT(t, "INSERT INTO uk.big SELECT seq, 'x' FROM uk.seq_1_to_100000",
		"UPDATE uk.t SET u = 9 WHERE id = 1", "UPDATE uk.t SET u = 1 WHERE id = 2", "UPDATE uk.t SET u = 2 WHERE id = 1")
	e.waitStream(t, "uk", gtidPos(t, e.src))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	verifyRows(t, e.src.OpenT(t, ""), e.dst.OpenT(t, ""), "uk") // the unique key is the target's own
}
