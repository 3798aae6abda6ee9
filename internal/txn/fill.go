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
	if len(toks) < 2 || toks[0].quoted || toks[0].text != "ALTER" {
		return nil
	}
	depth, inAdd := 0, false
	for i, t := range toks {
		if t.quoted {
			continue
		}
		switch {
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		case depth == 0 && t.text == ",":
			inAdd = false // the next clause
		case depth == 0 && t.text == "ADD":
			inAdd = true
		case inAdd && t.text == "DEFAULT" && toks[i-1].text != "SET":
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
		if t.quoted {
			continue
		}
		next := token{}
		if i+1 < len(toks) {
			next = toks[i+1]
		}
		switch {
		case t.text == "(":
			depth++
		case t.text == ")" || t.text == ",":
			if depth == 0 {
				return ""
			}
			if t.text == ")" {
				depth--
			}
		case sessionCalls[t.text] && (next.text == "(" || t.text == "CURRENT_USER" || t.text == "CURRENT_ROLE" || t.text == "SESSION_USER"):
			return t.raw + "()"
		case t.text == "RAND" && next.text == "(" && !seeded:
			return "RAND() (no seeds logged)"
		case t.text == "NEXT" && next.text == "VALUE" || t.text == "PREVIOUS" && next.text == "VALUE":
			return t.raw + " VALUE FOR"
		case t.text == "@" && next.text == "@":
			return "@@variable"
		}
	}
	return ""
}
