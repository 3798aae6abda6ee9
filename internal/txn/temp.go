package txn

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/sqllex"
)

// Temporary tables. A source session whose binlog_format is MIXED or
// STATEMENT logs CREATE TEMPORARY TABLE and the statements on its
// temporary tables; in ROW format MariaDB logs none of them. A temporary
// table belongs to the source session that made it; data reaches a
// replicated table from it only through a later statement, which a ROW
// session logs as rows, and a MIXED or STATEMENT one may log as a
// statement that reads it (INSERT INTO t SELECT ... FROM tmp). So the
// statements on a session's temporary tables reach the applier marked with
// the session (Statement.Temp): it runs them on a target connection of that
// session's own, where such a statement on real tables then runs too
// (package apply), as MariaDB's replica keeps the tables per source
// session.
//
// What binlane must not do is run them against the target's real tables:
// a temporary table may have the name of a real one, and ALTER TABLE t or
// TRUNCATE t on it is logged without the word TEMPORARY. So the names
// each source session (server id, thread id) holds are kept: a statement
// naming only those is the session's; DML naming them together with other
// tables runs on the session's connection; any other statement naming
// them together with other tables is refused, and a name that matches one
// only when letter case is ignored is refused too (whether the source
// folds case is its setting). A session's names are forgotten when it
// drops them (the source logs a DROP TEMPORARY TABLE for those still open
// when the session ends) and when the source restarts (its thread ids
// start again).
//
// The names are saved with the position (see encode): a restart or a
// reconnect knows the tables the sessions held where it resumes (the
// tables themselves went with the previous run's connections).

// session is a source session: its server id and thread id.
type session struct{ server, thread uint32 }

// tempTables holds the temporary tables of each source session.
type tempTables map[session]map[TableName]struct{}

// observe reads a statement of session s (dec reads its identifiers; nil:
// UTF-8). skip reports a statement about the session's temporary tables
// only, which the target runs on the session's own connection (st.Temp
// says how), never on its real tables; err a statement that names one
// together with another table, or a statement other than DML that reads
// one (see reads). A DML statement that writes real tables and reads
// temporary ones sets st.Temp with the temporary tables it reads.
func (tt tempTables) observe(s session, st *Statement, dec decoder) (skip bool, err error) {
	toks := tokenize(st.Query, st.lexMode(), 0)
	switch {
	case isCreateTemporary(toks):
		if !st.Unknown {
			for _, n := range st.Tables {
				tt.add(s, n)
			}
		}
		st.Temp = tt.createTemp(s, st, toks, dec)
		return true, nil
	case len(toks) > 1 && toks[0].Text == "DROP" && !toks[1].Quoted && toks[1].Text == "TEMPORARY":
		// DROP TEMPORARY TABLE never drops a real table.
		for _, n := range st.Tables {
			tt.remove(s, n)
		}
		st.Temp = &TempUse{Only: true, Drop: true, Writes: st.Tables}
		return true, nil
	}
	names := tt[s]
	if len(names) == 0 || st.Unknown || len(st.Tables) == 0 {
		return false, nil
	}
	var temp, other []TableName
	named := st.Tables
	if st.DML {
		// Row changes decide by what they write: INSERT INTO tmp SELECT
		// ... FROM real changes the temporary table only.
		named = st.Writes
	}
	for _, n := range named {
		switch tt.kind(s, n) {
		case isTemp:
			temp = append(temp, n)
		case caseOnly:
			return false, fmt.Errorf("%s: the source session (thread %d) has a temporary table whose name differs from %s only in letter case; "+
				"binlane cannot tell which one the statement changed", abbreviate(redact.Statement(st.Query), 200), s.thread, n)
		default:
			other = append(other, n)
		}
	}
	if len(temp) == 0 {
		reads := tt.reads(s, st, dec)
		switch {
		case len(reads) > 0 && st.DML:
			// Runs on the session's connection, where its temporary tables
			// are (the applier stops if they are not).
			st.Temp = &TempUse{Reads: reads}
		case len(reads) > 0:
			return false, fmt.Errorf("%s: reads temporary table %s of the source session (thread %d), whose rows and definition the target "+
				"does not have for this statement (binlog_format must be ROW for every source session)",
				abbreviate(redact.Statement(st.Query), 200), reads[0], s.thread)
		}
		return false, nil
	}
	if st.Renames() {
		if err := tt.rename(s, st); err != nil {
			return false, err
		}
		// The target's copies do not follow renames: the new names are
		// not rebuilt (a later use of them on real tables stops).
		st.Temp = &TempUse{Only: true, Writes: st.Tables}
		return true, nil
	}
	if len(other) > 0 && st.DML {
		// UPDATE t JOIN tmp ...: it may write both; it runs where the
		// temporary tables are, which must all be there.
		st.Temp = &TempUse{Reads: tt.reads(s, st, dec)}
		return false, nil
	}
	if len(other) > 0 {
		return false, fmt.Errorf("%s: names temporary table %s of the source session (thread %d) together with %s, which the target cannot run "+
			"(binlog_format must be ROW for every source session)", abbreviate(redact.Statement(st.Query), 200), temp[0], s.thread, other[0])
	}
	st.Temp = tt.onlyTemp(s, st, temp)
	return true, nil
}

// onlyTemp is the use of a statement that changes session s's temporary
// tables temp only: what else it names, it reads.
func (tt tempTables) onlyTemp(s session, st *Statement, temp []TableName) *TempUse {
	use := &TempUse{Only: true, Writes: temp, Rebuild: true}
	for _, n := range st.Tables {
		switch {
		case slices.Contains(temp, n):
		case tt.kind(s, n) == isTemp:
			use.Reads = append(use.Reads, n)
		default:
			use.RealReads = append(use.RealReads, n)
		}
	}
	return use
}

// createTemp is the use of CREATE TEMPORARY TABLE. One that takes its
// rows from a query (... SELECT) reads the query's tables: the session's
// temporary ones must be on the target, the real ones replicated (see
// Assembler.tempStatement); one that copies a definition (... LIKE) is not
// rebuilt.
func (tt tempTables) createTemp(s session, st *Statement, toks []token, dec decoder) *TempUse {
	use := &TempUse{Only: true, Create: true, Writes: st.Tables, Rebuild: !st.Unknown}
	for i, t := range toks {
		// Calls in the definition (a DEFAULT (UUID())) too: see tempStatement.
		if i+1 < len(toks) && toks[i+1].Text == "(" && !toks[i+1].Quoted && t.Kind == sqllex.Word {
			st.Calls = append(st.Calls, TableName{Schema: st.Schema, Table: t.Raw})
		}
	}
	for i, t := range toks {
		if t.Quoted {
			continue
		}
		switch t.Text {
		case "LIKE":
			use.Rebuild = false
			return use
		case "SELECT", "WITH":
			refs := queryRefs(toks[i:], st.Schema, dec)
			if refs.unknown {
				use.Rebuild = false
			}
			st.Calls = append(st.Calls, refs.calls...)
			for _, n := range refs.reads {
				if tt.kind(s, n) == isTemp {
					use.Reads = append(use.Reads, n)
				} else {
					use.RealReads = append(use.RealReads, n)
				}
			}
			return use
		}
	}
	return use
}

// reads finds the names of the session's temporary tables anywhere in a
// statement that does not change them: CREATE TABLE c SELECT ... FROM t or
// CREATE TABLE c LIKE t, logged as statements, would read the target's real
// t where the source read its temporary t. Any identifier that is such a
// name, as [schema.]name or only when case is ignored, counts: a column of
// that name too (fail closed).
func (tt tempTables) reads(s session, st *Statement, dec decoder) []TableName {
	toks := tokenize(st.Query, st.lexMode(), 0)
	p := &ddlParser{dec: dec}
	var out []TableName
	for i, t := range toks {
		if !t.Quoted && (t.Raw == "" || !sqllex.IsWordByte(t.Raw[0])) {
			continue // punctuation, string literals
		}
		n := TableName{Schema: st.Schema, Table: p.ident(t.Raw)}
		if i >= 2 && toks[i-1].Text == "." && !toks[i-1].Quoted {
			n.Schema = p.ident(toks[i-2].Raw)
		}
		if tt.kind(s, n) != notTemp && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// rename follows RENAME TABLE a TO b[, ...] and ALTER TABLE a RENAME b
// when a is temporary: b is then, and a is gone. A statement renaming
// temporary and real tables together is refused.
func (tt tempTables) rename(s session, st *Statement) error {
	pairs := st.Tables
	if len(pairs) > 2 && firstWord(st.Query, st.lexMode()) != "RENAME" {
		pairs = []TableName{pairs[0], pairs[len(pairs)-1]} // ALTER: first name, last RENAME
	}
	if len(pairs)%2 != 0 {
		return fmt.Errorf("%s: renames a temporary table of the source session (thread %d) in a form binlane does not read", abbreviate(redact.Statement(st.Query), 200), s.thread)
	}
	for i := 0; i < len(pairs); i += 2 {
		if tt.kind(s, pairs[i]) != isTemp {
			return fmt.Errorf("%s: renames temporary and other tables of the source session (thread %d) in one statement, which the target cannot run",
				abbreviate(redact.Statement(st.Query), 200), s.thread)
		}
		tt.remove(s, pairs[i])
		tt.add(s, pairs[i+1])
	}
	return nil
}

// forget drops every session's names: the source restarted.
func (tt tempTables) forget() { clear(tt) }

type tempKind uint8

const (
	notTemp tempKind = iota
	isTemp
	caseOnly // equal to a temporary table's name only when case is ignored
)

func (tt tempTables) kind(s session, n TableName) tempKind {
	names := tt[s]
	if n.Table == "" || len(names) == 0 {
		return notTemp
	}
	if _, ok := names[n]; ok {
		return isTemp
	}
	for m := range names {
		if strings.EqualFold(m.Schema, n.Schema) && strings.EqualFold(m.Table, n.Table) {
			return caseOnly
		}
	}
	return notTemp
}

func (tt tempTables) add(s session, n TableName) {
	if n.Table == "" {
		return
	}
	if tt[s] == nil {
		tt[s] = map[TableName]struct{}{}
	}
	tt[s][n] = struct{}{}
}

func (tt tempTables) remove(s session, n TableName) {
	delete(tt[s], n)
	if len(tt[s]) == 0 {
		delete(tt, s)
	}
}

// isCreateTemporary recognizes CREATE [OR REPLACE] TEMPORARY ...
func isCreateTemporary(toks []token) bool {
	if len(toks) < 2 || toks[0].Text != "CREATE" {
		return false
	}
	i := 1
	if len(toks) > 3 && toks[1].Text == "OR" && toks[2].Text == "REPLACE" {
		i = 3
	}
	return !toks[i].Quoted && toks[i].Text == "TEMPORARY"
}

func firstWord(q string, m sqllex.Mode) string {
	if toks := tokenize(q, m, 1); len(toks) > 0 {
		return toks[0].Text
	}
	return ""
}

// The names are saved with the stream's position (in the same target
// transaction), so that a restart or a reconnect, which start from the
// saved position, know the temporary tables the source sessions held
// there. A transaction that changed them carries the whole encoded set
// (Txn.TempTables); Config.TempTables gives the saved one back.

type savedSession struct {
	Server uint32      `json:"server"`
	Thread uint32      `json:"thread"`
	Tables [][2]string `json:"tables"` // schema, table
}

// encode writes the names in a stable order ("" when there are none).
func (tt tempTables) encode() string {
	if len(tt) == 0 {
		return ""
	}
	out := make([]savedSession, 0, len(tt))
	for s, names := range tt {
		ss := savedSession{Server: s.server, Thread: s.thread}
		for n := range names {
			ss.Tables = append(ss.Tables, [2]string{n.Schema, n.Table})
		}
		slices.SortFunc(ss.Tables, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		out = append(out, ss)
	}
	slices.SortFunc(out, func(a, b savedSession) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Thread, b.Thread))
	})
	b, _ := json.Marshal(out) // strings and numbers only: cannot fail
	return string(b)
}

// decodeTempTables reads what encode wrote.
func decodeTempTables(s string) (tempTables, error) {
	tt := tempTables{}
	if s == "" {
		return tt, nil
	}
	var in []savedSession
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, fmt.Errorf("the saved temporary tables of the source's sessions cannot be read: %w", err)
	}
	for _, ss := range in {
		for _, n := range ss.Tables {
			tt.add(session{ss.Server, ss.Thread}, TableName{Schema: n[0], Table: n[1]})
		}
	}
	return tt, nil
}
