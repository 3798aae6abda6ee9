package sqllex

import (
	"strings"
	"testing"
)

var kindNames = map[Kind]string{Word: "w", Ident: "id", String: "s", Hex: "x", Number: "n", Punct: "p"}

// show lists a text's tokens as kind:text, separated by spaces.
func show(l Lexer) string {
	var out []string
	for t := l.Next(); t.Kind != EOF; t = l.Next() {
		out = append(out, kindNames[t.Kind]+":"+l.Text()[t.Start:t.End])
	}
	return strings.Join(out, " ")
}

var lexCases = []struct {
	name, in string
	want     string // New's tokens
	ddl      string // NewDDL's, when they differ
}{
	{"words and punctuation", "SELECT a,b FROM t;", "w:SELECT w:a p:, w:b w:FROM w:t p:;", ""},
	{"backtick identifier", "`a``b` `c\\`", "id:`a``b` id:`c\\`", ""},
	{"single and double quotes", `'it''s' "say \"hi\"" 'a\'b'`, `s:'it''s' s:"say \"hi\"" s:'a\'b'`, ""},
	{"keyword inside a string", "x = 'DROP TABLE t' -- DROP\n", "w:x p:= s:'DROP TABLE t'", ""},
	{"comment markers inside a string", "'/* -- #' x", "s:'/* -- #' w:x", ""},
	{"quote inside a comment", "/* it's */ a # don't\n b", "w:a w:b", ""},
	{"unterminated string", "a 'b c", "w:a s:'b c", ""},
	{"unterminated comment", "a /* b", "w:a", ""},
	{"executable comment", "/*!50001 CREATE VIEW v */ x", "w:CREATE w:VIEW w:v w:x", ""},
	{"mariadb executable comment", "/*M!100100 SET x=1 */", "w:SET w:x p:= n:1", ""},
	{"comment inside an executable one", "/*!50001 a /* b */ c */ d", "w:a w:c w:d", ""},
	{"seven-digit version", "/*!5000012 a */", "n:2 w:a", "w:a"},
	{"stray comment end", "a */ b", "w:a p:* p:/ w:b", "w:a w:b"},
	{"form feed", "a\fb", "w:a w:b", "w:a p:\f w:b"},
	{"dash comment without space", "a --\tb\nc", "w:a w:c", "w:a p:- p:- w:b w:c"},
	{"dash comment at the end", "a --", "w:a", "w:a p:- p:-"},
	{"minus minus", "a--b", "w:a p:- p:- w:b", ""},
	{"numbers", "1 1.5e3 12abc db1.t", "n:1 n:1.5e3 n:12abc w:db1 p:. w:t", ""},
	{"hex and bit literals", "0x41 0b01 X'41' b'01'", "x:0x41 x:0b01 x:X'41' x:b'01'", ""},
	{"introducers", "_utf8mb4'x' N'y' _binary 'z'", "s:_utf8mb4'x' s:N'y' w:_binary s:'z'", ""},
	{"non-ascii word", "CREATE TABLE café (x INT)", "w:CREATE w:TABLE w:café p:( w:x w:INT p:)", ""},
}

func TestLexer(t *testing.T) {
	for _, c := range lexCases {
		if got := show(New(c.in, 0)); got != c.want {
			t.Errorf("%s: New(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
		want := c.ddl
		if want == "" {
			want = c.want
		}
		if got := show(NewDDL(c.in)); got != want {
			t.Errorf("%s: NewDDL(%q) = %q, want %q", c.name, c.in, got, want)
		}
	}
}

func TestPeekAndPos(t *testing.T) {
	l := New("a b", 1)
	if p := l.Peek(); l.Text()[p.Start:p.End] != "b" || l.Pos() != 1 {
		t.Fatalf("Peek = %+v, Pos %d", p, l.Pos())
	}
	if n := l.Next(); n.Start != 2 || l.Pos() != 3 {
		t.Fatalf("Next = %+v, Pos %d", n, l.Pos())
	}
	if e := l.Next(); e.Kind != EOF || e.Start != 3 || l.Next().Kind != EOF {
		t.Fatalf("end: %+v", e)
	}
}

func TestNoAllocation(t *testing.T) {
	q := "/*!50001 CREATE */ USER u IDENTIFIED BY 'x' -- c\n, 0x41, `t`"
	if n := testing.AllocsPerRun(100, func() { _ = count(New(q, 0)) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

// count reads every token of l.
func count(l Lexer) int {
	n := 0
	for l.Next().Kind != EOF {
		n++
	}
	return n
}

// FuzzLexer: tokens come in order, inside the text, never empty, and the
// end is always reached.
func FuzzLexer(f *testing.F) {
	for _, c := range lexCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, q string) {
		for _, l := range []Lexer{New(q, 0), NewDDL(q)} {
			last := 0
			for i := 0; ; i++ {
				tok := l.Next()
				if tok.Kind == EOF {
					break
				}
				if tok.Start < last || tok.End <= tok.Start || tok.End > len(q) || i > len(q) {
					t.Fatalf("%q: token %+v after %d", q, tok, last)
				}
				last = tok.End
			}
		}
		_ = Items(q, 0, 0)
	})
}
