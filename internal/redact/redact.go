// Package redact hides secrets in text that binlane prints or stores:
// passwords in the account and server statements a source's binlog carries
// (CREATE USER … IDENTIFIED BY 'x', SET PASSWORD, CHANGE MASTER TO
// MASTER_PASSWORD, CREATE SERVER … OPTIONS (PASSWORD 'x'), …), and the
// password part of server addresses embedded in messages.
//
// It owns the text transformation only. It is pure: no I/O, no state, and
// it must never log, keep or return a secret it finds. It must also never
// change anything but the secrets, so that a redacted statement still reads
// as the statement it was. Text without any of its keywords costs one scan
// and no allocation, so it can run on every statement that is printed.
//
// A text does not say the sql_mode it was written in, and under
// NO_BACKSLASH_ESCAPES a backslash ends no string: a text with a backslash
// is read in each mode it can be in, and what any reading calls a secret
// is hidden (a message quoting a statement may then show less of it).
package redact

import (
	"cmp"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/sqllex"
)

// Marker replaces a secret string literal in a statement.
const Marker = "'<redacted>'"

// addrMarker replaces the password of a server address, as dsn.DSN.String
// prints it.
const addrMarker = "***"

// Statement hides the secrets in one or more SQL statements: the string
// literals that hold passwords, password hashes or authentication data.
// The statement is read with SQL's quoting and comment rules, so only the
// secret literals change.
//
// Besides account statements, PASSWORD = 'x' and PASSWORD('x') are hidden
// wherever they appear, so a statement such as UPDATE t SET password = 'x'
// shows '<redacted>' as well: that value is a password too. So are the
// passwords of server addresses a statement holds (a FEDERATED or CONNECT
// table's CONNECTION='mysql://user:pass@host/...').
func Statement(q string) string {
	return addresses(accountSecrets(q))
}

func accountSecrets(q string) string {
	if !hasTrigger(q) {
		return q
	}
	r := rewriter{s: q}
	ms, n := modes(q, true)
	for _, m := range ms[:n] {
		l := sqllex.New(q, 0).In(m)
		for t := l.Next(); t.Kind != sqllex.EOF; t = l.Next() {
			if t.Kind == sqllex.Word {
				r.clause(&l, t)
			}
		}
	}
	return r.result()
}

// modes are the lexical modes s is read in (the first n of ms). A
// statement the source logged under NO_BACKSLASH_ESCAPES ends a string at
// a backslash that the default rules read as an escape, which would make
// the literal after it (the password of CREATE USER 'u\'@'%' IDENTIFIED BY
// 'x') look like SQL. The text does not say its mode, so a text with a
// backslash is read both ways and what either reading finds is hidden;
// but a whole statement (whole) whose quotes all close in one mode and not
// in the other is read in that one only: the server accepted it so.
func modes(s string, whole bool) (ms [2]sqllex.Mode, n int) {
	if strings.IndexByte(s, '\\') < 0 {
		return ms, 1
	}
	ms[1] = sqllex.NoBackslashEscapes
	if !whole {
		return ms, 2
	}
	switch def, nbe := sqllex.Closed(s, 0), sqllex.Closed(s, sqllex.NoBackslashEscapes); {
	case def && !nbe:
		return ms, 1
	case nbe && !def:
		ms[0] = sqllex.NoBackslashEscapes
		return ms, 1
	}
	return ms, 2
}

// Text hides secrets in a message that may quote statements or server
// addresses: the statement rules of Statement, applied from each keyword
// on (a message's own words, such as an apostrophe in "can't", must not
// hide a statement from them), then the passwords of mysql://user:pass@host
// URLs and user:pass@tcp(host:port)/ addresses.
func Text(s string) string {
	return addresses(statementsIn(s))
}

// statementsIn applies the statement rules from each keyword of s, instead
// of reading s from its start as SQL.
func statementsIn(s string) string {
	if !hasTrigger(s) {
		return s
	}
	r := rewriter{s: s}
	for from := 0; ; {
		i, n := nextTrigger(s, from)
		if i < 0 {
			break
		}
		from = i + n
		start := wordStart(s, i)
		end := wordEnd(s, i+n)
		// A keyword glued to a quote is quoted text ('password' in a
		// "Duplicate entry" message), not SQL.
		if start > 0 && isQuote(s[start-1]) || end < len(s) && isQuote(s[end]) {
			continue
		}
		// SET PASSWORD FOR u = 'x': the secret depends on the SET.
		if p := prevWord(s, start); p >= 0 && strings.EqualFold(s[p:start-spaceBefore(s, start)], "SET") {
			start = p
		}
		read := len(s)
		ms, n := modes(s, false) // a message may quote part of a statement
		for _, m := range ms[:n] {
			l := sqllex.New(s, start).In(m)
			r.clause(&l, l.Next())
			read = min(read, l.Pos())
		}
		from = max(from, read)
	}
	return r.result()
}

// rewriter copies s with secret tokens replaced. It collects the secrets'
// spans first (a text read in two modes finds them in any order, and may
// find overlapping ones) and allocates only when it found one.
type rewriter struct {
	s     string
	spans []span
}

// span is a secret: s[start:end], shown as marker.
type span struct {
	start, end int
	marker     string
}

func (r *rewriter) hide(t sqllex.Token, marker string) {
	r.spans = append(r.spans, span{t.Start, t.End, marker})
}

// result is s with each secret, or each run of overlapping ones, replaced
// by a marker.
func (r *rewriter) result() string {
	if len(r.spans) == 0 {
		return r.s
	}
	slices.SortFunc(r.spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(b.end, a.end)) })
	var b strings.Builder
	b.Grow(len(r.s) + len(Marker))
	last := 0
	for i := 0; i < len(r.spans); {
		sp := r.spans[i]
		for i++; i < len(r.spans) && r.spans[i].start < sp.end; i++ {
			sp.end = max(sp.end, r.spans[i].end)
		}
		b.WriteString(r.s[last:sp.start])
		b.WriteString(sp.marker)
		if sp.marker == Marker && sp.end < len(r.s) && isQuote(r.s[sp.end]) {
			// A quote right after a literal that did not end with one
			// (0x41'x') would continue the marker's string: redacting again
			// would hide more. A space keeps them apart.
			b.WriteByte(' ')
		}
		last = sp.end
	}
	b.WriteString(r.s[last:])
	return b.String()
}

// clause hides the secrets of the clause that word t starts, if it starts
// one, reading only that clause's tokens from l.
func (r *rewriter) clause(l *sqllex.Lexer, t sqllex.Token) {
	switch {
	case r.is(t, "IDENTIFIED"):
		r.identified(l)
	case r.is(t, "SET") && r.is(l.Peek(), "PASSWORD"):
		l.Next()
		r.setPassword(l)
	case r.isPasswordWord(t):
		r.passwordOption(l)
	}
}

// identified reads what follows IDENTIFIED:
//
//	BY 'x' | BY PASSWORD 'hash' | BY RANDOM PASSWORD
//	WITH|VIA plugin [BY|USING|AS 'x' | PASSWORD('x') | RANDOM PASSWORD] [OR plugin …]…
//
// then MySQL's REPLACE 'current' (the old password). AND IDENTIFIED … and
// the next user's IDENTIFIED are clauses of their own.
func (r *rewriter) identified(l *sqllex.Lexer) {
	switch t := l.Peek(); {
	case r.is(t, "BY"):
		l.Next()
		r.authValue(l)
	case r.is(t, "WITH") || r.is(t, "VIA"):
		l.Next()
		for {
			l.Next() // the plugin's name: not a secret
			t := l.Peek()
			if r.is(t, "BY") || r.is(t, "USING") || r.is(t, "AS") {
				l.Next()
				r.authValue(l)
				t = l.Peek()
			}
			if !r.is(t, "OR") {
				break
			}
			l.Next()
		}
	}
	r.replaceClause(l)
}

// authValue reads the authentication data after BY, USING or AS.
func (r *rewriter) authValue(l *sqllex.Lexer) {
	switch t := l.Peek(); {
	case isLiteral(t):
		r.hide(l.Next(), Marker)
	case r.isPasswordWord(t): // BY PASSWORD '*hash', USING PASSWORD('x')
		l.Next()
		r.passwordOption(l)
	case r.is(t, "RANDOM"): // RANDOM PASSWORD: the server makes one up
		l.Next()
		if r.is(l.Peek(), "PASSWORD") {
			l.Next()
		}
	}
}

// passwordOption reads what follows PASSWORD, OLD_PASSWORD,
// MASTER_PASSWORD or SOURCE_PASSWORD: 'x', = 'x', = PASSWORD('x'), ('x').
// Anything else (PASSWORD EXPIRE, a column named password) is left alone.
func (r *rewriter) passwordOption(l *sqllex.Lexer) {
	switch t := l.Peek(); {
	case isLiteral(t):
		r.hide(l.Next(), Marker)
	case isPunct(r.s, t, '('):
		l.Next()
		if isLiteral(l.Peek()) {
			r.hide(l.Next(), Marker)
		}
	case isPunct(r.s, t, '='):
		l.Next()
		r.assigned(l)
	}
}

// assigned reads a password's value after '=': a literal, or PASSWORD('x')
// or OLD_PASSWORD('x').
func (r *rewriter) assigned(l *sqllex.Lexer) {
	switch t := l.Peek(); {
	case isLiteral(t):
		r.hide(l.Next(), Marker)
	case r.isPasswordWord(t):
		l.Next()
		r.passwordOption(l)
	}
}

// setPassword reads SET PASSWORD [FOR user] = value [REPLACE 'current'];
// SET PASSWORD [FOR user] TO RANDOM has no secret.
func (r *rewriter) setPassword(l *sqllex.Lexer) {
	// The user part is a few tokens; the bound keeps a stray SET PASSWORD
	// in a message from reading the whole text.
	for range 32 {
		t := l.Next()
		switch {
		case t.Kind == sqllex.EOF, isPunct(r.s, t, ';'), r.is(t, "TO"):
			return
		case isPunct(r.s, t, '='):
			r.assigned(l)
			r.replaceClause(l)
			return
		}
	}
}

// replaceClause hides MySQL's REPLACE 'current password'.
func (r *rewriter) replaceClause(l *sqllex.Lexer) {
	if r.is(l.Peek(), "REPLACE") {
		l.Next()
		if isLiteral(l.Peek()) {
			r.hide(l.Next(), Marker)
		}
	}
}

func (r *rewriter) is(t sqllex.Token, kw string) bool {
	return t.Kind == sqllex.Word && t.End-t.Start == len(kw) && strings.EqualFold(r.s[t.Start:t.End], kw)
}

func (r *rewriter) isPasswordWord(t sqllex.Token) bool {
	return r.is(t, "PASSWORD") || r.is(t, "OLD_PASSWORD") || r.is(t, "MASTER_PASSWORD") || r.is(t, "SOURCE_PASSWORD")
}

func isLiteral(t sqllex.Token) bool { return t.Kind == sqllex.String || t.Kind == sqllex.Hex }

func isPunct(s string, t sqllex.Token, c byte) bool { return t.Kind == sqllex.Punct && s[t.Start] == c }

func isQuote(c byte) bool { return c == '\'' || c == '"' || c == '`' }

// hasTrigger reports whether s has a keyword that can start a secret
// (IDENTIFIED, or PASSWORD alone or in OLD_, MASTER_, SOURCE_PASSWORD),
// in any case, without allocating.
func hasTrigger(s string) bool {
	i, _ := nextTrigger(s, 0)
	return i >= 0
}

// nextTrigger returns the offset and length of the first trigger keyword
// in s[from:], or -1.
func nextTrigger(s string, from int) (int, int) {
	for i := from; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'i':
			if hasPrefixFold(s[i:], "identified") {
				return i, len("identified")
			}
		case 'p':
			if hasPrefixFold(s[i:], "password") {
				return i, len("password")
			}
		}
	}
	return -1, 0
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// wordStart and wordEnd extend a keyword found inside s to the whole word
// (MASTER_PASSWORD, or an identifier like user_password that is no keyword).
func wordStart(s string, i int) int {
	for i > 0 && sqllex.IsWordByte(s[i-1]) {
		i--
	}
	return i
}

func wordEnd(s string, i int) int {
	for i < len(s) && sqllex.IsWordByte(s[i]) {
		i++
	}
	return i
}

func spaceBefore(s string, i int) int {
	n := 0
	for i-n > 0 && (s[i-n-1] == ' ' || s[i-n-1] == '\t' || s[i-n-1] == '\n') {
		n++
	}
	return n
}

// prevWord returns the start of the word before the one at i, separated
// by white space only, or -1.
func prevWord(s string, i int) int {
	n := spaceBefore(s, i)
	if n == 0 {
		return -1
	}
	j := wordStart(s, i-n)
	if j == i-n {
		return -1
	}
	return j
}
