package txn

import (
	"strings"

	"github.com/binlane/binlane/internal/sqllex"
)

// Tables of a statement-logged DML statement. The target runs such a
// statement on its own tables, so binlane must know every table it reads
// as well as the ones it writes: a table the stream does not replicate, one
// still being copied, or one with triggers on the source makes the
// target's result differ from the source's. dmlRefs reads them from the
// tokens without parsing the statement: every table reference of MariaDB's
// grammar follows FROM, JOIN, USING (DELETE), INTO (INSERT, REPLACE, LOAD
// DATA), the head of UPDATE and DELETE, or a comma in such a list, and
// subqueries repeat the same forms. What it cannot read (a table function,
// a name that is a string, a statement that names no table such as CALL or
// SELECT f()) makes the tables unknown: the caller stops (fail closed).
//
// A name after FROM inside a function's parentheses (EXTRACT(DAY FROM d),
// TRIM(x FROM y)) is not a table; one inside a subquery's parentheses is.
// Identifiers followed by "(" are collected as calls: a stored function's
// reads and writes are not in the statement's text, so the caller checks
// that none of them is one.

// dmlRefs is what dmlRefs found.
type dmlRefsResult struct {
	writes, reads []TableName
	calls         []TableName
	unknown       bool
}

// paren is an open parenthesis: whether table references may follow in it
// (a subquery, or a nested join of a reference list) and whether it opened
// inside a reference list (after its ")" an alias and "," may follow).
type paren struct {
	query, inList bool
}

type refReader struct {
	p       *ddlParser
	res     dmlRefsResult
	expect  bool // a table reference comes next
	head    bool // the references being read are the statement's targets
	parens  []paren
	aliases map[string]TableName // alias → its table (zero: a derived table)
	ctes    map[string]bool
	verb    string
}

// dmlRefs names the tables a statement-logged DML statement writes and
// reads (writes also in Tables), and the names it calls as functions.
func dmlRefs(q string, m sqllex.Mode, defSchema string, dec decoder) dmlRefsResult {
	r := &refReader{p: &ddlParser{toks: tokenize(q, m, 0), def: defSchema, dec: dec},
		aliases: map[string]TableName{}, ctes: map[string]bool{}}
	r.read()
	if r.p.bad {
		r.res.unknown = true
	}
	if r.res.unknown {
		return dmlRefsResult{unknown: true}
	}
	r.res.reads = r.dropCTEs(r.res.reads)
	for i, n := range r.res.writes {
		// DELETE a FROM t AS a: the target is t.
		if t, ok := r.aliases[strings.ToLower(n.Table)]; ok && n.Schema == r.p.def {
			if t.Table == "" {
				return dmlRefsResult{unknown: true}
			}
			r.res.writes[i] = t
		}
	}
	r.res.writes = r.dropCTEs(r.res.writes)
	return r.res
}

// queryRefs names the tables a query reads (the SELECT of CREATE TEMPORARY
// TABLE t SELECT ...), from toks, its tokens from the SELECT on.
func queryRefs(toks []token, defSchema string, dec decoder) dmlRefsResult {
	r := &refReader{p: &ddlParser{toks: toks, def: defSchema, dec: dec}, verb: "SELECT",
		aliases: map[string]TableName{}, ctes: map[string]bool{}}
	for r.p.pos < len(r.p.toks) && !r.res.unknown {
		r.step()
	}
	if r.p.bad || r.res.unknown || len(r.parens) > 0 {
		return dmlRefsResult{unknown: true}
	}
	r.res.reads = r.dropCTEs(r.res.reads)
	return r.res
}

// dropCTEs leaves out unqualified names of common table expressions: they
// are not tables.
func (r *refReader) dropCTEs(names []TableName) []TableName {
	out := names[:0]
	for _, n := range names {
		if n.Schema == r.p.def && r.ctes[strings.ToLower(n.Table)] {
			continue
		}
		out = append(out, n)
	}
	return out
}

func (r *refReader) read() {
	p := r.p
	r.verb = p.peek().Text
	switch r.verb {
	case "INSERT", "REPLACE", "UPDATE", "DELETE", "LOAD":
	default:
		// CALL, DO, SELECT f(), SET, HANDLER, WITH: what such a statement
		// writes is not in its text.
		r.res.unknown = true
		return
	}
	p.pos++
	switch r.verb {
	case "INSERT", "REPLACE":
		p.skipWords("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE", "INTO")
		r.expect, r.head = true, true
	case "UPDATE":
		p.skipWords("LOW_PRIORITY", "IGNORE")
		r.expect, r.head = true, true
	case "DELETE":
		p.skipWords("LOW_PRIORITY", "QUICK", "IGNORE")
		if p.peek().Text != "FROM" || p.peek().Quoted {
			r.expect, r.head = true, true // DELETE t1, t2 FROM ...: the targets
		}
	}
	for p.pos < len(p.toks) && !r.res.unknown {
		r.step()
	}
}

// step reads the next token.
func (r *refReader) step() {
	p := r.p
	t := p.peek()
	if t.Kind == sqllex.Punct {
		r.punct(t.Text)
		return
	}
	if r.expect {
		r.ref()
		return
	}
	p.pos++
	if nx := p.peek(); nx.Text == "AS" && !nx.Quoted && p.peekAt(1).Text == "(" && (t.Kind == sqllex.Word || t.Quoted) {
		r.ctes[strings.ToLower(p.ident(t.Raw))] = true // WITH a AS (...), b AS (...)
	}
	if t.Quoted || t.Kind != sqllex.Word {
		r.call(t)
		return
	}
	switch t.Text {
	case "FROM":
		if len(r.parens) == 0 || r.top().query {
			r.expect = true
			// DELETE FROM t: the target; DELETE t FROM ...: the sources.
			r.head = r.verb == "DELETE" && len(r.res.writes) == 0 && len(r.parens) == 0
		}
	case "JOIN", "STRAIGHT_JOIN":
		r.expect, r.head = true, r.head && len(r.parens) == 0 && r.verb == "UPDATE"
	case "USING":
		if r.verb == "DELETE" && len(r.parens) == 0 && p.peek().Text != "(" {
			r.expect, r.head = true, false
		}
	case "INTO":
		if len(r.parens) == 0 && r.verb == "LOAD" {
			p.skipWords("TABLE")
			r.expect, r.head = true, true
		}
	case "SET":
		if r.verb == "UPDATE" {
			r.head = false
		}
	case "TABLE":
		// MySQL 8's TABLE t (INSERT INTO t2 TABLE t, a subquery).
		r.expect, r.head = true, false
	case "WITH":
		r.with()
	default:
		r.call(t)
	}
}

// call records an identifier followed by "(" as a possible stored
// function: name( or schema.name(.
func (r *refReader) call(t token) {
	p := r.p
	if t.Kind != sqllex.Word && t.Kind != sqllex.Ident || p.peek().Text != "(" || p.peek().Quoted {
		return
	}
	n := TableName{Schema: p.def, Table: p.ident(t.Raw)}
	if i := p.pos - 1; i >= 2 && p.toks[i-1].Text == "." && !p.toks[i-1].Quoted {
		n.Schema = p.ident(p.toks[i-2].Raw)
	}
	r.res.calls = append(r.res.calls, n)
}

func (r *refReader) top() paren { return r.parens[len(r.parens)-1] }

func (r *refReader) punct(s string) {
	p := r.p
	p.pos++
	switch s {
	case "(":
		next := p.peek()
		query := !next.Quoted && (next.Text == "SELECT" || next.Text == "WITH" || next.Text == "VALUES" ||
			next.Text == "TABLE" || next.Text == "(")
		// FROM (t1 JOIN t2): a nested join; FROM (SELECT ...): a derived table.
		r.parens = append(r.parens, paren{query: query || r.expect, inList: r.expect})
		if query {
			r.expect = false
		}
	case ")":
		if len(r.parens) == 0 {
			r.res.unknown = true
			return
		}
		closed := r.top()
		r.parens = r.parens[:len(r.parens)-1]
		r.expect = false
		if closed.inList {
			r.alias(TableName{})
			r.listNext()
		}
	}
}

// ref reads one table reference: [schema.]name [PARTITION (...)] [[AS]
// alias] [index hints], then "," or the end of the list.
func (r *refReader) ref() {
	p := r.p
	t := p.peek()
	if t.Kind != sqllex.Word && t.Kind != sqllex.Ident {
		r.res.unknown = true // a name written as a string (ANSI_QUOTES), a variable
		return
	}
	if !t.Quoted && t.Text == "DUAL" {
		p.pos++
		r.expect = false
		return
	}
	n, ok := p.name()
	if ok && n.Table == "*" { // DELETE t.* FROM ...
		n = TableName{Schema: p.def, Table: n.Schema}
	}
	if !ok || n.Table == "" {
		r.res.unknown = true
		return
	}
	if nx := p.peek(); nx.Text == "(" && !nx.Quoted && !(r.verb != "UPDATE" && r.verb != "DELETE" && r.head) {
		r.res.unknown = true // a table function (JSON_TABLE, ...); not INSERT INTO t (columns)
		return
	}
	if r.head {
		r.res.writes = append(r.res.writes, n)
	} else {
		r.res.reads = append(r.res.reads, n)
	}
	if r.verb == "INSERT" || r.verb == "REPLACE" || r.verb == "LOAD" {
		if r.head {
			r.expect, r.head = false, false
			return
		}
	}
	if p.peek().Text == "." { // DELETE db.t.* FROM ...
		p.pos += 2
	}
	if p.peek().Text == "PARTITION" {
		p.pos++
		r.skipParens()
	}
	r.alias(n)
	r.listNext()
}

// alias reads [AS] alias after a reference to table n (zero: a derived
// table).
func (r *refReader) alias(n TableName) {
	p := r.p
	t := p.peek()
	if !t.Quoted && t.Text == "AS" {
		p.pos++
		t = p.peek()
	} else if !t.Quoted && (t.Kind != sqllex.Word || notAlias[t.Text]) {
		return
	}
	if t.Kind == sqllex.Word || t.Kind == sqllex.Ident {
		r.aliases[strings.ToLower(p.ident(t.Raw))] = n
		p.pos++
	}
}

// listNext decides whether another reference follows.
func (r *refReader) listNext() {
	p := r.p
	for t := p.peek(); !t.Quoted && (t.Text == "USE" || t.Text == "IGNORE" || t.Text == "FORCE"); t = p.peek() {
		// Index hints: USE INDEX (a), IGNORE KEY FOR JOIN (b).
		for p.pos < len(p.toks) && p.peek().Text != "(" {
			p.pos++
		}
		r.skipParens()
	}
	if t := p.peek(); t.Text == "," && !t.Quoted {
		p.pos++
		r.expect = true
		return
	}
	r.expect = false
}

// skipParens skips a parenthesized list that holds no table.
func (r *refReader) skipParens() {
	p := r.p
	if p.peek().Text != "(" {
		return
	}
	depth := 0
	for ; p.pos < len(p.toks); p.pos++ {
		switch t := p.toks[p.pos]; {
		case t.Quoted:
		case t.Text == "(":
			depth++
		case t.Text == ")":
			depth--
			if depth == 0 {
				p.pos++
				return
			}
		}
	}
}

// with records the names of common table expressions: WITH [RECURSIVE]
// name [(columns)] AS (query) [, ...]. Their queries are read as
// subqueries by the main loop.
func (r *refReader) with() {
	p := r.p
	p.skipWords("RECURSIVE")
	t := p.peek()
	if t.Kind != sqllex.Word && t.Kind != sqllex.Ident {
		return
	}
	r.ctes[strings.ToLower(p.ident(t.Raw))] = true
	p.pos++
	r.skipParens()
	if p.peek().Text == "AS" && !p.peek().Quoted {
		p.pos++
	}
	// The query's "(" is read by the main loop; a later ", name AS (" too
	// is caught by the name's AS being followed by "(SELECT".
}

// notAlias are words that end a table reference (an alias is a bare word
// that is none of them).
var notAlias = map[string]bool{
	"SET": true, "VALUES": true, "VALUE": true, "SELECT": true, "WHERE": true, "ON": true, "USING": true, "JOIN": true,
	"INNER": true, "LEFT": true, "RIGHT": true, "CROSS": true, "STRAIGHT_JOIN": true, "NATURAL": true, "FULL": true,
	"OUTER": true, "ORDER": true, "LIMIT": true, "GROUP": true, "HAVING": true, "PARTITION": true, "USE": true, "IGNORE": true,
	"FORCE": true, "WINDOW": true, "UNION": true, "EXCEPT": true, "INTERSECT": true, "FOR": true, "LOCK": true, "INTO": true,
	"RETURNING": true, "DEFAULT": true, "FROM": true, "WITH": true, "TABLE": true, "FIELDS": true, "COLUMNS": true,
	"LINES": true, "CHARACTER": true, "ROWS": true, "OFFSET": true, "FETCH": true, "PROCEDURE": true,
	"KEY": true, "INDEX": true, "TERMINATED": true, "ENCLOSED": true, "ESCAPED": true, "STARTING": true, "REPLACE": true,
}
