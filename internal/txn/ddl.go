package txn

import (
	"fmt"

	"github.com/binlane/binlane/internal/sqllex"
)

type stmtKind uint8

const (
	stmtDDL     stmtKind = iota
	stmtDML              // statement-based row changes: refused for replicated tables
	stmtAccount          // accounts, privileges, plugins, FLUSH: not replicated
	stmtTrigger          // CREATE/DROP TRIGGER: deferred (the source's trigger effects are in its binlog as rows)
	stmtEvent            // CREATE/ALTER/DROP EVENT: deferred (a replica must not run the source's events)
	stmtSkip             // nothing for the target to do (set after classify)
	stmtTemp             // about a source session's temporary tables only (set after classify; see temp.go)
)

// objectWords are the object kinds of CREATE/ALTER/DROP/RENAME.
var objectWords = map[string]stmtKind{
	"TABLE": stmtDDL, "TABLES": stmtDDL, "VIEW": stmtDDL, "INDEX": stmtDDL, "DATABASE": stmtDDL, "SCHEMA": stmtDDL,
	"SEQUENCE": stmtDDL, "PROCEDURE": stmtDDL, "FUNCTION": stmtDDL, "PACKAGE": stmtDDL, "TABLESPACE": stmtDDL,
	"TRIGGER": stmtTrigger, "EVENT": stmtEvent,
	"USER": stmtAccount, "ROLE": stmtAccount, "SERVER": stmtAccount,
}

// classify sorts a statement by its verb and, for CREATE, ALTER, DROP and
// RENAME, by the kind of object, found past modifiers such as OR REPLACE,
// DEFINER=..., ALGORITHM=..., SQL SECURITY, IF [NOT] EXISTS.
func classify(query string, m sqllex.Mode) stmtKind {
	toks := tokenize(query, m, 24)
	if len(toks) == 0 {
		return stmtDDL
	}
	switch toks[0].Text {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "CALL", "DO", "HANDLER", "WITH", "SELECT":
		// A STATEMENT session logs SELECT f(), DO f() and SET @x := f() of a
		// stored function that writes as SELECT f(): row changes.
		return stmtDML
	case "GRANT", "REVOKE", "FLUSH", "INSTALL", "UNINSTALL", "RESET", "PURGE", "KILL", "SHUTDOWN":
		return stmtAccount
	case "SET":
		if len(toks) > 1 && (toks[1].Text == "PASSWORD" || toks[1].Text == "DEFAULT" || toks[1].Text == "ROLE") {
			return stmtAccount
		}
		return stmtDML
	case "CREATE", "DROP", "ALTER", "RENAME":
		for _, t := range toks[1:] {
			if t.Quoted {
				continue
			}
			if k, ok := objectWords[t.Text]; ok {
				return k
			}
		}
	}
	return stmtDDL
}

// parseSavepoint reads SAVEPOINT x, ROLLBACK [WORK] TO [SAVEPOINT] x and
// RELEASE SAVEPOINT x.
func parseSavepoint(q string, m sqllex.Mode) (ItemKind, string, error) {
	toks := tokenize(q, m, 6)
	name := func() (string, error) {
		if len(toks) == 0 {
			return "", fmt.Errorf("cannot parse %q", q)
		}
		return toks[len(toks)-1].Raw, nil
	}
	if len(toks) < 2 {
		return 0, "", fmt.Errorf("cannot parse %q", q)
	}
	var kind ItemKind
	switch toks[0].Text {
	case "SAVEPOINT":
		kind = ItemSavepoint
	case "ROLLBACK":
		kind = ItemRollbackTo
	case "RELEASE":
		kind = ItemRelease
	default:
		return 0, "", fmt.Errorf("cannot parse %q", q)
	}
	n, err := name()
	return kind, n, err
}

// token is a lexical token of a statement (see sqllex.Item): an
// upper-cased keyword or bare identifier, a quoted identifier (Quoted
// set), a string literal ("'"), or one punctuation character.
type token = sqllex.Item

// tokenize splits a statement, dropping comments (but keeping the body of
// executable /*! ... */ comments) and string literals' contents, and the
// prefix of SET STATEMENT var=value[, ...] FOR <statement>: what such a
// statement is and touches is <statement>'s (the usual way to bound an
// ALTER's lock wait is SET STATEMENT lock_wait_timeout=10 FOR ALTER ...).
func tokenize(q string, m sqllex.Mode, limit int) []token {
	toks := sqllex.Items(q, m, limit)
	if len(toks) < 2 || toks[0].Quoted || toks[0].Text != "SET" || toks[1].Quoted || toks[1].Text != "STATEMENT" {
		return toks
	}
	if limit > 0 {
		toks = sqllex.Items(q, m, 0)
	}
	depth := 0
	for i := 2; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.Quoted:
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
		case t.Text == "FOR" && depth == 0:
			toks = toks[i+1:]
			if limit > 0 && len(toks) > limit {
				toks = toks[:limit]
			}
			return toks
		}
	}
	return toks
}

// keywords returns up to n leading tokens, upper-cased.
func keywords(q string, m sqllex.Mode, n int) []string {
	toks := tokenize(q, m, n)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.Text
	}
	return out
}

// ddlTables names the tables a DDL statement touches ("" table for a
// whole schema). unknown is set when the statement's form is not one we
// parse; callers then decide by the default schema.
func ddlTables(q string, m sqllex.Mode, defSchema string, dec decoder) (names []TableName, unknown bool) {
	p := &ddlParser{toks: tokenize(q, m, 0), def: defSchema, dec: dec}
	defer func() {
		if p.bad {
			names, unknown = nil, true
		}
	}()
	switch p.next() {
	case "CREATE":
		p.skipWords("OR", "REPLACE", "TEMPORARY", "UNIQUE", "FULLTEXT", "SPATIAL", "ONLINE", "OFFLINE")
		return p.create()
	case "ALTER":
		p.skipWords("ONLINE", "OFFLINE", "IGNORE")
		switch p.next() {
		case "TABLE":
			return p.alterTable(), false
		case "DATABASE", "SCHEMA":
			return p.schemaName(), false
		case "EVENT":
			return p.routineSchema(), false
		}
	case "DROP":
		p.skipWords("TEMPORARY")
		switch p.next() {
		case "TABLE", "TABLES", "VIEW":
			p.skipWords("IF", "EXISTS")
			return p.nameList(), false
		case "DATABASE", "SCHEMA":
			p.skipWords("IF", "EXISTS")
			return p.schemaName(), false
		case "TRIGGER", "EVENT", "PROCEDURE", "FUNCTION":
			return p.routineSchema(), false
		case "INDEX":
			p.skipWords("ONLINE", "OFFLINE", "IF", "EXISTS")
			p.next() // index name
			if p.next() == "ON" {
				return p.nameList(), false
			}
		}
	case "RENAME":
		if p.next() == "TABLE" {
			return p.renameList(), false
		}
	case "TRUNCATE":
		p.skipWords("TABLE")
		return p.nameList(), false
	case "OPTIMIZE", "ANALYZE", "REPAIR", "CHECK":
		p.skipWords("NO_WRITE_TO_BINLOG", "LOCAL")
		if p.next() == "TABLE" {
			return p.nameList(), false
		}
	}
	return nil, true
}

type ddlParser struct {
	toks []token
	pos  int
	def  string
	// dec reads identifiers written in the client's character set (nil:
	// UTF-8); bad is set when one could not be read.
	dec decoder
	bad bool
}

// ident converts an identifier of the statement's text to UTF-8.
func (p *ddlParser) ident(raw string) string {
	if p.dec == nil || asciiNames([]TableName{{Table: raw}}) {
		return raw
	}
	s, ok := p.dec(raw)
	if !ok {
		p.bad = true
	}
	return s
}

func (p *ddlParser) peek() token {
	if p.pos >= len(p.toks) {
		return token{}
	}
	return p.toks[p.pos]
}

// peekAt returns the token k places past the next one (k 0: peek).
func (p *ddlParser) peekAt(k int) token {
	if p.pos+k >= len(p.toks) {
		return token{}
	}
	return p.toks[p.pos+k]
}

func (p *ddlParser) next() string {
	t := p.peek()
	p.pos++
	if t.Quoted {
		return "`" // a quoted identifier never matches a keyword
	}
	return t.Text
}

func (p *ddlParser) skipWords(words ...string) {
	for {
		t := p.peek()
		if t.Quoted || !contains(words, t.Text) {
			return
		}
		p.pos++
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// name reads [schema.]name, in the case it was written.
func (p *ddlParser) name() (TableName, bool) {
	a := p.peek()
	if !a.Quoted && (a.Text == "" || a.Text == "," || a.Text == "(" || a.Text == ";") {
		return TableName{}, false
	}
	p.pos++
	if t := p.peek(); t.Text == "." && !t.Quoted {
		p.pos++
		b := p.peek()
		p.pos++
		return TableName{Schema: p.ident(a.Raw), Table: p.ident(b.Raw)}, true
	}
	return TableName{Schema: p.def, Table: p.ident(a.Raw)}, true
}

func (p *ddlParser) nameList() []TableName {
	var out []TableName
	for {
		n, ok := p.name()
		if !ok {
			return out
		}
		out = append(out, n)
		if p.peek().Text != "," {
			return out
		}
		p.pos++
	}
}

func (p *ddlParser) renameList() []TableName {
	var out []TableName
	for {
		a, ok := p.name()
		if !ok || p.next() != "TO" {
			return out
		}
		b, ok := p.name()
		if !ok {
			return out
		}
		out = append(out, a, b)
		if p.peek().Text != "," {
			return out
		}
		p.pos++
	}
}

func (p *ddlParser) schemaName() []TableName {
	p.skipWords("IF", "NOT", "EXISTS")
	t := p.peek()
	// ALTER DATABASE without a name changes the default database.
	if t.Text == "" || !t.Quoted && contains([]string{"DEFAULT", "CHARACTER", "CHARSET", "COLLATE", "COMMENT", "UPGRADE", ";"}, t.Text) {
		return []TableName{{Schema: p.def}}
	}
	return []TableName{{Schema: p.ident(t.Raw)}}
}

func (p *ddlParser) create() ([]TableName, bool) {
	// Skip view/trigger attributes such as ALGORITHM=x DEFINER=u@h.
	for p.peek().Text == "ALGORITHM" || p.peek().Text == "DEFINER" || p.peek().Text == "SQL" {
		for p.peek().Text != "" && p.peek().Text != "VIEW" && p.peek().Text != "TRIGGER" &&
			p.peek().Text != "PROCEDURE" && p.peek().Text != "FUNCTION" && p.peek().Text != "EVENT" {
			p.pos++
		}
	}
	switch p.next() {
	case "TABLE", "VIEW", "SEQUENCE":
		p.skipWords("IF", "NOT", "EXISTS")
		n, ok := p.name()
		if !ok {
			return nil, true
		}
		return []TableName{n}, false
	case "INDEX":
		p.skipWords("IF", "NOT", "EXISTS")
		p.next() // index name
		if p.next() == "ON" {
			return p.nameList(), false
		}
	case "DATABASE", "SCHEMA":
		return p.schemaName(), false
	case "TRIGGER":
		for p.peek().Text != "" && p.peek().Text != "ON" {
			p.pos++
		}
		p.pos++
		n, ok := p.name()
		if ok {
			return []TableName{n}, false
		}
	case "EVENT", "PROCEDURE", "FUNCTION":
		return p.routineSchema(), false
	}
	return nil, true
}

// routineSchema reads [IF [NOT] EXISTS] [schema.]name of a routine, event
// or trigger and returns its schema: what the filter decides by.
func (p *ddlParser) routineSchema() []TableName {
	p.skipWords("IF", "NOT", "EXISTS")
	n, ok := p.name()
	if !ok {
		return []TableName{{Schema: p.def}}
	}
	return []TableName{{Schema: n.Schema}}
}

func (p *ddlParser) alterTable() []TableName {
	n, ok := p.name()
	if !ok {
		return nil
	}
	out := []TableName{n}
	// ALTER TABLE a RENAME [TO|AS] b moves the table: both names matter.
	for p.pos < len(p.toks) {
		if p.next() == "RENAME" {
			p.skipWords("TO", "AS")
			if t := p.peek(); t.Text != "COLUMN" && t.Text != "INDEX" && t.Text != "KEY" {
				if m, ok := p.name(); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}

// lexMode is how the statement's text lexes: in the sql_mode the source
// logged it with (a view's statement under ANSI_QUOTES quotes its names
// with ").
func (s *Statement) lexMode() sqllex.Mode { return sqllex.ModeOf(s.Status.SQLMode) }

// Renames reports whether a statement gives a table another name (RENAME
// TABLE, ALTER TABLE ... RENAME [TO|AS]); renaming a column or an index
// does not count.
func (s *Statement) Renames() bool {
	toks := tokenize(s.Query, s.lexMode(), 0)
	if len(toks) == 0 {
		return false
	}
	switch toks[0].Text {
	case "RENAME":
		return len(toks) > 1 && (toks[1].Text == "TABLE" || toks[1].Text == "TABLES")
	case "ALTER":
		for i := 1; i < len(toks); i++ {
			if toks[i].Quoted || toks[i].Text != "RENAME" {
				continue
			}
			next := ""
			if i+1 < len(toks) && !toks[i+1].Quoted {
				next = toks[i+1].Text
			}
			if next != "COLUMN" && next != "INDEX" && next != "KEY" {
				return true
			}
		}
	}
	return false
}

// ReplacesContents reports whether a statement leaves the tables it names
// with nothing they held before it: TRUNCATE, DROP TABLE, DROP DATABASE,
// CREATE OR REPLACE TABLE.
func (s *Statement) ReplacesContents() bool {
	k := append(keywords(s.Query, s.lexMode(), 4), "", "", "", "")
	switch {
	case k[0] == "TRUNCATE":
		return true
	case k[0] == "DROP":
		return k[1] == "TABLE" || k[1] == "TABLES" || k[1] == "DATABASE" || k[1] == "SCHEMA"
	case k[0] == "CREATE" && k[1] == "OR" && k[2] == "REPLACE":
		return k[3] == "TABLE"
	}
	return false
}
