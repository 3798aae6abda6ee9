package schema

import (
	"regexp"
	"strings"
)

// The places in SHOW CREATE's statement of a view, routine, event or
// trigger that a copy rewrites and verify normalizes. Both are read from
// the statement's head only (CREATE and the attributes before the
// object's kind, then an event's name), so nothing in a body, a comment or
// a name can stand in for them.

// quotedPart is a user or host name as servers and dumps spell it:
// backticks, single quotes (doubled or backslash-escaped inside), or bare.
const quotedPart = "(`(?:[^`]|``)*`|'(?:[^'\\\\]|\\\\.|'')*'|[^\\s@`'=]+)"

// definerHead is CREATE [OR REPLACE] [ALGORITHM = x] DEFINER = user@host.
var definerHead = regexp.MustCompile(`(?is)^(\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:ALGORITHM\s*=\s*\w+\s+)?)` +
	`DEFINER\s*=\s*` + quotedPart + `\s*@\s*` + quotedPart)

// DefinerAt finds the DEFINER clause of SHOW CREATE's statement: the
// clause is create[start:end], its account user@host unquoted; ok is false
// when the statement has none (a sequence, a table).
func DefinerAt(create string) (start, end int, user, host string, ok bool) {
	m := definerHead.FindStringSubmatchIndex(create)
	if m == nil {
		return 0, 0, "", "", false
	}
	return m[3], m[1], unquotePart(create[m[4]:m[5]]), unquotePart(create[m[6]:m[7]]), true
}

// unquotePart removes one level of backtick or single-quote quoting.
func unquotePart(p string) string {
	switch {
	case len(p) >= 2 && p[0] == '`' && p[len(p)-1] == '`':
		return strings.ReplaceAll(p[1:len(p)-1], "``", "`")
	case len(p) >= 2 && p[0] == '\'' && p[len(p)-1] == '\'':
		inner := strings.ReplaceAll(p[1:len(p)-1], "''", "'")
		return strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(inner)
	}
	return p
}

// eventHead is CREATE ... EVENT [IF NOT EXISTS] and the event's name.
var eventHead = regexp.MustCompile("(?is)^\\s*CREATE\\s+(?:OR\\s+REPLACE\\s+)?(?:DEFINER\\s*=\\s*" + quotedPart + "\\s*@\\s*" +
	quotedPart + "\\s+)?EVENT\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?(?:`(?:[^`]|``)*`|\\w+)(?:\\.(?:`(?:[^`]|``)*`|\\w+))?")

// eventStatus is the status SHOW CREATE EVENT writes after ON COMPLETION
// [NOT] PRESERVE (its schedule before holds no such words; its COMMENT
// and body come after).
var eventStatus = regexp.MustCompile(`(?is)^\s.*?\sON\s+COMPLETION\s+(?:NOT\s+)?PRESERVE\s+` +
	`(ENABLE|DISABLE\s+ON\s+SLAVE|DISABLE\s+ON\s+REPLICA|DISABLE)\b`)

// EventStatusAt finds an event's status in SHOW CREATE EVENT's statement:
// create[start:end] is ENABLE, DISABLE, or DISABLE ON SLAVE (MySQL 8.4:
// ON REPLICA); ok is false when the statement is not one.
func EventStatusAt(create string) (start, end int, ok bool) {
	h := eventHead.FindStringIndex(create)
	if h == nil {
		return 0, 0, false
	}
	m := eventStatus.FindStringSubmatchIndex(create[h[1]:])
	if m == nil {
		return 0, 0, false
	}
	return h[1] + m[2], h[1] + m[3], true
}
