package redact

import "strings"

// A small SQL lexer: just enough of MySQL's and MariaDB's lexical rules to
// know where each string literal, quoted identifier and comment starts and
// ends, so that a keyword inside a string or a comment is never taken for
// one, and a quote inside a comment never opens a string. It allocates
// nothing: tokens are offsets into the text.

type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // unquoted identifier or keyword
	tIdent          // `quoted identifier`
	tString         // 'string' or "string", with its introducer (_utf8mb4'x', N'x')
	tHex            // X'..', B'..', 0x.., 0b..
	tNumber         // 12, 1.5e3
	tPunct          // any other single byte: = ( ) , ; @ . …
)

type token struct {
	kind       tokKind
	start, end int
}

type lexer struct {
	s   string
	pos int
	// inExec is set inside an executable comment (/*!50700 … */ or
	// /*M!100100 … */): its text is code, and its closing */ is skipped.
	inExec bool
}

// peek returns the next token without consuming it.
func (l *lexer) peek() token {
	c := *l
	return c.next()
}

func (l *lexer) next() token {
	l.skipSpace()
	s, i := l.s, l.pos
	if i >= len(s) {
		return token{kind: tEOF, start: len(s), end: len(s)}
	}
	c := s[i]
	switch {
	case c == '\'' || c == '"':
		return l.emit(tString, i, quoted(s, i))
	case c == '`':
		return l.emit(tIdent, i, quoted(s, i))
	case isDigit(c):
		j := i + 1
		for j < len(s) && isWordByte(s[j]) || j < len(s) && s[j] == '.' {
			j++
		}
		if c == '0' && j > i+1 && (s[i+1]|0x20 == 'x' || s[i+1]|0x20 == 'b') {
			return l.emit(tHex, i, j)
		}
		return l.emit(tNumber, i, j)
	case isWordByte(c):
		j := i + 1
		for j < len(s) && isWordByte(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '\'' {
			w := s[i:j]
			switch {
			case strings.EqualFold(w, "X") || strings.EqualFold(w, "B"):
				return l.emit(tHex, i, quoted(s, j))
			case w[0] == '_' || strings.EqualFold(w, "N"): // charset introducer
				return l.emit(tString, i, quoted(s, j))
			}
		}
		return l.emit(tWord, i, j)
	}
	return l.emit(tPunct, i, i+1)
}

func (l *lexer) emit(k tokKind, start, end int) token {
	l.pos = end
	return token{kind: k, start: start, end: end}
}

// skipSpace skips white space and comments, and enters and leaves
// executable comments.
func (l *lexer) skipSpace() {
	s := l.s
	for l.pos < len(s) {
		i := l.pos
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#':
			l.pos = lineEnd(s, i)
		case c == '-' && strings.HasPrefix(s[i:], "--") && (i+2 == len(s) || s[i+2] <= ' '):
			l.pos = lineEnd(s, i)
		case c == '*' && l.inExec && strings.HasPrefix(s[i:], "*/"):
			l.pos, l.inExec = i+2, false
		case c == '/' && strings.HasPrefix(s[i:], "/*"):
			j := i + 2
			if strings.HasPrefix(s[j:], "M!") {
				j++
			}
			if j < len(s) && s[j] == '!' {
				j++
				for k := 0; k < 6 && j < len(s) && isDigit(s[j]); k++ {
					j++
				}
				l.pos, l.inExec = j, true
				continue
			}
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				l.pos = len(s)
			} else {
				l.pos = i + 2 + end + 2
			}
		default:
			return
		}
	}
}

func lineEnd(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// quoted returns the end of the quoted text starting at s[i]: doubled
// quotes and backslash escapes stay inside. An unterminated quote runs to
// the end of the text (a truncated statement hides its tail).
func quoted(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// isWordByte: identifiers are letters, digits, _ and $, and any non-ASCII
// byte (MySQL allows Unicode in unquoted identifiers).
func isWordByte(c byte) bool {
	return c|0x20 >= 'a' && c|0x20 <= 'z' || isDigit(c) || c == '_' || c == '$' || c >= 0x80
}
