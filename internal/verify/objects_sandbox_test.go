package verify

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
)

// verifierPool opens a pool as an account with exactly the README's
// verify grants on dbs.
func verifierPool(t *testing.T, s *sandbox.Server, dbs ...string) *sql.DB {
	t.Helper()
	acct := "'checker'@'%'"
	s.ExecT(t, append([]string{"SET SESSION sql_log_bin = 0", "CREATE USER " + acct + " IDENTIFIED BY 'ch3cker'"},
		sandbox.VerifyGrants(acct, dbs...)...)...)
	db, err := sql.Open("mysql", "checker:ch3cker@tcp("+s.Addr()+")/?charset=utf8mb4")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// objectStatuses maps each object's label to its status.
func objectStatuses(rep *Report) map[string]ObjectStatus {
	out := map[string]ObjectStatus{}
	for _, o := range rep.Objects {
		out[o.Label()] = o.Status
	}
	return out
}

// TestVerifyObjects: verify compares the definitions of tables, views,
// sequences (with their state), routines, triggers and events, as an
// account with exactly the README's verify grants. Objects made the same
// way are equal, whatever their AUTO_INCREMENT counter or an event's
// replica status; the trigger and event the target lacks are deferred to
// the cut-over (and missing once it is handed over); then a view and a
// function that differ, a procedure missing, a view only on the target and
// a sequence moved on the source are reported, exactly those, while the
// rows stay equal.
func TestVerifyObjects(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, tgtDB := verifierPool(t, src, "obj"), verifierPool(t, tgt, "obj")
	common := []string{
		"CREATE DATABASE obj",
		"CREATE TABLE obj.t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
		"INSERT INTO obj.t VALUES (1, 1), (2, 2), (3, 3)",
		"CREATE VIEW obj.v AS SELECT id, v * 2 AS w FROM obj.t",
		"CREATE VIEW obj.`we``ird'v` AS SELECT 1 AS a",
		"CREATE SEQUENCE obj.s START WITH 100 INCREMENT BY 5",
		"CREATE PROCEDURE obj.p(IN x INT)\nBEGIN\n  INSERT INTO obj.t (v) VALUES (x);\nEND",
		"CREATE FUNCTION obj.f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1",
	}
	event := "CREATE EVENT obj.e ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE %s DO DELETE FROM obj.t WHERE v < 0"
	src.ExecT(t, append(common, "CREATE TRIGGER obj.tr BEFORE INSERT ON obj.t FOR EACH ROW SET NEW.v = COALESCE(NEW.v, 0)",
		strings.Replace(event, "%s", "ENABLE", 1))...)
	// The target as a replica holds them: its counter elsewhere, the event
	// disabled on it, no trigger.
	tgt.ExecT(t, append(common, "ALTER TABLE obj.t AUTO_INCREMENT = 500", strings.Replace(event, "%s", "DISABLE ON SLAVE", 1))...)

	run := func(handedOver bool) *Report {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rep, err := Run(ctx, Config{Source: srcDB, Target: tgtDB, Rules: filter.Rules{Databases: []string{"obj"}}, HandedOver: handedOver})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return rep
	}

	rep := run(false)
	want := map[string]ObjectStatus{
		"table obj.t": ObjectEqual, "view obj.v": ObjectEqual, "view obj.we`ird'v": ObjectEqual, "sequence obj.s": ObjectEqual,
		"procedure obj.p": ObjectEqual, "function obj.f": ObjectEqual, "trigger obj.tr": ObjectDeferred, "event obj.e": ObjectEqual,
	}
	if got := objectStatuses(rep); !reflect.DeepEqual(got, want) || !rep.Equal() {
		t.Fatalf("objects made the same way: %v\n%s", got, rep)
	}
	if !strings.Contains(rep.Summary(), "8 objects, 7 equal, 0 differing, 1 deferred to the cut-over") {
		t.Errorf("summary: %s", rep.Summary())
	}

	// Once the target took over, the trigger must be there and the event
	// enabled.
	rep = run(true)
	want["trigger obj.tr"], want["event obj.e"] = ObjectMissing, ObjectDifferent
	if got := objectStatuses(rep); !reflect.DeepEqual(got, want) || rep.Equal() {
		t.Fatalf("after the hand-over: %v\n%s", got, rep)
	}
	if e := rep.Object(KindEvent, "obj", "e"); !strings.Contains(e.Source, "PRESERVE ENABLE") || !strings.Contains(e.Target, "DISABLE ON SLAVE") {
		t.Errorf("event difference: %+v", e)
	}

	src.ExecT(t, "SELECT NEXTVAL(obj.s)")
	tgt.ExecT(t, "CREATE OR REPLACE VIEW obj.v AS SELECT id, v * 3 AS w FROM obj.t", "DROP PROCEDURE obj.p",
		"DROP FUNCTION obj.f", "CREATE FUNCTION obj.f(x INT) RETURNS INT DETERMINISTIC RETURN x + 2",
		"CREATE VIEW obj.extra AS SELECT 1 AS one")
	rep = run(false)
	var differing []string
	for _, o := range rep.DifferingObjects() {
		differing = append(differing, o.Label()+" "+string(o.Status))
	}
	wantDiff := []string{"sequence obj.s different", "view obj.extra only-on-target", "view obj.v different",
		"function obj.f different", "procedure obj.p missing-on-target"}
	if !reflect.DeepEqual(differing, wantDiff) || len(rep.Differing()) != 0 {
		t.Fatalf("differing objects: %q\n%s", differing, rep)
	}
	if s := rep.Object(KindSequence, "obj", "s"); s.Source != "next_not_cached_value=5100" || s.Target != "next_not_cached_value=100" {
		t.Errorf("sequence difference: %+v", s)
	}
	text := rep.String()
	for _, w := range []string{"view obj.v: different", "`id` AS `id`,`obj`.`t`.`v` * 2 AS", "procedure obj.p: missing-on-target",
		"deferred-to-cutover"} {
		if !strings.Contains(text, w) {
			t.Errorf("the report lacks %q:\n%s", w, text)
		}
	}
}

// TestVerifyObjectsUnreadable: an object the account may not read is
// reported as an error naming it, not as equal or missing.
func TestVerifyObjectsUnreadable(t *testing.T) {
	p := startPair(t) // the reader has SELECT only: no SHOW VIEW
	p.both(t, "CREATE DATABASE hid", "CREATE TABLE hid.t (id INT PRIMARY KEY)", "CREATE VIEW hid.v AS SELECT id FROM hid.t")
	rep := p.run(t, Config{Scope: ScopeObjects}, "hid")
	v := rep.Object(KindView, "hid", "v")
	if v == nil || v.Status != ObjectError || !strings.Contains(v.Error, "SHOW VIEW") || rep.Equal() || len(rep.Tables) != 0 {
		t.Fatalf("unreadable view: %+v\n%s", v, rep)
	}
}

// TestVerifyTriggerOrder: two triggers of the same table, timing and
// event that fire in the other order on the target differ, though SHOW
// CREATE TRIGGER shows each the same.
func TestVerifyTriggerOrder(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	tgt := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srcDB, tgtDB := verifierPool(t, src, "trg"), verifierPool(t, tgt, "trg")
	first := "CREATE TRIGGER trg.a BEFORE INSERT ON trg.t FOR EACH ROW SET NEW.v = NEW.v * 2"
	second := "CREATE TRIGGER trg.b BEFORE INSERT ON trg.t FOR EACH ROW SET NEW.v = NEW.v + 1"
	for _, s := range []*sandbox.Server{src, tgt} {
		s.ExecT(t, "CREATE DATABASE trg", "CREATE TABLE trg.t (id INT PRIMARY KEY, v INT)")
	}
	src.ExecT(t, first, second)
	tgt.ExecT(t, second, first)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Source: srcDB, Target: tgtDB, Rules: filter.Rules{Databases: []string{"trg"}}, Scope: ScopeObjects})
	if err != nil {
		t.Fatal(err)
	}
	a, b := rep.Object(KindTrigger, "trg", "a"), rep.Object(KindTrigger, "trg", "b")
	if a == nil || b == nil || a.Status != ObjectDifferent || b.Status != ObjectDifferent ||
		a.Source != "-- action_order: 1" || a.Target != "-- action_order: 2" {
		t.Fatalf("triggers in the other order:\n%s", rep)
	}
}
