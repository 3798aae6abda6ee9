package sqlquote

import (
	"bytes"
	"errors"
	"testing"
)

func TestName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "``"},
		{"t", "`t`"},
		{"a`b", "`a``b`"},
		{"``", "``````"},
		{`a\b'c"d`, "`a\\b'c\"d`"},
		{"é ;%", "`é ;%`"},
	} {
		if got := Name(tc.in); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := string(AppendName([]byte("x"), []byte(tc.in))); got != "x"+tc.want {
			t.Errorf("AppendName(%q) = %q", tc.in, got)
		}
	}
}

func TestQualifiedAndAccount(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Qualified("s", "t"), "`s`.`t`"},
		{Qualified("s`", ""), "`s```"},
		{Qualified("a.b", "c`d"), "`a.b`.`c``d`"},
		{Account("u", "%"), "`u`@`%`"},
		{Account("a`b'", "h\\"), "`a``b'`@`h\\`"},
		{Grantee("a'b", "%"), "'a'b'@'%'"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSplitAccount(t *testing.T) {
	for _, tc := range []struct{ in, user, host string }{
		{"binlane@%", "binlane", "%"},
		{"a@b@10.0.0.1", "a@b", "10.0.0.1"},
		{"root", "root", "%"},
		{"@localhost", "", "localhost"},
	} {
		if u, h := SplitAccount(tc.in); u != tc.user || h != tc.host {
			t.Errorf("SplitAccount(%q) = %q, %q; want %q, %q", tc.in, u, h, tc.user, tc.host)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "''"},
		{"abc", "'abc'"},
		{"it's", "'it''s'"},
		{"''", "''''''"},
		{`"x" %;`, `'"x" %;'`},
		{"grüße €", "'grüße €'"},
		{`a\b`, "_utf8mb4 X'615c62'"},
		{"a\x00b", "_utf8mb4 X'610062'"},
		{"line\n", "_utf8mb4 X'6c696e650a'"},
		{"\xff", "X'ff'"},
		{"caf\xe9\\", "X'636166e95c'"},
		{"\x7f", "_utf8mb4 X'7f'"},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if got := string(AppendString([]byte("x"), []byte(tc.in))); got != "x"+tc.want {
			t.Errorf("AppendString(%q) = %s", tc.in, got)
		}
	}
}

func TestAppendHex(t *testing.T) {
	for _, tc := range []struct {
		charset, in, want string
	}{
		{"binary", "", "_binary ''"},
		{"", "", "''"},
		{"", "\x00\xff", "X'00ff'"},
		{"latin1", "é", "_latin1 X'c3a9'"},
	} {
		if got := string(AppendHex(nil, tc.charset, tc.in)); got != tc.want {
			t.Errorf("AppendHex(%q, %q) = %s, want %s", tc.charset, tc.in, got, tc.want)
		}
	}
}

func TestAppendEscaped(t *testing.T) {
	for _, tc := range []struct {
		charset, in, want string
	}{
		{"", "", "''"},
		{"binary", "a'b", `_binary'a\'b'`},
		{"utf8mb4", "\\\x00\n\r\x1a", `_utf8mb4'\\\0\n\r\Z'`},
		{"", "é\"`%", "'é\"`%'"},
	} {
		if got := string(AppendEscaped(nil, tc.charset, tc.in)); got != tc.want {
			t.Errorf("AppendEscaped(%q, %q) = %s, want %s", tc.charset, tc.in, got, tc.want)
		}
	}
}

// TestAppendEscapedEveryByte checks the eight-bytes-at-a-time path
// against the plain definition: every byte value, at every offset of a
// word, among plain neighbours of both halves of the byte range (a lane
// whose neighbour borrows must not hide or invent an escape).
func TestAppendEscapedEveryByte(t *testing.T) {
	slow := func(b []byte) string {
		out := []byte{'\''}
		for _, c := range b {
			if e := escapes[c]; e != 0 {
				out = append(out, '\\', e)
			} else {
				out = append(out, c)
			}
		}
		return string(append(out, '\''))
	}
	for _, fill := range []byte{'a', 0x1b, 0x80, 0xff, 0x01} {
		for c := range 256 {
			for at := range 19 {
				b := bytes.Repeat([]byte{fill}, 19)
				b[at] = byte(c)
				if got, want := string(AppendEscaped(nil, "", b)), slow(b); got != want {
					t.Fatalf("byte %#x at %d among %#x: %q, want %q", c, at, fill, got, want)
				}
				if got, want := string(AppendEscaped(nil, "", string(b[:at+1]))), slow(b[:at+1]); got != want {
					t.Fatalf("string of %d ending in %#x: %q, want %q", at+1, c, got, want)
				}
			}
		}
	}
}

func TestSetting(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION", "'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'", true},
		{"+00:00", "'+00:00'", true},
		{"America/Argentina/Buenos_Aires", "'America/Argentina/Buenos_Aires'", true},
		{"", "''", true},
		{"utf8mb4_uca1400_ai_ci", "'utf8mb4_uca1400_ai_ci'", true},
		{"x'; DROP TABLE t; --", "", false},
		{`a\`, "", false},
		{"é", "", false},
	} {
		got, err := Setting(tc.in)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("Setting(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ErrNotPlain) {
			t.Errorf("Setting(%q) = %q, %v; want ErrNotPlain", tc.in, got, err)
		}
	}
}

// TestAppendNoAlloc keeps the row path free of allocations when the
// buffer has room.
func TestAppendNoAlloc(t *testing.T) {
	buf := make([]byte, 0, 1024)
	v := []byte("a value with a ' quote and a \\ backslash")
	if n := testing.AllocsPerRun(100, func() {
		buf = AppendEscaped(buf[:0], "utf8mb4", v)
		buf = AppendString(buf, v)
		buf = AppendName(buf, v)
	}); n != 0 {
		t.Fatalf("%v allocations per append", n)
	}
}
