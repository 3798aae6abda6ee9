package txn

import (
	"context"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/filter"
)

// TestUnsafeCall: statement-logged DML whose value the target would compute
// as its own is refused; what the binlog carries (NOW(), RAND(),
// LAST_INSERT_ID(), user variables) is not.
func TestUnsafeCall(t *testing.T) {
	cases := []struct{ q, refuse string }{
		{"INSERT INTO t VALUES (NOW(), RAND(), LAST_INSERT_ID(), @x, CURDATE())", ""},
		{"INSERT INTO t VALUES (UUID())", "UUID()"},
		{"UPDATE t SET a = sysdate()", "SYSDATE()"},
		{"INSERT INTO t SELECT CONNECTION_ID()", "CONNECTION_ID()"},
		{"INSERT INTO t VALUES (CURRENT_USER)", "CURRENT_USER"},
		{"INSERT INTO t VALUES (@@server_id)", "system variable"},
		{"INSERT INTO t VALUES ('UUID()', `uuid`)", ""},
	}
	for _, c := range cases {
		r := dmlRefs(c.q, 0, "d", nil)
		err := unsafeCall(&Statement{Query: c.q, Calls: r.calls})
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: %v", c.q, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v, want a refusal naming %s", c.q, err, c.refuse)
		}
	}
}

// TestStatementDMLInTheStream: with database d replicated, a statement on
// d's tables becomes a statement item to run; one that writes only other
// databases is skipped (pt-table-checksum's); one on d that reads another
// database stops the stream, naming that table and the transaction.
func TestStatementDMLInTheStream(t *testing.T) {
	rules, err := filter.New([]string{"d"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var evs []*binlog.Event
	evs = append(evs, sessionStmt(1, 5, "INSERT INTO t VALUES (1)")...)
	evs = append(evs, sessionStmt(2, 5, "REPLACE INTO e.sums SELECT COUNT(*) FROM d.t")...)
	evs = append(evs, sessionStmt(3, 5, "INSERT INTO t SELECT * FROM e.x")...)
	pipe := NewPipe(1 << 20)
	err = NewAssembler(&script{evs: evs, err: context.Canceled}, Config{Rules: rules}).Run(context.Background(), pipe)
	if err == nil || !strings.Contains(err.Error(), "0-1-3") || !strings.Contains(err.Error(), "`e`.`x`") ||
		!strings.Contains(err.Error(), "does not replicate") {
		t.Fatalf("Run: %v; want the refusal of 0-1-3 naming `e`.`x`", err)
	}
	parts := drain(pipe)
	if len(parts) != 2 {
		t.Fatalf("%d transactions before the refusal, want 2", len(parts))
	}
	if got := itemKinds(parts[0].Body); got != "run" || !parts[0].Body.Items[0].Statement.DML {
		t.Errorf("first transaction: %q, want a DML statement to run", got)
	}
	if got := itemKinds(parts[1].Body); got != "" {
		t.Errorf("second transaction: %q, want nothing (it writes no replicated table)", got)
	}
}

// TestStatementDMLDecisions: what the stream does with a statement-logged
// DML statement, by the replicated databases (d) and its default database.
func TestStatementDMLDecisions(t *testing.T) {
	rules, err := filter.New([]string{"d"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := NewAssembler(nil, Config{Rules: rules})
	cases := []struct {
		schema, q string
		errCode   uint16
		want      string // "run", "skip" or part of the refusal
	}{
		{"d", "UPDATE t SET a = 1", 0, "run"},
		{"e", "UPDATE t SET a = 1", 0, "skip"},
		{"e", "UPDATE d.t, e.u SET d.t.a = e.u.a", 0, "`e`.`u`"},
		{"e", "SELECT f()", 0, "skip"},
		{"e", "SELECT d.f()", 0, "cannot name"}, // a replicated database named: not skipped by the default one
		{"d", "CALL p()", 0, "cannot name"},
		{"d", "INSERT INTO t VALUES (1), (1)", 1062, "error 1062"},
		{"e", "INSERT INTO t VALUES (1), (1)", 1062, "skip"},
	}
	for _, c := range cases {
		r := dmlRefs(c.q, 0, c.schema, nil)
		st := &Statement{Schema: c.schema, Query: c.q, ErrorCode: c.errCode, DML: true, Tables: union(r.writes, r.reads),
			Writes: r.writes, Unknown: r.unknown, Calls: r.calls}
		run, err := a.statementDML(st, r)
		got := "skip"
		switch {
		case err != nil:
			got = err.Error()
		case run:
			got = "run"
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("%s (in %s): %s, want %s", c.q, c.schema, got, c.want)
		}
	}
}
