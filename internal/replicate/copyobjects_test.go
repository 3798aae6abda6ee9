package replicate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/verify"
)

// objectsSource creates, on the source, a database with every kind of
// object a copy brings along, and what makes them hard: views on views
// listed before what they read, a view over another copied database's
// table, a view calling a stored function, a view over a database the
// stream does not copy (it cannot be created on the target), sequences
// (one with a cache, one without) used by a table's DEFAULT, a procedure
// created under ANSI_QUOTES, an event, and a table created under an empty
// sql_mode with zero dates as defaults.
func objectsSource(t *testing.T, src *sandbox.Server) {
	t.Helper()
	src.ExecT(t,
		"CREATE DATABASE objs CHARACTER SET latin1 COLLATE latin1_swedish_ci",
		"CREATE DATABASE other", "CREATE DATABASE hidden",
		"CREATE TABLE hidden.h (id INT PRIMARY KEY)",
		"CREATE TABLE other.base (id INT PRIMARY KEY, name VARCHAR(20))",
		"INSERT INTO other.base VALUES (1, 'one'), (2, 'two')",
		"CREATE SEQUENCE objs.sq START WITH 100 INCREMENT BY 3 CACHE 5",
		"CREATE SEQUENCE objs.nc NOCACHE",
		"CREATE TABLE objs.orders (id BIGINT PRIMARY KEY DEFAULT NEXTVAL(objs.sq), v INT)",
		"INSERT INTO objs.orders (v) VALUES (1), (2), (3)",
		"SELECT NEXTVAL(objs.nc)",
		"SET SESSION sql_mode = ''",
		"CREATE TABLE objs.z (id INT PRIMARY KEY, dt DATETIME NOT NULL DEFAULT '0000-00-00 00:00:00', d2 DATE DEFAULT '1970-00-00')",
		"INSERT INTO objs.z (id) VALUES (1)",
		"SET SESSION sql_mode = DEFAULT",
		"CREATE FUNCTION objs.f_double(x BIGINT) RETURNS BIGINT DETERMINISTIC RETURN x * 2",
		"CREATE VIEW objs.v_b AS SELECT id, v FROM objs.orders",
		"CREATE VIEW objs.v_a AS SELECT id FROM objs.v_b WHERE v > 1",
		"CREATE VIEW objs.v_f AS SELECT objs.f_double(id) AS d FROM objs.orders",
		"CREATE VIEW objs.v_other AS SELECT o.id, b.name FROM objs.orders o JOIN other.base b ON b.id = o.v",
		"CREATE VIEW objs.v_hidden AS SELECT id FROM hidden.h",
		"SET SESSION sql_mode = 'ANSI_QUOTES'",
		`CREATE PROCEDURE objs.p_add(n INT) INSERT INTO "objs"."orders" (v) VALUES (n)`,
		"SET SESSION sql_mode = DEFAULT",
		"CREATE EVENT objs.ev ON SCHEDULE EVERY 1 HOUR DO INSERT INTO objs.orders (v) VALUES (0)",
	)
}

// objectsTarget makes the target as strict as MySQL 8's default (zero
// dates refused) and lets it take stored functions while it binlogs.
func objectsTarget(t *testing.T, dst *sandbox.Server) {
	t.Helper()
	dst.ExecT(t, "SET GLOBAL sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,ERROR_FOR_DIVISION_BY_ZERO'",
		"SET GLOBAL log_bin_trust_function_creators = ON")
}

// TestCopyObjects copies a database with every kind of object into an
// empty target while the source uses its sequences and changes a view,
// then replicates to the source's position: the target has each object
// with the source's definition and session (sql_mode, character sets,
// definer), the events disabled, the sequences in the source's state (the
// next NEXTVAL of a sequence without a cache returns what the source's
// would), the view it cannot create reported and left out, and every row.
func TestCopyObjects(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	objectsSource(t, e.src)
	objectsTarget(t, e.dst)
	e.grant(t, "objs", "other")
	if _, err := e.dst.GrantBinlane(ctx, true, "objs", "other"); err != nil { // SET USER: the source's definers
		t.Fatal(err)
	}
	// The source keeps using its sequences and changes a view while the copy runs.
	var stop atomic.Bool
	loadDone := make(chan error, 1)
	load := e.src.OpenT(t, "")
	load.SetMaxOpenConns(1)
	go func() {
		var err error
		for i := 0; !stop.Load() && err == nil; i++ {
			_, err = load.ExecContext(ctx, "INSERT INTO objs.orders (v) VALUES (2)")
			if err == nil {
				_, err = load.ExecContext(ctx, "SELECT NEXTVAL(objs.nc)")
			}
			if i == 10 && err == nil {
				_, err = load.ExecContext(ctx, "CREATE OR REPLACE VIEW objs.v_b AS SELECT id, v, 1 AS one FROM objs.orders")
			}
			time.Sleep(5 * time.Millisecond)
		}
		loadDone <- err
	}()
	cfg := e.copyConfig(t)
	cfg.Rules = mustRules(t, "objs", "other")
	cfg.Copy.ExitWhenDone = true
	err := Run(ctx, cfg)
	stop.Store(true)
	if lerr := <-loadDone; lerr != nil {
		t.Fatal(lerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg = e.copyConfig(t)
	cfg.Rules = mustRules(t, "objs", "other")
	cfg.StopAtGTID = gtidPos(t, e.src)
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	// verify: every row and object equal, but for the view left out (and
	// the event, disabled on the replica until the cut-over, counts as equal).
	rep := verifyReport(t, e.src, e.dst, verify.Config{Rules: mustRules(t, "objs", "other")})
	if diff := rep.DifferingObjects(); len(rep.Differing()) > 0 || len(diff) != 1 || diff[0].Label() != "view objs.v_hidden" ||
		diff[0].Status != verify.ObjectMissing {
		var b strings.Builder
		rep.Format(&b)
		t.Errorf("verify: want only view objs.v_hidden missing on the target:\n%s", b.String())
	}
	src, dst := e.src.OpenT(t, ""), e.dst.OpenT(t, "")
	for _, q := range objectQueries {
		s, d := queryLines(t, src, q), queryLines(t, dst, q)
		s = without(s, "v_hidden")
		if strings.Join(s, "\n") != strings.Join(d, "\n") {
			t.Errorf("%s\nsource:\n%s\ntarget:\n%s", q, strings.Join(s, "\n"), strings.Join(d, "\n"))
		}
	}
	if got := queryLines(t, dst, "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'objs'"); strings.Join(got, ",") != "SLAVESIDE_DISABLED" {
		t.Errorf("the target's event: status %v, want SLAVESIDE_DISABLED", got)
	}
	if got := queryLines(t, dst, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'objs' AND TABLE_NAME = 'v_hidden'"); len(got) > 0 {
		t.Errorf("the view over a database the stream does not copy is on the target")
	}
	for _, db := range []string{"objs", "other"} {
		if s, d := queryLines(t, src, "SHOW CREATE DATABASE "+db), queryLines(t, dst, "SHOW CREATE DATABASE "+db); s[0] != d[0] {
			t.Errorf("database %s: source %s, target %s", db, s, d)
		}
	}
	for _, tbl := range []string{"objs.z", "objs.orders", "objs.sq", "objs.nc"} {
		if s, d := queryLines(t, src, "SHOW CREATE TABLE "+tbl), queryLines(t, dst, "SHOW CREATE TABLE "+tbl); s[0] != d[0] {
			t.Errorf("%s: source\n%s\ntarget\n%s", tbl, s, d)
		}
	}
	// The sequences' rows are the source's; without a cache, the target's
	// next value is the one the source would have given.
	for _, sq := range []string{"objs.sq", "objs.nc"} {
		if s, d := queryLines(t, src, "SELECT * FROM "+sq), queryLines(t, dst, "SELECT * FROM "+sq); s[0] != d[0] {
			t.Errorf("%s: source state %s, target %s", sq, s, d)
		}
	}
	var want, got int64
	if err := src.QueryRow("SELECT next_not_cached_value FROM objs.nc").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if err := dst.QueryRow("SELECT NEXTVAL(objs.nc)").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want || want < 10 {
		t.Errorf("NEXTVAL(objs.nc) on the target = %d, the source's next is %d", got, want)
	}
	// The copied procedure runs on the target, in its own sql_mode.
	if _, err := dst.Exec("CALL objs.p_add(7)"); err != nil {
		t.Errorf("the copied procedure: %v", err)
	}
}

// objectQueries list the objects' definitions as information_schema
// shows them: what a copy must reproduce (an event's status aside).
var objectQueries = []string{
	`SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION, CHECK_OPTION, IS_UPDATABLE, DEFINER, SECURITY_TYPE,
		CHARACTER_SET_CLIENT, COLLATION_CONNECTION, ALGORITHM FROM information_schema.VIEWS
		WHERE TABLE_SCHEMA IN ('objs', 'other') ORDER BY 1, 2`,
	`SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, DTD_IDENTIFIER, ROUTINE_DEFINITION, IS_DETERMINISTIC, SQL_DATA_ACCESS,
		SECURITY_TYPE, SQL_MODE, DEFINER, CHARACTER_SET_CLIENT, COLLATION_CONNECTION, DATABASE_COLLATION
		FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA IN ('objs', 'other') ORDER BY 1, 2`,
	`SELECT EVENT_SCHEMA, EVENT_NAME, DEFINER, TIME_ZONE, EVENT_DEFINITION, INTERVAL_VALUE, INTERVAL_FIELD, SQL_MODE, STARTS,
		ON_COMPLETION, CHARACTER_SET_CLIENT, COLLATION_CONNECTION, DATABASE_COLLATION
		FROM information_schema.EVENTS WHERE EVENT_SCHEMA IN ('objs', 'other') ORDER BY 1, 2`,
	`SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA IN ('objs', 'other') ORDER BY 1, 2`,
}

// queryLines runs q and returns each row as one line.
func queryLines(t *testing.T, db *sql.DB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprintf("%v", v.String)
		}
		out = append(out, strings.Join(parts, " | "))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func without(lines []string, name string) []string {
	var out []string
	for _, l := range lines {
		if !strings.Contains(l, " | "+name+" | ") {
			out = append(out, l)
		}
	}
	return out
}

// TestCopyMissingDefiner: a source account that may not see routines or
// events, and a view and a procedure whose DEFINER the target lacks, stop
// the copy at its start with an error naming the grant, or the account
// and both objects, before anything is recorded; started again with
// --definer=current, the copy creates them as binlane's account.
func TestCopyMissingDefiner(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE objs", "CREATE TABLE objs.t (id INT PRIMARY KEY)", "INSERT INTO objs.t VALUES (1)",
		"CREATE USER 'ghost'@'%'",
		"CREATE DEFINER='ghost'@'%' VIEW objs.v AS SELECT id FROM objs.t",
		"CREATE DEFINER='ghost'@'%' PROCEDURE objs.p() SELECT 1")
	e.grant(t, "objs")
	if _, err := e.dst.GrantBinlane(ctx, true, "objs"); err != nil {
		t.Fatal(err)
	}
	cfg := e.copyConfig(t)
	cfg.Rules = mustRules(t, "objs")
	cfg.Copy.ExitWhenDone = true
	// Without the grants that show routines and events, information_schema
	// would list none: the copy refuses to start instead of leaving them out.
	for _, c := range []struct{ revoke, want string }{
		{"REVOKE SELECT ON mysql.proc FROM " + sandbox.SourceUser + "@'%'", "grant it SELECT ON mysql.proc"},
		{"REVOKE EVENT ON objs.* FROM " + sandbox.SourceUser + "@'%'", "grant it EVENT ON `objs`.*"},
	} {
		e.src.ExecT(t, "SET SESSION sql_log_bin = 0; "+c.revoke)
		err := Run(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: the copy says %v, want %q", c.revoke, err, c.want)
		}
		e.grant(t, "objs")
	}
	err := Run(ctx, cfg)
	if !errors.Is(err, provision.ErrMissingDefiner) {
		t.Fatalf("copy with a definer the target lacks: %v", err)
	}
	for _, want := range []string{"ghost@%", "view `objs`.`v`", "procedure `objs`.`p`", "--definer=current"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not name %q: %v", want, err)
		}
	}
	tables, lerr := position.LoadCopy(ctx, e.dst.OpenT(t, ""), cfg.Stream)
	if lerr != nil || len(tables) > 0 {
		t.Fatalf("a refused copy recorded %d tables (%v)", len(tables), lerr)
	}
	cfg.Copy.Objects.CurrentDefiner = true
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	dst := e.dst.OpenT(t, "")
	for _, q := range []string{"SELECT DEFINER FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'objs'",
		"SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'objs'"} {
		if got := queryLines(t, dst, q); len(got) != 1 || got[0] != sandbox.TargetUser+"@%" {
			t.Errorf("%s: %v, want %s@%%", q, got, sandbox.TargetUser)
		}
	}
	// verify tells the definers apart, unless told not to compare them.
	if rep := verifyReport(t, e.src, e.dst, verify.Config{Rules: mustRules(t, "objs")}); len(rep.DifferingObjects()) != 2 {
		t.Errorf("verify found %d objects differing, want the view and the procedure (their definers)", len(rep.DifferingObjects()))
	}
	if rep := verifyReport(t, e.src, e.dst, verify.Config{Rules: mustRules(t, "objs"), AnyDefiner: true}); !rep.Equal() {
		var b strings.Builder
		rep.Format(&b)
		t.Errorf("verify without definers:\n%s", b.String())
	}
}

// verifyReport runs verify between two servers' admin sessions with cfg.
func verifyReport(t *testing.T, src, dst *sandbox.Server, cfg verify.Config) *verify.Report {
	t.Helper()
	cfg.Source, cfg.Target = src.OpenT(t, ""), dst.OpenT(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := verify.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
