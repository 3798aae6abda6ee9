package txn

import (
	"errors"
	"fmt"

	"github.com/binlane/binlane/internal/redact"
)

// ALTER TABLE ... ADD COLUMN fills the table's existing rows with the new
// column's default. The statement is logged, not the values, so a default
// the target computes differently gives the target other values: UUID(),
// SYSDATE(), the session's user or connection id, a server's variables.
// MariaDB's own replica re-runs the statement too; binlane stops instead.
// (NOW() and CURRENT_TIMESTAMP run at the event's timestamp, DATABASE() in
// its default database, and RAND() with the seeds the source logged before
// the statement: those are the source's.)

// ErrNondeterministicFill refuses such an ALTER.
var ErrNondeterministicFill = errors.New("ALTER TABLE adds a column whose DEFAULT is computed for every existing row by a function " +
	"the target evaluates differently, so the target would store other values. To go on: add the " +
	"column on the target by hand with the source's values and run replicate with --skip-gtid of this transaction; " +
	"next time add such a column without that default, fill it with an UPDATE from a ROW session, then ALTER COLUMN ... SET DEFAULT")

// sessionCalls are the functions whose value differs between the source's
// session and the target's.
var sessionCalls = map[string]bool{
	"UUID": true, "UUID_SHORT": true, "SYS_GUID": true, "SYSDATE": true, "CONNECTION_ID": true,
	"USER": true, "SESSION_USER": true, "SYSTEM_USER": true, "CURRENT_USER": true, "CURRENT_ROLE": true,
	"NEXTVAL": true, "LASTVAL": true, "SETVAL": true, "RANDOM_BYTES": true, "VERSION": true,
}

// refuseNondeterministicFill stops at ALTER TABLE ... ADD [COLUMN] whose
// DEFAULT calls one of sessionCalls, reads a @@variable or a sequence's
// NEXT VALUE, or calls RAND() without the seeds the source logs with it.
// toks are the statement's tokens.
func refuseNondeterministicFill(st *Statement, toks []token) error {
	if len(toks) < 2 || toks[0].Quoted || toks[0].Text != "ALTER" {
		return nil
	}
	depth, inAdd := 0, false
	for i, t := range toks {
		if t.Quoted {
			continue
		}
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case depth == 0 && t.Text == ",":
			inAdd = false // the next clause
		case depth == 0 && t.Text == "ADD":
			inAdd = true
		case inAdd && t.Text == "DEFAULT" && toks[i-1].Text != "SET":
			if call := defaultCall(toks[i+1:], st.Vars.Rand != nil); call != "" {
				return fmt.Errorf("%w: DEFAULT calls %s: %s", ErrNondeterministicFill, call, abbreviate(redact.Statement(st.Query), 200))
			}
		}
	}
	return nil
}

// defaultCall returns the first call in a DEFAULT expression (the tokens up
// to the ',' or ')' that ends its column definition) whose value the
// target computes differently, or "".
func defaultCall(toks []token, seeded bool) string {
	depth := 0
	for i, t := range toks {
		if t.Quoted {
			continue
		}
		next := token{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t.Text == "(":
			depth++
		case t.Text == ")" || t.Text == ",":
			if depth == 0 {
				return ""
			}
			if t.Text == ")" {
				depth--
			}
		case sessionCalls[t.Text] && (next.Text == "(" || t.Text == "CURRENT_USER" || t.Text == "CURRENT_ROLE" || t.Text == "SESSION_USER"):
			return t.Raw + "()"
		case t.Text == "RAND" && next.Text == "(" && !seeded:
			return "RAND() (no seeds logged)"
		case t.Text == "NEXT" && next.Text == "VALUE" || t.Text == "PREVIOUS" && next.Text == "VALUE":
			return t.Raw + " VALUE FOR"
		case t.Text == "@" && next.Text == "@":
			return "@@variable"
		}
	}
	return ""
}
