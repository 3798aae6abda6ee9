package txn

import (
	"strings"
)

type stmtKind uint8

const (
	stmtDDL     stmtKind = iota
	stmtDML              // statement-based row changes: refused
	stmtAccount          // accounts, privileges, plugins, FLUSH: not replicated
)

// classify sorts a statement by its leading keywords.
func classify(query string) stmtKind {
	w := keywords(query, 3)
	if len(w) == 0 {
		return stmtDDL
	}
	switch w[0] {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "CALL", "DO", "HANDLER", "WITH":
		return stmtDML
	case "GRANT", "REVOKE", "FLUSH", "INSTALL", "UNINSTALL", "RESET", "PURGE", "KILL", "SHUTDOWN":
		return stmtAccount
	case "SET":
		if len(w) > 1 && (w[1] == "PASSWORD" || w[1] == "DEFAULT" || w[1] == "ROLE") {
			return stmtAccount
		}
		return stmtDML
	case "CREATE", "DROP", "ALTER", "RENAME":
		for _, x := range w[1:] {
			if x == "USER" || x == "ROLE" || x == "SERVER" {
				return stmtAccount
			}
		}
	}
	return stmtDDL
}

// token is a lexical token of a statement: an upper-cased keyword or
// bare identifier, a quoted identifier (quoted set), or one punctuation
// character.
type token struct {
	text   string // upper-cased for bare words
	raw    string // as written (unquoted)
	quoted bool
}

// tokenize splits a statement, dropping comments (but keeping the body of
// executable /*! ... */ comments) and string literals' contents.
func tokenize(q string, limit int) []token {
	var out []token
	for i := 0; i < len(q) && (limit <= 0 || len(out) < limit); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(q[i:], "/*!") || strings.HasPrefix(q[i:], "/*M!"):
			i += strings.Index(q[i:], "!") + 1
			for i < len(q) && q[i] >= '0' && q[i] <= '9' {
				i++
			}
		case strings.HasPrefix(q[i:], "*/"):
			i += 2 // end of an executable comment
		case strings.HasPrefix(q[i:], "/*"):
			end := strings.Index(q[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += end + 4
		case c == '#' || strings.HasPrefix(q[i:], "-- "):
			end := strings.IndexByte(q[i:], '\n')
			if end < 0 {
				return out
			}
			i += end + 1
		case c == '`':
			name, n := quoted(q[i:], '`')
			out = append(out, token{text: name, raw: name, quoted: true})
			i += n
		case c == '\'' || c == '"':
			_, n := quoted(q[i:], c)
			out = append(out, token{text: "'"})
			i += n
		case isIdentByte(c):
			j := i
			for j < len(q) && isIdentByte(q[j]) {
				j++
			}
			out = append(out, token{text: strings.ToUpper(q[i:j]), raw: q[i:j]})
			i = j
		default:
			out = append(out, token{text: string(c), raw: string(c)})
			i++
		}
	}
	return out
}

// quoted reads a quoted string starting at s[0] (doubled quotes escape;
// backslash escapes in string literals) and returns its content and size.
func quoted(s string, q byte) (string, int) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == '\\' && q != '`' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i++
		case s[i] == q && i+1 < len(s) && s[i+1] == q:
			b.WriteByte(q)
			i++
		case s[i] == q:
			return b.String(), i + 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), len(s)
}

func isIdentByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}

// keywords returns up to n leading tokens, upper-cased.
func keywords(q string, n int) []string {
	toks := tokenize(q, n)
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = t.text
	}
	return out
}

// ddlTables names the tables a DDL statement touches ("" table for a
// whole schema). unknown is set when the statement's form is not one we
// parse; callers then decide by the default schema.
func ddlTables(q, defSchema string) (names []TableName, unknown bool) {
	p := &ddlParser{toks: tokenize(q, 0), def: defSchema}
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
}

func (p *ddlParser) peek() token {
	if p.pos >= len(p.toks) {
		return token{}
	}
	return p.toks[p.pos]
}

func (p *ddlParser) next() string {
	t := p.peek()
	p.pos++
	if t.quoted {
		return "`" // a quoted identifier never matches a keyword
	}
	return t.text
}

func (p *ddlParser) skipWords(words ...string) {
	for {
		t := p.peek()
		if t.quoted || !contains(words, t.text) {
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
	if !a.quoted && (a.text == "" || a.text == "," || a.text == "(" || a.text == ";") {
		return TableName{}, false
	}
	p.pos++
	if t := p.peek(); t.text == "." && !t.quoted {
		p.pos++
		b := p.peek()
		p.pos++
		return TableName{Schema: a.raw, Table: b.raw}, true
	}
	return TableName{Schema: p.def, Table: a.raw}, true
}

func (p *ddlParser) nameList() []TableName {
	var out []TableName
	for {
		n, ok := p.name()
		if !ok {
			return out
		}
		out = append(out, n)
		if p.peek().text != "," {
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
		if p.peek().text != "," {
			return out
		}
		p.pos++
	}
}

func (p *ddlParser) schemaName() []TableName {
	p.skipWords("IF", "NOT", "EXISTS")
	t := p.peek()
	if t.text == "" {
		return []TableName{{Schema: p.def}}
	}
	return []TableName{{Schema: t.raw}}
}

func (p *ddlParser) create() ([]TableName, bool) {
	// Skip view/trigger attributes such as ALGORITHM=x DEFINER=u@h.
	for p.peek().text == "ALGORITHM" || p.peek().text == "DEFINER" || p.peek().text == "SQL" {
		for p.peek().text != "" && p.peek().text != "VIEW" && p.peek().text != "TRIGGER" &&
			p.peek().text != "PROCEDURE" && p.peek().text != "FUNCTION" && p.peek().text != "EVENT" {
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
		for p.peek().text != "" && p.peek().text != "ON" {
			p.pos++
		}
		p.pos++
		n, ok := p.name()
		if ok {
			return []TableName{n}, false
		}
	}
	return nil, true
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
			if t := p.peek(); t.text != "COLUMN" && t.text != "INDEX" && t.text != "KEY" {
				if m, ok := p.name(); ok {
					out = append(out, m)
				}
			}
		}
	}
	return out
}
