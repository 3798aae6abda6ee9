package replicate

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/testutil"
)

// The statement-coverage corpus (issue 16): short workloads of DDL under
// varied session settings and every statement form MariaDB logs in ROW
// format, each in a database of its own, replicated from one source into
// two targets, with 1 worker and with 8, and compared with mariadb-dump of
// all three servers. Workloads the corpus expects binlane to refuse run one
// by one: the stream must stop naming the reason, with its position before
// the refused transaction and the target as it was there.

// workload is one corpus entry. Each statement runs on one source session
// in order; a statement starting with "!" may fail on the source (it is
// logged with its error code, which is part of what is tested).
type corpusWorkload struct {
	name  string
	stmts []string
	// refuse, when set, is a text the stream's error must contain: the last
	// statement is the one refused; the ones before it replicate.
	refuse string
	// deferred is the number of statements binlane must keep for cut-over
	// (trigger and event DDL) instead of running them.
	deferred int
	// pre runs in the workload's database on the source before the stream's
	// start position, and preTarget on the target (what a copy would have
	// brought there).
	pre, preTarget []string
}

// corpusDB is the database of workload i.
func corpusDB(i int) string { return fmt.Sprintf("c%03d", i) }

// runCorpusWorkload runs a workload's statements on the source in a
// database of its own, created after the session settings that precede
// the first "USE" (collation_server decides the database's collation).
func runCorpusWorkload(t *testing.T, src *sandbox.Server, db string, w corpusWorkload) {
	t.Helper()
	ctx := context.Background()
	pool := src.OpenT(t, "")
	conn, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Close the session itself, not only the pool's handle: an XA
		// transaction it prepared is detached and can be finished from
		// another session only then.
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
		waitSessionGone(t, pool, id)
	}()
	created := false
	if len(w.stmts) > 0 && strings.HasPrefix(w.stmts[0], "USE ") {
		created = true // the database exists already
	}
	create := func() {
		if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+db); err != nil {
			t.Fatalf("%s: create database: %v", w.name, err)
		}
		if _, err := conn.ExecContext(ctx, "USE "+db); err != nil {
			t.Fatal(err)
		}
		created = true
	}
	for _, q := range w.stmts {
		mayFail := strings.HasPrefix(q, "!")
		q = strings.TrimPrefix(q, "!")
		if !created && !strings.HasPrefix(strings.ToUpper(strings.TrimSpace(q)), "SET ") {
			create()
		}
		_, err := conn.ExecContext(ctx, q)
		if err != nil && !mayFail {
			t.Fatalf("workload %s on the source: %q: %v", w.name, q, err)
		}
	}
	if !created {
		create()
	}
}

// waitSessionGone waits until the server has ended session id. A client's
// close returns before the server has processed it, and a prepared XA
// transaction stays attached to its session (unknown to every other, error
// XAER_NOTA) until then: CI once finished one too early.
func waitSessionGone(t *testing.T, db *sql.DB, id int64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d still open 30 s after its client closed it", id)
		}
	}
}

// corpusRun replicates the source range [from, to) into dst with workers.
func corpusRun(t *testing.T, src, dst *sandbox.Server, stream, from, to string, workers int, dbs []string, opts ...func(*Config)) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srcURL, err := src.GrantBinlane(ctx, false, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	dstURL, err := dst.GrantBinlane(ctx, false, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	// DDL that names a definer (views, routines) needs SET USER, as the
	// README says.
	dst.ExecT(t, "SET SESSION sql_log_bin=0", "GRANT SET USER ON *.* TO '"+sandbox.TargetUser+"'@'%'")
	s, _ := dsn.Parse(srcURL)
	d, _ := dsn.Parse(dstURL)
	cfg := Config{Source: s, Target: d, Stream: stream, StartGTID: from, StopAtGTID: to, Rules: mustRules(t, dbs...),
		HeartbeatPeriod: 500 * time.Millisecond, RetryMin: 100 * time.Millisecond, RetryMax: time.Second,
		Logger: testutil.Logger(t), ReportPeriod: time.Second, FirstTries: 1,
		Apply: apply.Config{Workers: workers, MaxBatch: 16, Mode: scheduler.ModeWriteset}}
	for _, o := range opts {
		o(&cfg)
	}
	return Run(ctx, cfg)
}

// dumpDatabases returns mariadb-dump's output of each database, with the
// AUTO_INCREMENT counters left out (a replica's counter is one past its
// highest row; the source's can be further along after rolled-back or
// deleted inserts, as on any replica).
func dumpDatabases(t *testing.T, s *sandbox.Server, dbs []string) map[string]string {
	t.Helper()
	args := append([]string{"--no-defaults", "-uroot", "-h127.0.0.1", fmt.Sprintf("-P%d", s.Port), "--skip-dump-date",
		"--skip-comments", "--single-transaction", "--routines", "--skip-triggers", "--order-by-primary", "--hex-blob", "--tz-utc",
		"--default-character-set=utf8mb4", "--databases"}, dbs...)
	out, err := exec.Command("mariadb-dump", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-dump %s: %v\n%s", s.Name, err, out)
	}
	autoInc := regexp.MustCompile(` AUTO_INCREMENT=\d+`)
	res := map[string]string{}
	cur := ""
	createDB := regexp.MustCompile("^CREATE DATABASE (?:/\\*[^*]*\\*/ )?`([^`]+)`")
	for _, line := range bytes.SplitAfter(out, []byte("\n")) {
		if m := createDB.FindSubmatch(line); m != nil {
			cur = string(m[1])
		}
		res[cur] += autoInc.ReplaceAllString(string(line), "")
	}
	return res
}

func deferredCounts(t *testing.T, dst *sandbox.Server, stream string) map[string]int {
	t.Helper()
	rows, err := dst.OpenT(t, "").Query("SELECT schema_name, COUNT(*) FROM "+position.DeferredTable+" WHERE stream = ? GROUP BY schema_name", stream)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var db string
		var n int
		if err := rows.Scan(&db, &n); err != nil {
			t.Fatal(err)
		}
		out[db] = n
	}
	return out
}

// TestStatementCorpus replicates every workload the corpus expects to end
// equal, with 1 and with 8 workers.
func TestStatementCorpus(t *testing.T) {
	var ws []corpusWorkload
	for _, w := range statementCorpus() {
		if w.refuse == "" {
			ws = append(ws, w)
		}
	}
	replicateCorpus(t, ws)
}

// replicateCorpus runs workloads on a source, replicates them into two
// targets, with 1 worker and with 8, and compares mariadb-dump of every
// workload's database, and verify's comparison.
func replicateCorpus(t *testing.T, workloads []corpusWorkload) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	targets := map[int]*sandbox.Server{
		1: sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Name: "target1"}),
		8: sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Name: "target8", ServerID: 3}),
	}
	for _, dst := range targets {
		// Routines on a target that binlogs what binlane applies need it,
		// as the README says (the refusal is in TestStatementRefusals).
		dst.ExecT(t, "SET GLOBAL log_bin_trust_function_creators=1")
	}
	src.ExecT(t, "CREATE DATABASE marker")
	from := gtidPos(t, src)
	var dbs []string
	byDB := map[string]corpusWorkload{}
	for i, w := range workloads {
		db := corpusDB(i)
		runCorpusWorkload(t, src, db, w)
		dbs = append(dbs, db)
		byDB[db] = w
	}
	to := gtidPos(t, src)
	want := dumpDatabases(t, src, dbs)
	equal := 0
	for _, workers := range []int{1, 8} {
		dst := targets[workers]
		stream := fmt.Sprintf("corpus%d", workers)
		start := time.Now()
		if err := corpusRun(t, src, dst, stream, from, to, workers, dbs); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		t.Logf("%d workers: %d workloads replicated in %v", workers, len(dbs), time.Since(start).Round(time.Millisecond))
		st, ok, err := position.Load(context.Background(), dst.OpenT(t, ""), stream)
		if err != nil || !ok || st.GTID != to {
			t.Fatalf("%d workers: position %q (%v %v), want %q", workers, st.GTID, ok, err, to)
		}
		got := dumpDatabases(t, dst, dbs)
		deferred := deferredCounts(t, dst, stream)
		for _, db := range dbs {
			w := byDB[db]
			if got[db] != want[db] {
				t.Errorf("%d workers: workload %s (%s) differs:\n%s", workers, w.name, db, diffLines(want[db], got[db]))
				continue
			}
			if deferred[db] != w.deferred {
				t.Errorf("%d workers: workload %s (%s): %d statements deferred, want %d", workers, w.name, db, deferred[db], w.deferred)
				continue
			}
			equal++
		}
		// verify, rows and objects, agrees with mariadb-dump.
		verifyServers(t, src, dst, dbs...)
	}
	t.Logf("corpus: %d workloads, %d of %d runs equal", len(dbs), equal, 2*len(dbs))
}

// TestStatementRefusals runs each workload binlane must refuse: the stream
// stops with the reason, before the refused transaction, the target as it
// was there.
func TestStatementRefusals(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	for i, w := range statementCorpus() {
		if w.refuse == "" {
			continue
		}
		t.Run(w.name, func(t *testing.T) {
			db := corpusDB(i)
			if len(w.pre) > 0 {
				runCorpusWorkload(t, src, db, corpusWorkload{name: w.name, stmts: w.pre})
				dst.ExecT(t, append([]string{"SET SESSION sql_log_bin=0", "CREATE DATABASE " + db, "USE " + db}, w.preTarget...)...)
				w.stmts = append([]string{"USE " + db}, w.stmts...)
			}
			from := gtidPos(t, src)
			setup := w
			setup.stmts = w.stmts[:len(w.stmts)-1]
			runCorpusWorkload(t, src, db, setup)
			before := gtidPos(t, src)
			wantDump := dumpDatabases(t, src, []string{db})[db]
			conn := src.OpenT(t, db)
			q := w.stmts[len(w.stmts)-1]
			// The refused statement runs on a session with the settings
			// the workload made before it.
			if err := execWithSettings(conn, w.stmts, q); err != nil {
				t.Fatalf("refused statement on the source: %v", err)
			}
			to := gtidPos(t, src)
			stream := "refuse_" + db
			err := corpusRun(t, src, dst, stream, from, to, 4, []string{db})
			if err == nil || !strings.Contains(err.Error(), w.refuse) {
				t.Fatalf("stream ended with %v; want an error naming %q", err, w.refuse)
			}
			t.Logf("refused: %v", err)
			st, ok, lerr := position.Load(context.Background(), dst.OpenT(t, ""), stream)
			if lerr != nil || !ok || st.GTID != before || st.State != position.StateError {
				t.Fatalf("position %q state %q (%v %v), want %q in state error", st.GTID, st.State, ok, lerr, before)
			}
			if got := dumpDatabases(t, dst, []string{db})[db]; got != wantDump {
				t.Fatalf("target changed by the refused transaction:\n%s", diffLines(wantDump, got))
			}
		})
	}
}

// execWithSettings runs q on a session that first repeats the SET
// statements of stmts (the session settings the workload made).
func execWithSettings(db *sql.DB, stmts []string, q string) error {
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, s := range stmts[:len(stmts)-1] {
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "SET ") {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return err
			}
		}
	}
	_, err = conn.ExecContext(ctx, strings.TrimPrefix(q, "!"))
	if strings.HasPrefix(q, "!") {
		return nil
	}
	return err
}

// diffLines shows the lines of a and b that differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out strings.Builder
	n := max(len(al), len(bl))
	shown := 0
	for i := 0; i < n && shown < 20; i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			fmt.Fprintf(&out, "  source: %s\n  target: %s\n", x, y)
			shown++
		}
	}
	return out.String()
}
