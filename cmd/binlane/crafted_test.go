package main

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlquote"
)

// crafted makes a name of prefix and every character that ends, escapes
// or alters a quoted name or value in one sql_mode or another: quotes of
// the three kinds, a backslash, LIKE's % and _, a statement's ;, spaces
// and non-ASCII.
func crafted(prefix string) string { return prefix + "'`\\ %_;\"é" }

// craftedSchema is what TestCraftedNames creates on the source: a
// database, a table with such column names, a view, a function, a
// procedure (made under NO_BACKSLASH_ESCAPES and ANSI_QUOTES), a trigger
// and an event, all with crafted names and a crafted definer, and rows
// with values that need every escape.
type craftedSchema struct {
	db, tbl, log, id, val, bin, view, fn, proc, trig, event, user, host string
}

func newCraftedSchema() craftedSchema {
	return craftedSchema{db: crafted("q"), tbl: crafted("t"), log: crafted("l"), id: crafted("i"), val: crafted("v"),
		bin: crafted("b"), view: crafted("w"), fn: crafted("f"), proc: crafted("p"), trig: crafted("r"), event: crafted("e"),
		// Not in a definer's host name: a space (the server drops it) or a
		// backslash (the server matches a definer's host as a pattern, in
		// which a backslash escapes the next byte, and finds no account).
		user: crafted("u"), host: "h'`;\"é%"}
}

func (c craftedSchema) q(name string) string { return sqlquote.Qualified(c.db, name) }

// cols is the column list of the table's first columns.
func (c craftedSchema) cols() string {
	return " (" + sqlquote.Name(c.id) + ", " + sqlquote.Name(c.val) + ", " + sqlquote.Name(c.bin) + ")"
}

// account creates the definer on s, with what its objects do: on the
// pattern q%, as a grant's database name is a pattern (in which the
// crafted name's backslash would escape the space after it).
func (c craftedSchema) account(t *testing.T, s *sandbox.Server) {
	t.Helper()
	acct := sqlquote.Account(c.user, c.host)
	s.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE USER "+acct, "GRANT ALL PRIVILEGES ON `q%`.* TO "+acct)
}

func (c craftedSchema) create(t *testing.T, s *sandbox.Server) {
	t.Helper()
	n, def := sqlquote.Name, "DEFINER = "+sqlquote.Account(c.user, c.host)
	s.ExecT(t, "CREATE DATABASE "+n(c.db),
		"CREATE TABLE "+c.q(c.tbl)+" ("+n(c.id)+" INT PRIMARY KEY, "+n(c.val)+" VARCHAR(100), "+n(c.bin)+" VARBINARY(100))",
		"CREATE TABLE "+c.q(c.log)+" ("+n(c.id)+" INT AUTO_INCREMENT PRIMARY KEY, "+n(c.val)+" VARCHAR(100))",
		"CREATE "+def+" FUNCTION "+c.q(c.fn)+"(x INT) RETURNS INT DETERMINISTIC RETURN x + 1",
		"CREATE "+def+" VIEW "+c.q(c.view)+" AS SELECT "+n(c.id)+", "+c.q(c.fn)+"("+n(c.id)+") AS "+n(c.val+"+1")+
			", "+n(c.val)+" FROM "+c.q(c.tbl)+" WHERE "+n(c.val)+" <> "+sqlquote.String("it's"),
		"SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES'",
		"CREATE "+def+" PROCEDURE "+c.q(c.proc)+"(n INT) INSERT INTO "+c.q(c.tbl)+c.cols()+" VALUES (n, 'a\\b \"q\"', NULL)",
		"CREATE "+def+" TRIGGER "+c.q(c.trig)+" AFTER INSERT ON "+c.q(c.tbl)+" FOR EACH ROW INSERT INTO "+c.q(c.log)+
			" ("+n(c.val)+") VALUES (CONCAT('in\\', NEW."+n(c.val)+"))",
		"SET SESSION sql_mode = DEFAULT",
		"CREATE "+def+" EVENT "+c.q(c.event)+" ON SCHEDULE EVERY 1 HOUR STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE DO DELETE FROM "+
			c.q(c.log))
	c.write(t, s, 1)
}

// write changes rows on s: values that need every escape, an update, a
// delete and a call of the procedure.
func (c craftedSchema) write(t *testing.T, s *sandbox.Server, round int) {
	t.Helper()
	n := sqlquote.Name
	base := round * 100
	var stmts []string
	for i, v := range []string{"it's", `a\b`, "nul\x00", "50% ;", "grüße", `"dq"`, "back`tick", "\\'"} {
		stmts = append(stmts, "INSERT INTO "+c.q(c.tbl)+c.cols()+" VALUES ("+strconv.Itoa(base+i)+", "+sqlquote.String(v)+", "+
			string(sqlquote.AppendHex(nil, "binary", v+"\xff\x00\\'"))+")")
	}
	stmts = append(stmts, "UPDATE "+c.q(c.tbl)+" SET "+n(c.val)+" = CONCAT("+n(c.val)+", "+sqlquote.String("'\\")+") WHERE "+
		n(c.id)+" = "+strconv.Itoa(base+1),
		"DELETE FROM "+c.q(c.tbl)+" WHERE "+n(c.id)+" = "+strconv.Itoa(base+2),
		"CALL "+c.q(c.proc)+"("+strconv.Itoa(base+50)+")")
	s.ExecT(t, stmts...)
}

// craftedObjects are the objects' definitions as information_schema shows
// them on a server: what a copy and a cut-over must reproduce.
var craftedObjects = []string{
	`SELECT TABLE_NAME, VIEW_DEFINITION, DEFINER, SECURITY_TYPE, CHARACTER_SET_CLIENT, COLLATION_CONNECTION
		FROM information_schema.VIEWS WHERE TABLE_SCHEMA LIKE 'q%' ORDER BY 1`,
	`SELECT ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION, SQL_MODE, DEFINER, CHARACTER_SET_CLIENT, COLLATION_CONNECTION
		FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA LIKE 'q%' ORDER BY 1`,
	`SELECT EVENT_NAME, DEFINER, TIME_ZONE, EVENT_DEFINITION, SQL_MODE, STARTS FROM information_schema.EVENTS
		WHERE EVENT_SCHEMA LIKE 'q%' ORDER BY 1`,
	`SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE FROM information_schema.COLUMNS WHERE TABLE_SCHEMA LIKE 'q%' ORDER BY 1, 2`,
}

var craftedTriggers = `SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_STATEMENT, SQL_MODE, DEFINER
	FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA LIKE 'q%' ORDER BY 1`

// TestCraftedNames copies, replicates, verifies and cuts over a database
// whose every name — database, table, columns, view, function,
// procedure, trigger, event, definer — holds quotes, backticks, a
// backslash, % and _, ;, spaces and non-ASCII: each must come out as one
// name, never as SQL, and the target must end equal to the source, row by
// row and object by object.
//
// It runs twice: with the servers' default sql_mode, and with a global
// sql_mode of NO_BACKSLASH_ESCAPES and ANSI_QUOTES, which every session
// that does not set its own starts with.
func TestCraftedNames(t *testing.T) {
	for _, mode := range []string{"", "NO_BACKSLASH_ESCAPES,ANSI_QUOTES,STRICT_TRANS_TABLES"} {
		t.Run("sql_mode="+mode, func(t *testing.T) { craftedNames(t, mode) })
	}
}

func craftedNames(t *testing.T, mode string) {
	a, b := cutoverServers(t)
	if mode != "" {
		lit, err := sqlquote.Setting(mode)
		if err != nil {
			t.Fatal(err)
		}
		a.ExecT(t, "SET GLOBAL sql_mode = "+lit)
		b.ExecT(t, "SET GLOBAL sql_mode = "+lit)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newCraftedSchema()
	c.account(t, a)
	c.account(t, b)
	c.create(t, a)
	aDB, bDB := a.OpenT(t, ""), b.OpenT(t, "")
	// The grants' database pattern q% covers the crafted database (whose
	// own name, % and _ in it, would be a pattern too).
	srcURL, dstURL := binlaneURL(t, a, "q%"), binlaneTargetURL(t, b, "q%")
	aCut, bCut := cutoverURLs(t, a, b, "q%")

	_, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "crafted", "--databases", "q*",
		"--heartbeat", "500ms")
	defer stop()
	waitStreamReady(t, bDB, "crafted", done)
	// Replicated: rows, a DDL with a crafted column and a view redefined.
	c.write(t, a, 2)
	n := sqlquote.Name
	a.ExecT(t, "ALTER TABLE "+c.q(c.tbl)+" ADD COLUMN "+n(crafted("n"))+" INT DEFAULT 7",
		"CREATE OR REPLACE DEFINER = "+sqlquote.Account(c.user, c.host)+" VIEW "+c.q(c.view)+" AS SELECT "+n(c.id)+" AS "+
			n(crafted("x"))+" FROM "+c.q(c.tbl))
	c.write(t, a, 3)
	waitCaughtUp(t, aDB, bDB, "crafted", done)
	verifyEqual(t, aDB, bDB, "q*")
	sameLines(t, aDB, bDB, craftedObjects...)

	out, code := runCutoverCmd(t, ctx, "--source", aCut, "--target", bCut, "--stream", "crafted",
		"--databases", "q*", "--json", "--timeout", "30s")
	if code != 0 {
		t.Fatalf("cutover exited %d: %s", code, out)
	}
	if r := parseCutover(t, out); !r.Verified || r.Verify != "equal" {
		t.Fatalf("cutover result: %+v", r)
	}
	// B is the primary now, with the source's trigger; compared as the
	// source.
	verifyEqual(t, bDB, aDB, "q*")
	sameLines(t, aDB, bDB, append(craftedObjects, craftedTriggers)...)
}

// sameLines runs each query on both servers and compares the rows.
func sameLines(t *testing.T, a, b *sql.DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		x, y := sandbox.QueryLinesT(t, a, q), sandbox.QueryLinesT(t, b, q)
		if strings.Join(x, "\n") != strings.Join(y, "\n") {
			t.Errorf("%s\nsource:\n%s\ntarget:\n%s", q, strings.Join(x, "\n"), strings.Join(y, "\n"))
		}
		if len(x) == 0 {
			t.Errorf("%s: no rows", q)
		}
	}
}
