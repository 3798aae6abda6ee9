package sqllex

import (
	"strings"
	"testing"
)

// showItems lists items as Text|Raw, quoted identifiers marked with Q.
func showItems(items []Item) string {
	var out []string
	for _, it := range items {
		s := it.Text + "|" + it.Raw
		if it.Quoted {
			s += "Q"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func TestItems(t *testing.T) {
	cases := []struct {
		name, in string
		limit    int
		want     string
	}{
		{"keywords upper-cased", "create Table t", 0, "CREATE|create TABLE|Table T|t"},
		{"quoted identifier unquoted", "`My``Tab`.`x", 0, "My`Tab|My`TabQ .|. x|xQ"},
		{"string literal is a marker", `SET @a = 'x', "y"`, 0, "SET|SET @|@ A|a =|= '| ,|, '|"},
		{"introducer is a word", "_utf8mb4'x' X'41' N'y'", 0, "_UTF8MB4|_utf8mb4 '| X|X '| N|N '|"},
		{"digit-led tokens split at dots", "1.5 1db.2t 0x41", 0, "1|1 .|. 5|5 1DB|1db .|. 2T|2t 0X41|0x41"},
		{"limit counts split parts", "1.5 x", 2, "1|1 .|."},
		{"limit", "a b c", 2, "A|a B|b"},
		{"executable comment body kept", "/*!50001 CREATE */ /* x */ VIEW", 0, "CREATE|CREATE VIEW|VIEW"},
		{"unterminated quote", "DROP TABLE `t", 0, "DROP|DROP TABLE|TABLE t|tQ"},
	}
	for _, c := range cases {
		if got := showItems(Items(c.in, 0, c.limit)); got != c.want {
			t.Errorf("%s: Items(%q, %d) = %q, want %q", c.name, c.in, c.limit, got, c.want)
		}
	}
}

// TestItemsModes: a statement lexes in the sql_mode it was logged with.
func TestItemsModes(t *testing.T) {
	cases := []struct {
		name, in string
		mode     Mode
		want     string
	}{
		{"double quotes are a string", `VIEW "d"."v" AS`, 0, "VIEW|VIEW '| .|. '| AS|AS"},
		{"ANSI_QUOTES: double quotes are a name", `VIEW "d""q"."v" AS`, ANSIQuotes, `VIEW|VIEW d"q|d"qQ .|. v|vQ AS|AS`},
		{"ANSI_QUOTES: no escape in a name", `"a\" x`, ANSIQuotes, `a\|a\Q X|x`},
		{"backslash escapes the quote", `'a\' RENAME x'`, 0, "'|"},
		{"NO_BACKSLASH_ESCAPES: a backslash ends nothing", `'a\' RENAME x'`, NoBackslashEscapes, "'| RENAME|RENAME X|x '|"},
		{"NO_BACKSLASH_ESCAPES: introduced literal", `_utf8mb4'a\' b`, NoBackslashEscapes, "_UTF8MB4|_utf8mb4 '| B|b"},
		{"both", `"n\" 'v\' w`, ANSIQuotes | NoBackslashEscapes, `n\|n\Q '| W|w`},
	}
	for _, c := range cases {
		if got := showItems(Items(c.in, c.mode, 0)); got != c.want {
			t.Errorf("%s: Items(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	for in, want := range map[uint64]Mode{0: 0, 1 << 2: ANSIQuotes, 1 << 20: NoBackslashEscapes, 1411383296: 0,
		1<<2 | 1<<20 | 1<<21: ANSIQuotes | NoBackslashEscapes} {
		if got := ModeOf(in); got != want {
			t.Errorf("ModeOf(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestClosed: whether a text's quotes all close depends on the mode.
func TestClosed(t *testing.T) {
	cases := []struct {
		in       string
		mode     Mode
		want     bool
		whyWhich string
	}{
		{`SELECT 'a', "b", ` + "`c`", 0, true, "plain"},
		{`SELECT 'a\'`, 0, false, "escaped quote"},
		{`SELECT 'a\'`, NoBackslashEscapes, true, "backslash is a byte"},
		{`SELECT 'a\\' 'b\'`, NoBackslashEscapes, true, "each backslash a byte"},
		{`SELECT 'a\\' 'b\'`, 0, false, "the second string's quote escaped"},
		{`SELECT "a\"`, ANSIQuotes, true, "a name has no escapes"},
		{`SELECT _utf8mb4'x\' y'`, 0, true, "introducer"},
		{`SELECT X'41`, 0, false, "hex"},
		{`SELECT 0x41 -- it's`, 0, true, "comment"},
	}
	for _, c := range cases {
		if got := Closed(c.in, c.mode); got != c.want {
			t.Errorf("%s: Closed(%q, %d) = %v", c.whyWhich, c.in, c.mode, got)
		}
	}
}
