package writeset

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/binlane/binlane/internal/schema"
)

// Collations as the plan hands them to Normalize. They are classified from
// their names, as the schema package does for the server's list, so a
// change in the classification shows up here too.
var (
	collNone        = schema.Collation{} // binary and non-character columns
	collBinary      = schema.ClassifyCollation("binary", "binary")
	collBin         = schema.ClassifyCollation("utf8mb4_bin", "utf8mb4")
	collNopadBin    = schema.ClassifyCollation("utf8mb4_nopad_bin", "utf8mb4")
	collLatin1Bin   = schema.ClassifyCollation("latin1_bin", "latin1")
	collCI          = schema.ClassifyCollation("utf8mb4_general_ci", "utf8mb4")
	collNopadCI     = schema.ClassifyCollation("utf8mb4_general_nopad_ci", "utf8mb4")
	collUCA         = schema.ClassifyCollation("utf8mb4_uca1400_ai_ci", "utf8mb4")
	collLatin1CI    = schema.ClassifyCollation("latin1_swedish_ci", "latin1")
	collCS          = schema.ClassifyCollation("latin1_general_cs", "latin1")
	collThaiW2      = schema.ClassifyCollation("utf8mb4_thai_520_w2", "utf8mb4")
	collLithuanian  = schema.ClassifyCollation("utf8mb4_lithuanian_ci", "utf8mb4")
	collRoman       = schema.ClassifyCollation("utf8mb4_uca1400_roman_ai_cs", "utf8mb4")
	collMacce       = schema.ClassifyCollation("macce_general_ci", "macce")
	collSwe7        = schema.ClassifyCollation("swe7_swedish_ci", "swe7")
	collUTF16       = schema.ClassifyCollation("utf16_general_ci", "utf16")
	collUCS2Bin     = schema.ClassifyCollation("ucs2_bin", "ucs2")
	collUTF32       = schema.ClassifyCollation("utf32_unicode_ci", "utf32")
	collBig5        = schema.ClassifyCollation("big5_chinese_ci", "big5")
	collConvertedCI = schema.Collation{Name: "utf8mb4_general_ci", Charset: "latin1", PadSpace: true, CaseInsensitive: true}
	// A _bin target column fed from a latin1 source column, as the plan
	// adapts it (plan.sourceBytes): the byte-exact path is off.
	collConvertedBin = schema.Collation{Name: "utf8mb4_bin", Charset: "latin1", PadSpace: true}
)

func TestNormalize(t *testing.T) {
	const fail = "\x00FAIL" // want: Normalize must report uncertainty
	cases := []struct {
		name   string
		coll   schema.Collation
		prefix int
		in     string
		want   string
	}{
		// Binary data: the bytes, no padding rules; a prefix counts bytes.
		{"none: bytes", collNone, 0, "ab \x00\xff", "ab \x00\xff"},
		{"binary: trailing spaces kept", collBinary, 0, "ab  ", "ab  "},
		{"binary: upper case kept", collBinary, 0, "AbC", "AbC"},
		{"binary: prefix in bytes", collBinary, 3, "abcdef", "abc"},
		{"binary: prefix cuts a UTF-8 sequence", collBinary, 1, "éa", "\xc3"},
		{"binary: prefix longer than value", collBinary, 10, "ab", "ab"},
		{"binary: empty", collBinary, 0, "", ""},

		// _bin under PAD SPACE: the bytes minus trailing spaces (only spaces).
		{"bin: trailing spaces trimmed", collBin, 0, "abc  ", "abc"},
		{"bin: leading spaces kept", collBin, 0, "  abc", "  abc"},
		{"bin: tab is not padding", collBin, 0, "abc\t", "abc\t"},
		{"bin: case kept", collBin, 0, "ABC", "ABC"},
		{"bin: accents kept exactly", collBin, 0, "é ", "é"},
		{"bin: emoji", collBin, 0, "😀", "😀"},
		{"bin: control characters", collBin, 0, "a\x01b", "a\x01b"},
		{"bin: only spaces", collBin, 0, "   ", ""},
		{"bin: prefix in characters", collBin, 2, "éèx", "éè"},
		{"bin: prefix with a 4-byte character", collBin, 1, "😀x", "😀"},
		{"bin: prefix then padding", collBin, 2, "a bc", "a"},
		{"bin: prefix over invalid UTF-8", collBin, 1, "\xffabc", fail},
		{"bin: prefix over a truncated sequence", collBin, 2, "a\xc3", fail},
		{"bin: invalid UTF-8 without prefix is bytes", collBin, 0, "\xff", "\xff"},
		{"latin1_bin: prefix counts single bytes", collLatin1Bin, 2, "\xe9\xe8x", "\xe9\xe8"},

		// NO PAD: trailing spaces matter.
		{"nopad_bin: trailing spaces kept", collNopadBin, 0, "abc  ", "abc  "},
		{"nopad_ci: trailing spaces kept, case folded", collNopadCI, 0, "abc  ", "ABC  "},

		// _ci: printable ASCII, folded, padded.
		{"ci: lower", collCI, 0, "abc", "ABC"},
		{"ci: upper", collCI, 0, "ABC", "ABC"},
		{"ci: mixed and padded", collCI, 0, "aBc  ", "ABC"},
		{"ci: punctuation unchanged", collCI, 0, "a@x.y_z-1{}[]~", "A@X.Y_Z-1{}[]~"},
		{"ci: empty", collCI, 0, "", ""},
		{"ci: prefix", collCI, 2, "abcd", "AB"},
		{"ci: prefix then padding", collCI, 3, "ab  c", "AB"},
		{"ci: accent is uncertain", collCI, 0, "é", fail},
		{"ci: sharp s is uncertain", collCI, 0, "ß", fail},
		{"ci: emoji is uncertain", collCI, 0, "😀", fail},
		{"ci: tab is uncertain", collCI, 0, "a\tb", fail},
		{"ci: NUL is uncertain", collCI, 0, "a\x00", fail},
		{"ci: DEL is uncertain", collCI, 0, "a\x7f", fail},
		{"ci: non-ASCII beyond the prefix still uncertain", collCI, 1, "aé", fail},
		{"uca1400_ai_ci: ASCII folded", collUCA, 0, "Ab ", "AB"},
		{"latin1_ci: ASCII folded", collLatin1CI, 0, "Ab ", "AB"},
		{"latin1_ci: latin1 é uncertain", collLatin1CI, 0, "\xe9", fail},
		{"thai_520_w2 is case-insensitive", collThaiW2, 0, "aB", "AB"},

		// Case-sensitive, not binary: ASCII only, padded, not folded.
		{"cs: case kept", collCS, 0, "Abc ", "Abc"},
		{"cs: non-ASCII uncertain", collCS, 0, "\xe9", fail},

		// Collations that merge ASCII letters or punctuation beyond case.
		{"lithuanian: y = i", collLithuanian, 0, "y", fail},
		{"roman: u = v", collRoman, 0, "u", fail},
		{"macce: M = N", collMacce, 0, "M", fail},

		// Charsets in which ASCII bytes do not mean ASCII.
		{"swe7: [ is Ä", collSwe7, 0, "[", fail},
		{"utf16", collUTF16, 0, "\x00a", fail},
		{"ucs2_bin", collUCS2Bin, 0, "\x00a", fail},
		{"utf32", collUTF32, 0, "\x00\x00\x00a", fail},
		{"big5 trail bytes are ASCII", collBig5, 0, "a", fail},

		// A column converted from another charset: only ASCII is certain.
		{"converted ci: ASCII", collConvertedCI, 0, "ab ", "AB"},
		{"converted ci: latin1 é", collConvertedCI, 0, "\xe9", fail},
		{"converted bin: ASCII, case kept", collConvertedBin, 0, "Ab ", "Ab"},
		{"converted bin: latin1 é", collConvertedBin, 0, "\xe9", fail},
		{"converted bin: prefix of ASCII", collConvertedBin, 1, "Ab", "A"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Normalize appends: what dst held must stay in front, and stay
			// alone when it fails.
			got, ok := Normalize([]byte("pre|"), []byte(c.in), c.coll, c.prefix)
			if c.want == fail {
				if ok {
					t.Fatalf("Normalize(%q) = %q, want uncertain", c.in, got)
				}
				if string(got) != "pre|" {
					t.Fatalf("failed Normalize changed dst to %q", got)
				}
				return
			}
			if !ok || string(got) != "pre|"+c.want {
				t.Fatalf("Normalize(%q, %s, prefix %d) = %q, %v; want %q", c.in, c.coll.Name, c.prefix, got, ok, c.want)
			}
			// A normalized value is its own normal form.
			again, ok := Normalize(nil, got[len("pre|"):], c.coll, c.prefix)
			if !ok || string(again) != c.want {
				t.Fatalf("normalizing %q again gave %q, %v", c.want, again, ok)
			}
		})
	}
}

// TestNormalizeEquivalence lists values the target considers equal (they
// must normalize equal) and values it considers different (they must not,
// for the exact paths).
func TestNormalizeEquivalence(t *testing.T) {
	cases := []struct {
		coll   schema.Collation
		prefix int
		equal  []string
		differ []string // each differs from equal[0]
	}{
		{collCI, 0, []string{"abc", "ABC", "abc  ", "aBc ", "Abc"}, []string{"abd", " abc", "ab", "abc\t"}},
		{collNopadCI, 0, []string{"abc", "ABC", "aBc"}, []string{"abc ", "abd"}},
		{collBin, 0, []string{"abc", "abc ", "abc   "}, []string{"ABC", "abc\t", " abc"}},
		{collNopadBin, 0, []string{"abc"}, []string{"abc ", "ABC"}},
		{collBinary, 0, []string{"abc"}, []string{"abc ", "abc\x00", "ABC"}},
		{collCI, 2, []string{"abX", "ABy", "ab", "ab   "}, []string{"ac", "a"}},
		{collBin, 1, []string{"éa", "éb", "é"}, []string{"e", "èa"}},
		{collBin, 2, []string{"😀😀x", "😀😀y", "😀😀"}, []string{"😀", "😀x"}},
		{collBinary, 2, []string{"\xc3\xa9x", "\xc3\xa9"}, []string{"\xc3\xa8"}},
	}
	for _, c := range cases {
		first, ok := Normalize(nil, []byte(c.equal[0]), c.coll, c.prefix)
		if !ok {
			t.Fatalf("%s: %q uncertain", c.coll.Name, c.equal[0])
		}
		for _, v := range c.equal[1:] {
			got, ok := Normalize(nil, []byte(v), c.coll, c.prefix)
			if !ok || !bytes.Equal(got, first) {
				t.Errorf("%s prefix %d: %q -> %q, %q -> %q, %v: want equal", c.coll.Name, c.prefix, c.equal[0], first, v, got, ok)
			}
		}
		for _, v := range c.differ {
			got, ok := Normalize(nil, []byte(v), c.coll, c.prefix)
			if ok && bytes.Equal(got, first) {
				t.Errorf("%s prefix %d: %q and %q both -> %q: want different", c.coll.Name, c.prefix, c.equal[0], v, got)
			}
		}
	}
}

// fuzzColls are the collation classes FuzzNormalize checks against a
// reference comparison.
var fuzzColls = []schema.Collation{collNone, collBinary, collBin, collNopadBin, collCI, collNopadCI, collCS, collLatin1Bin}

// refEqual is an independent statement of equality under a collation class
// (after an index prefix): the comparison Normalize must agree with.
func refEqual(a, b []byte, coll schema.Collation, prefix int) bool {
	cut := func(s []byte) []byte {
		if prefix <= 0 {
			return s
		}
		if coll.Name == "" || coll.Charset == "binary" || coll.Charset == "latin1" {
			return s[:min(prefix, len(s))]
		}
		r := []rune(string(s))
		return []byte(string(r[:min(prefix, len(r))]))
	}
	a, b = cut(a), cut(b)
	if coll.PadSpace {
		a, b = bytes.TrimRight(a, " "), bytes.TrimRight(b, " ")
	}
	if coll.CaseInsensitive {
		return strings.EqualFold(string(a), string(b)) // only ASCII reaches here
	}
	return bytes.Equal(a, b)
}

// FuzzNormalize checks, for every collation class, that two values equal
// under the reference comparison normalize equal (keys never finer than
// the target's equality), that unequal ones normalize differently (the
// exact classes are not coarser either), and that normalizing is
// idempotent.
func FuzzNormalize(f *testing.F) {
	f.Add([]byte("abc"), []byte("ABC  "), uint8(4), uint8(0))
	f.Add([]byte("é a"), []byte("é"), uint8(2), uint8(0))
	f.Add([]byte("😀x"), []byte("😀y"), uint8(2), uint8(1))
	f.Add([]byte("ab\x00"), []byte("ab"), uint8(1), uint8(0))
	f.Add([]byte("a\xffb"), []byte("a\xff"), uint8(2), uint8(2))
	f.Add([]byte("Ab  "), []byte("aB"), uint8(5), uint8(3))
	f.Fuzz(func(t *testing.T, a, b []byte, which, prefix uint8) {
		coll := fuzzColls[int(which)%len(fuzzColls)]
		p := int(prefix % 8)
		na, okA := Normalize(nil, a, coll, p)
		nb, okB := Normalize(nil, b, coll, p)
		for _, n := range []struct {
			in, out []byte
			ok      bool
		}{{a, na, okA}, {b, nb, okB}} {
			if !n.ok {
				continue
			}
			again, ok := Normalize(nil, n.out, coll, p)
			if !ok || !bytes.Equal(again, n.out) {
				t.Fatalf("%s prefix %d: %q -> %q -> %q, %v: not idempotent", coll.Name, p, n.in, n.out, again, ok)
			}
			if coll.CaseInsensitive && !isPrintableASCII(n.in) {
				t.Fatalf("%s: %q normalized although not printable ASCII", coll.Name, n.in)
			}
			if coll.Binary && coll.Charset == "utf8mb4" && p > 0 && !utf8.Valid(n.out) {
				t.Fatalf("%s prefix %d: %q cut into %q, not whole characters", coll.Name, p, n.in, n.out)
			}
		}
		if !okA || !okB {
			return
		}
		eq := refEqual(a, b, coll, p)
		if got := bytes.Equal(na, nb); got != eq {
			t.Fatalf("%s prefix %d: %q -> %q, %q -> %q; reference equal = %v", coll.Name, p, a, na, b, nb, eq)
		}
	})
}

func isPrintableASCII(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// BenchmarkNormalize folds a sysbench-like CHAR(120) value in a _ci
// collation: the common case of a unique string key.
func BenchmarkNormalize(b *testing.B) {
	coll := schema.ClassifyCollation("utf8mb4_general_ci", "utf8mb4")
	s := []byte("68487932199-96439406143-93774651418-41631865787-96406072701-20604855487-25459966574-28203206787-41238978918-19503783441")
	var dst []byte
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst, _ = Normalize(dst[:0], s, coll, 0)
	}
}

// TestWordAtATime checks the eight-bytes-at-once helpers of Normalize
// against byte-by-byte ones: every byte value at every place of a word
// and of the tail, among printable and lower-case neighbours.
func TestWordAtATime(t *testing.T) {
	for _, fill := range []byte{'a', 'z', ' ', '~', 'A', '{', '`'} {
		for n := 1; n <= 19; n++ {
			for at := 0; at < n; at++ {
				for b := 0; b < 256; b++ {
					s := bytes.Repeat([]byte{fill}, n)
					s[at] = byte(b)
					wantOK := true
					for _, c := range s {
						if c < 0x20 || c > 0x7e {
							wantOK = false
						}
					}
					if printableASCII(s) != wantOK {
						t.Fatalf("printableASCII(%q) = %v", s, !wantOK)
					}
					if !wantOK {
						continue
					}
					got := make([]byte, n)
					upperASCII(got, s)
					if want := bytes.ToUpper(s); !bytes.Equal(got, want) {
						t.Fatalf("upperASCII(%q) = %q, want %q", s, got, want)
					}
				}
			}
		}
	}
}
