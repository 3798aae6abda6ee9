package txn

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/sqllex"
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

// namesSelectedSchema reports a statement that qualifies a name with a
// replicated database (SELECT shop.f() from another default database):
// whose tables are unknown, it is not skipped by its default database.
func (a *Assembler) namesSelectedSchema(st *Statement) bool {
	toks := tokenize(st.Query, st.lexMode(), 0)
	for i := 0; i+1 < len(toks); i++ {
		t := toks[i]
		if (t.Kind == sqllex.Word || t.Kind == sqllex.Ident) && toks[i+1].Text == "." && !toks[i+1].Quoted &&
			a.cfg.Rules.MatchSchema(t.Raw) {
			return true
		}
	}
	return false
}

// dmlItem adds a statement-logged DML statement to the transaction, unless
// it concerns no replicated table; load is its LOAD DATA file's place.
func (a *Assembler) dmlItem(st *Statement, refs dmlRefsResult, load *binlog.LoadQuery) error {
	run, err := a.statementDML(st, refs)
	if err != nil || !run {
		return err
	}
	if load != nil {
		data, ok := a.loads[load.FileID]
		if !ok {
			return fmt.Errorf("a LOAD DATA logged as a statement without its file (file id %d) before it in the binlog", load.FileID)
		}
		st.Load = &LoadData{FileID: load.FileID, FileStart: load.FileStart, FileEnd: load.FileEnd, DupHandling: load.DupHandling, Data: data}
		delete(a.loads, load.FileID)
	}
	a.addItem(Item{Kind: ItemStatement, Statement: st})
	a.bytes += len(st.Query)
	return nil
}

// statementDML decides what to do with a statement-logged DML statement:
// run it (true), skip it (it writes no replicated table), or refuse it.
func (a *Assembler) statementDML(st *Statement, refs dmlRefsResult) (run bool, err error) {
	q := abbreviate(redact.Statement(st.Query), 200)
	if st.ErrorCode != 0 && a.selected(st) {
		// The source logs DML with an error only when it changed a table
		// that cannot roll back, in part: the target's transactional
		// tables would undo all of it.
		return false, fmt.Errorf("statement-logged DML that failed on the source with error %d after changing a non-transactional "+
			"table in part: the target's transaction would undo all of it; apply its effect on the target by hand and start after "+
			"this transaction (--skip-gtid), or make the source's tables InnoDB: %s", st.ErrorCode, q)
	}
	if st.Unknown {
		if !a.selected(st) && !a.namesSelectedSchema(st) {
			// As for any statement whose tables are unknown, its default
			// database decides (pt-table-checksum's own schema).
			a.logStatement(slog.LevelDebug, "skipping statement for tables not replicated", st.Query)
			return false, nil
		}
		return false, fmt.Errorf("statement-logged DML whose tables binlane cannot name (a stored routine call, a table function, "+
			"a name it cannot read): it runs no statement whose effect it cannot check; make the source session log rows "+
			"(SET SESSION binlog_format=ROW) for such statements: %s", q)
	}
	if err := unsafeCall(st); err != nil {
		return false, fmt.Errorf("%w: %s", err, q)
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
		if st.Temp != nil && slices.Contains(st.Temp.Reads, n) {
			continue // the session's temporary table (see tempStatement)
		}
		if !a.cfg.Rules.Match(n.Schema, n.Table) {
			return false, fmt.Errorf("statement-logged DML on replicated tables also reads or writes %s, which the stream does not "+
				"replicate: the target would compute the rows from its own copy of it (or miss it); replicate that table too, "+
				"or make the source session log rows (SET SESSION binlog_format=ROW): %s", n, q)
		}
	}
	return true, nil
}

// statementCalls are the functions besides sessionCalls (fill.go) whose
// value a replica computes differently from the source, and which no event
// before the statement carries (NOW() has the event's timestamp, RAND() its
// seeds, LAST_INSERT_ID() its Intvar event): MIXED logs statements that
// call them as rows; a STATEMENT session logs them as statements with a
// warning.
var statementCalls = map[string]bool{
	"LOAD_FILE": true, "FOUND_ROWS": true, "ROW_COUNT": true, "GET_LOCK": true, "RELEASE_LOCK": true, "RELEASE_ALL_LOCKS": true,
	"IS_FREE_LOCK": true, "IS_USED_LOCK": true, "SLEEP": true, "MASTER_POS_WAIT": true, "MASTER_GTID_WAIT": true, "BENCHMARK": true,
}

// unsafeFunction reports a function whose value in a statement-logged DML
// statement would not be the source's. A sequence's NEXTVAL is not one: the
// statement advances the target's copy of the sequence as it advanced the
// source's.
func unsafeFunction(name string) bool {
	switch name {
	case "NEXTVAL", "LASTVAL", "SETVAL":
		return false
	}
	return sessionCalls[name] || statementCalls[name]
}

// UnsafeDefault returns the call in a column's DEFAULT expression (as
// information_schema shows it) that the target would evaluate as its own,
// or "": a statement that inserts rows fills the column on each server.
func UnsafeDefault(expr string) string {
	return defaultCall(tokenize(expr, 0, 0), false)
}

// unsafeCall refuses a statement whose result depends on the server or
// session it runs on: a call of an unsafe function, or a system variable
// (@@server_id, ...), which the target reads as its own.
func unsafeCall(st *Statement) error {
	for _, c := range st.Calls {
		if unsafeFunction(strings.ToUpper(c.Table)) {
			return fmt.Errorf("statement-logged DML calls %s(), whose value on the target would not be the source's "+
				"(a MIXED session logs such statements as rows; this one was logged by a STATEMENT session): make the source "+
				"session log rows (SET SESSION binlog_format=ROW or MIXED)", strings.ToUpper(c.Table))
		}
	}
	toks := tokenize(st.Query, st.lexMode(), 0)
	for _, t := range toks {
		if t.Kind == sqllex.Word && (t.Text == "CURRENT_USER" || t.Text == "CURRENT_ROLE") {
			return fmt.Errorf("statement-logged DML reads %s, which the target would answer with its own account: make the "+
				"source session log rows (SET SESSION binlog_format=ROW or MIXED)", t.Text)
		}
	}
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Kind == sqllex.Punct && toks[i].Text == "@" && toks[i+1].Kind == sqllex.Punct && toks[i+1].Text == "@" {
			return errors.New("statement-logged DML reads a system variable (@@...), whose value on the target would be the " +
				"target's: make the source session log rows (SET SESSION binlog_format=ROW or MIXED)")
		}
	}
	return nil
}

// tempStatement completes the TempUse of a statement about session s's
// temporary tables only, and reports whether the applier needs it. A
// temporary table filled from a table the stream does not replicate is
// not rebuilt; statements on temporary tables of databases the stream does
// not replicate are not run at all (a statement on replicated tables that
// reads one then stops, as it would for a table it does not replicate).
func (a *Assembler) tempStatement(st *Statement) bool {
	u := st.Temp
	if u == nil {
		return false
	}
	if unsafeCall(st) != nil {
		u.Rebuild = false // UUID() into a temporary table: not the source's rows
	}
	for _, n := range u.RealReads {
		if !a.cfg.Rules.Match(n.Schema, n.Table) {
			u.Rebuild = false
		}
	}
	for _, n := range append(append([]TableName(nil), u.Writes...), u.Reads...) {
		if a.cfg.Rules.MatchSchema(n.Schema) {
			return true
		}
	}
	return false
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
