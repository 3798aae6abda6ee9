// Package sqllex is binlane's one SQL lexer: just enough of MySQL's and
// MariaDB's lexical rules to know where each word, string literal, quoted
// identifier, number and comment starts and ends, so that a keyword inside
// a string or a comment is never taken for one, and a quote inside a
// comment never opens a string.
//
// It owns the lexical rules only: white space, comments (--, #, /* */),
// executable comments (/*!50001 … */, /*M!100100 … */, whose text is code),
// strings in both quote kinds with backslash and doubled-quote escapes,
// `quoted identifiers`, numbers and hexadecimal literals. It must never
// parse statements (what a statement is or touches belongs to its callers),
// do I/O or keep state between calls. Its Lexer allocates nothing: tokens
// are offsets into the text.
//
// Two sql_mode flags change the lexical rules, and a statement from the
// binlog is read in the mode it was logged with (Mode, ModeOf):
// ANSI_QUOTES makes "double quoted" text an identifier (the server writes
// a view's statement so under it), and NO_BACKSLASH_ESCAPES makes a
// backslash an ordinary byte inside a string.
package sqllex

import "strings"

// Kind is the kind of a token.
type Kind uint8

// The kinds of tokens.
const (
	EOF    Kind = iota
	Word        // unquoted identifier or keyword
	Ident       // `quoted identifier`
	String      // 'string' or "string", with its introducer (_utf8mb4'x', N'x')
	Hex         // X'..', B'..', 0x.., 0b..
	Number      // 12, 1.5e3 (any digit-led run of word bytes and dots)
	Punct       // any other single byte: = ( ) , ; @ . …
)

// Mode is the part of a session's sql_mode that changes how text lexes.
type Mode uint8

// The modes.
const (
	ANSIQuotes         Mode = 1 << iota // "x" is a quoted identifier, not a string
	NoBackslashEscapes                  // a backslash is an ordinary byte in a string
)

// The sql_mode bits of ANSI_QUOTES and NO_BACKSLASH_ESCAPES in a query
// event's sql_mode (the server's MODE_ANSI_QUOTES and
// MODE_NO_BACKSLASH_ESCAPES; ANSI and ORACLE imply the first).
const (
	sqlModeANSIQuotes         = 1 << 2
	sqlModeNoBackslashEscapes = 1 << 20
)

// ModeOf picks the lexical flags out of a binlogged sql_mode value.
func ModeOf(sqlMode uint64) Mode {
	var m Mode
	if sqlMode&sqlModeANSIQuotes != 0 {
		m |= ANSIQuotes
	}
	if sqlMode&sqlModeNoBackslashEscapes != 0 {
		m |= NoBackslashEscapes
	}
	return m
}

// Token is a token of Lexer's text: Text()[Start:End].
type Token struct {
	Kind       Kind
	Start, End int
}

// Lexer reads the tokens of a text. A Lexer is a small value: copying it
// saves a position to come back to (Peek does that).
type Lexer struct {
	s   string
	pos int
	// inExec is set inside an executable comment: its text is code, and
	// its closing */ is skipped.
	inExec bool
	// ddl selects the rules binlane's statement classification has always
	// read with (see NewDDL).
	ddl  bool
	mode Mode
}

// New returns a Lexer that reads s from offset pos with the servers'
// rules: white space is space, \t, \n, \r, \f and \v; -- starts a comment
// when a space or control byte (or the end) follows; an executable
// comment's version has at most six digits; */ is skipped only where an
// executable comment ends.
func New(s string, pos int) Lexer { return Lexer{s: s, pos: pos} }

// NewDDL returns a Lexer with the rules the DDL classification of package
// txn was written against, kept so that it reads every statement as it
// always did. They differ from New's in four places, all of them text a
// server hardly ever logs: \f and \v are Punct tokens, not white space;
// -- starts a comment only when a space follows; an executable comment's
// version is every digit that follows /*! or /*M!; and */ is skipped
// wherever it appears.
func NewDDL(s string) Lexer { return Lexer{s: s, ddl: true} }

// In returns the Lexer reading in sql_mode m.
func (l Lexer) In(m Mode) Lexer {
	l.mode = m
	return l
}

// Text returns the text the Lexer reads.
func (l *Lexer) Text() string { return l.s }

// Pos returns the offset of the next byte to read.
func (l *Lexer) Pos() int { return l.pos }

// Peek returns the next token without consuming it.
func (l *Lexer) Peek() Token {
	c := *l
	return c.Next()
}

// Next reads the next token; at the end of the text it returns an EOF
// token (Start and End at the end), again and again.
func (l *Lexer) Next() Token {
	l.skipSpace()
	s, i := l.s, l.pos
	if i >= len(s) {
		return Token{Kind: EOF, Start: len(s), End: len(s)}
	}
	c := s[i]
	switch {
	case c == '"' && l.mode&ANSIQuotes != 0, c == '`':
		return l.emit(Ident, i, quotedEnd(s, i, false))
	case c == '\'' || c == '"':
		return l.emit(String, i, l.stringEnd(i))
	case isDigit(c):
		j := i + 1
		for j < len(s) && (IsWordByte(s[j]) || s[j] == '.') {
			j++
		}
		if c == '0' && j > i+1 && (s[i+1]|0x20 == 'x' || s[i+1]|0x20 == 'b') {
			return l.emit(Hex, i, j)
		}
		return l.emit(Number, i, j)
	case IsWordByte(c):
		return l.word(i)
	}
	return l.emit(Punct, i, i+1)
}

// NextWord reads the next token and returns its text if it is a Word,
// "" otherwise: enough to read a statement's leading keywords.
func (l *Lexer) NextWord() string {
	if t := l.Next(); t.Kind == Word {
		return l.s[t.Start:t.End]
	}
	return ""
}

// word reads a word at s[i], or a literal it introduces: X'..' and B'..'
// are hexadecimal and bit literals, N'..' and _charset'..' strings.
func (l *Lexer) word(i int) Token {
	s := l.s
	j := i + 1
	for j < len(s) && IsWordByte(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '\'' {
		w := s[i:j]
		switch {
		case strings.EqualFold(w, "X") || strings.EqualFold(w, "B"):
			return l.emit(Hex, i, quotedEnd(s, j, false))
		case w[0] == '_' || strings.EqualFold(w, "N"):
			return l.emit(String, i, l.stringEnd(j))
		}
	}
	return l.emit(Word, i, j)
}

func (l *Lexer) emit(k Kind, start, end int) Token {
	l.pos = end
	return Token{Kind: k, Start: start, End: end}
}

// skipSpace skips white space and comments, and enters and leaves
// executable comments. An unterminated comment runs to the end.
func (l *Lexer) skipSpace() {
	s := l.s
	for l.pos < len(s) {
		i := l.pos
		switch c := s[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || (c == '\f' || c == '\v') && !l.ddl:
			l.pos++
		case c == '#' || c == '-' && l.dashComment(i):
			l.pos = lineEnd(s, i)
		case c == '*' && (l.inExec || l.ddl) && strings.HasPrefix(s[i:], "*/"):
			l.pos, l.inExec = i+2, false
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			l.comment(i)
		default:
			return
		}
	}
}

// dashComment reports whether s[i:] starts a -- comment.
func (l *Lexer) dashComment(i int) bool {
	s := l.s
	if !strings.HasPrefix(s[i:], "--") {
		return false
	}
	if l.ddl {
		return i+2 < len(s) && s[i+2] == ' '
	}
	return i+2 == len(s) || s[i+2] <= ' '
}

// comment skips the comment at s[i] ("/*"), or enters it when it is an
// executable one.
func (l *Lexer) comment(i int) {
	s := l.s
	j := i + 2
	if strings.HasPrefix(s[j:], "M!") {
		j++
	}
	if j < len(s) && s[j] == '!' {
		j++
		for k := 0; (k < 6 || l.ddl) && j < len(s) && isDigit(s[j]); k++ {
			j++
		}
		l.pos, l.inExec = j, true
		return
	}
	if end := strings.Index(s[i+2:], "*/"); end >= 0 {
		l.pos = i + 2 + end + 2
	} else {
		l.pos = len(s)
	}
}

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// stringEnd returns the end of the string literal whose quote is s[i].
func (l *Lexer) stringEnd(i int) int { return quotedEnd(l.s, i, l.mode&NoBackslashEscapes == 0) }

// quotedEnd returns the end of the quoted text starting at s[i]: doubled
// quotes and, with escapes, backslash escapes stay inside. An
// unterminated quote runs to the end of the text (a truncated statement
// hides its tail).
func quotedEnd(s string, i int, escapes bool) int {
	end, _ := quotedClose(s, i, escapes)
	return end
}

// quotedClose is quotedEnd, and whether the quote closes.
func quotedClose(s string, i int, escapes bool) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if escapes {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return len(s), false
}

// Closed reports whether every string and quoted identifier of s closes
// when s is read in sql_mode m: a statement a server accepted does, in
// the mode it was written in.
func Closed(s string, m Mode) bool {
	l := New(s, 0).In(m)
	for t := l.Next(); t.Kind != EOF; t = l.Next() {
		if t.Kind != String && t.Kind != Ident && t.Kind != Hex {
			continue
		}
		q := strings.IndexAny(s[t.Start:t.End], "'\"`")
		if q < 0 {
			continue // 0x41
		}
		i := t.Start + q
		escapes := s[i] != '`' && !(s[i] == '"' && m&ANSIQuotes != 0) && m&NoBackslashEscapes == 0
		if _, ok := quotedClose(s, i, escapes); !ok {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsWordByte reports whether c can be part of an unquoted identifier:
// letters, digits, _ and $, and any non-ASCII byte (MySQL allows Unicode
// in unquoted identifiers).
func IsWordByte(c byte) bool {
	return c|0x20 >= 'a' && c|0x20 <= 'z' || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}
