package sqlquote

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
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
	for _, fill := range []byte{'a', 0x1b, 0x80, 0xff, 0x01} {
		for c := range 256 {
			for at := range 19 {
				b := bytes.Repeat([]byte{fill}, 19)
				b[at] = byte(c)
				if got, want := string(AppendEscaped(nil, "", b)), escapedSlow(b); got != want {
					t.Fatalf("byte %#x at %d among %#x: %q, want %q", c, at, fill, got, want)
				}
				if got, want := string(AppendEscaped(nil, "", string(b[:at+1]))), escapedSlow(b[:at+1]); got != want {
					t.Fatalf("string of %d ending in %#x: %q, want %q", at+1, c, got, want)
				}
			}
		}
	}
}

// escapedSlow is AppendEscaped's definition, a byte at a time.
func escapedSlow(b []byte) string {
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

// TestAppendEscapedLong checks the path of long values (sparseMin and
// more) against the definition: every byte value at the start, the middle
// and the end of a plain value, escapes spread out, escapes close together
// (the switch to the word loop) and then spread out again, and random
// bytes of every density.
func TestAppendEscapedLong(t *testing.T) {
	check := func(name string, b []byte) {
		t.Helper()
		if got, want := string(AppendEscaped(nil, "", b)), escapedSlow(b); got != want {
			t.Fatalf("%s (%d bytes): %q, want %q", name, len(b), got, want)
		}
	}
	for c := range 256 {
		for _, at := range []int{0, 1, sparseMin / 2, sparseMin - 1, sparseMin, 2*sparseMin - 1} {
			b := bytes.Repeat([]byte{'a'}, max(sparseMin, at+1))
			b[at] = byte(c)
			check(fmt.Sprintf("byte %#x at %d", c, at), b)
		}
	}
	var mixed []byte
	for i := range 4096 {
		switch {
		case i%97 == 0:
			mixed = append(mixed, escapedBytes[i%len(escapedBytes)])
		case i > 1000 && i < 1200 && i%3 == 0: // close together
			mixed = append(mixed, '\'')
		default:
			mixed = append(mixed, 'x')
		}
	}
	check("mixed", mixed)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, density := range []int{2, 8, 40, 300, 5000} {
		for range 50 {
			b := make([]byte, sparseMin+rng.IntN(3000))
			for i := range b {
				if rng.IntN(density) == 0 {
					b[i] = escapedBytes[rng.IntN(len(escapedBytes))]
				} else {
					b[i] = byte(0x20 + rng.IntN(0x60))
				}
			}
			check(fmt.Sprintf("random, one escape in %d", density), b)
		}
	}
}

// FuzzAppendEscaped: any bytes, as a byte slice and as a string, come out
// as the definition says.
func FuzzAppendEscaped(f *testing.F) {
	f.Add([]byte("plain"))
	f.Add(bytes.Repeat([]byte("a'b\\c\x00d\ne\rf\x1ag"), 60))
	f.Add(append(bytes.Repeat([]byte{'q'}, 300), '\''))
	f.Fuzz(func(t *testing.T, b []byte) {
		want := escapedSlow(b)
		if got := string(AppendEscaped(nil, "", b)); got != want {
			t.Fatalf("bytes: %q, want %q", got, want)
		}
		if got := string(AppendEscaped(nil, "", string(b))); got != want {
			t.Fatalf("string: %q, want %q", got, want)
		}
	})
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
