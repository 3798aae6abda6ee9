package txn

import (
	"fmt"
	"log/slog"

	"github.com/binlane/binlane/internal/redact"
)

// Statement-logged DML. A MIXED or STATEMENT session logs row changes as
// the statement that made them; the target runs it as the source ran it
// (package session; the applier runs it alone, in source order, in the
// transaction that saves the position). It reads the target's tables where
// the source read its own, so the result is the source's only when every
// table it reads or writes is replicated: this file decides, before
// anything runs, whether the statement concerns the stream at all, and
// refuses one whose result could differ for a reason the stream itself
// knows (a table it does not replicate, tables it cannot name). What only
// the servers know (triggers on the source, a table being copied) the
// applier checks.

// statementDML decides what to do with a statement-logged DML statement:
// run it (true), skip it (it writes no replicated table), or refuse it.
func (a *Assembler) statementDML(st *Statement, refs dmlRefsResult) (run bool, err error) {
	q := abbreviate(redact.Statement(st.Query), 200)
	if st.Unknown {
		if !a.selected(st) {
			// As for any statement whose tables are unknown, its default
			// database decides (pt-table-checksum's own schema).
			a.logStatement(slog.LevelDebug, "skipping statement for tables not replicated", st.Query)
			return false, nil
		}
		return false, fmt.Errorf("statement-logged DML whose tables binlane cannot name (a stored routine call, a table function, "+
			"a name it cannot read): it runs no statement whose effect it cannot check; make the source session log rows "+
			"(SET SESSION binlog_format=ROW) for such statements: %s", q)
	}
	selected := false
	for _, n := range refs.writes {
		if a.cfg.Rules.Match(n.Schema, n.Table) {
			selected = true
		}
	}
	if !selected {
		a.logStatement(slog.LevelDebug, "skipping statement for tables not replicated", st.Query)
		return false, nil
	}
	for _, n := range st.Tables {
		if !a.cfg.Rules.Match(n.Schema, n.Table) {
			return false, fmt.Errorf("statement-logged DML on replicated tables also reads or writes %s, which the stream does not "+
				"replicate: the target would compute the rows from its own copy of it (or miss it); replicate that table too, "+
				"or make the source session log rows (SET SESSION binlog_format=ROW): %s", n, q)
		}
	}
	return true, nil
}

// union returns the names of a and b, each once, in order.
func union(a, b []TableName) []TableName {
	out := make([]TableName, 0, len(a)+len(b))
	seen := map[TableName]bool{}
	for _, n := range append(append([]TableName(nil), a...), b...) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
