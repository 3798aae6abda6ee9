package writeset

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"

	"github.com/binlane/binlane/internal/schema"
)

// Normalize appends to dst a form of s such that two strings the target
// considers equal under coll (and the index prefix, in characters; 0 for the
// whole value) normalize to the same bytes. It returns false when it cannot
// be sure: the caller must then use a coarser key.
//
// What is handled exactly:
//   - binary strings (and columns without a collation): the bytes;
//   - _bin collations of ASCII-compatible charsets: the bytes, minus
//     trailing spaces under PAD SPACE;
//   - case-insensitive and other collations: printable ASCII only, with
//     letters folded to upper case for _ci collations and trailing spaces
//     trimmed under PAD SPACE. Anything else (accents, expansions such as
//     'ß' = 'ss', ignorable control characters) is uncertain, and so is
//     every value under a collation that merges ASCII characters beyond
//     case (schema.Collation.MergesASCII: Lithuanian 'y' = 'i', ...).
func Normalize(dst, s []byte, coll schema.Collation, prefix int) ([]byte, bool) {
	if coll.Name == "" || coll.Charset == "binary" {
		if prefix > 0 && len(s) > prefix {
			s = s[:prefix]
		}
		return append(dst, s...), true
	}
	if !asciiCompatible(coll.Charset) {
		return dst, false
	}
	if coll.Binary {
		if prefix > 0 {
			var ok bool
			if s, ok = cutChars(s, prefix, coll.Charset); !ok {
				return dst, false
			}
		}
		if coll.PadSpace {
			s = trimSpaces(s)
		}
		return append(dst, s...), true
	}
	if coll.MergesASCII {
		return dst, false
	}
	if !printableASCII(s) {
		return dst, false
	}
	if prefix > 0 && len(s) > prefix {
		s = s[:prefix] // ASCII: one byte per character
	}
	if coll.PadSpace {
		s = trimSpaces(s)
	}
	if !coll.CaseInsensitive {
		return append(dst, s...), true
	}
	// Into room made once: an append per byte costs a capacity check each.
	n := len(dst)
	dst = slices.Grow(dst, len(s))[:n+len(s)]
	upperASCII(dst[n:], s)
	return dst, true
}

// Bytes of a word, for testing eight bytes at once.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// printableASCII reports whether every byte of s is in 0x20..0x7e. Eight
// bytes at a time: w-0x20 sets the high bit of a byte below 0x20 (that
// was clear in w), w+1 that of a byte above 0x7e (or w had it), and no
// carry or borrow crosses into a byte unless one such byte is there.
func printableASCII(s []byte) bool {
	for len(s) >= 8 {
		w := binary.LittleEndian.Uint64(s)
		if ((w-0x20*ones)&^w|(w+ones)|w)&highs != 0 {
			return false
		}
		s = s[8:]
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

// upperASCII writes s to dst (as long) with a to z upper-cased; s must be
// printable ASCII. Eight bytes at a time: b+0x1f reaches the high bit from
// 'a' on, b+0x05 from '{' on (no carry: b <= 0x7e), so their difference
// marks the lower-case letters, whose 0x20 bit is flipped.
func upperASCII(dst, s []byte) {
	for len(s) >= 8 {
		w := binary.LittleEndian.Uint64(s)
		lower := (w + (0x80-'a')*ones) &^ (w + (0x80-'z'-1)*ones) & highs
		binary.LittleEndian.PutUint64(dst, w^lower>>2)
		s, dst = s[8:], dst[8:]
	}
	for i, c := range s {
		if c-'a' < 26 { // a to z (a byte below 'a' wraps past 26)
			c -= 'a' - 'A'
		}
		dst[i] = c
	}
}

func trimSpaces(s []byte) []byte {
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// asciiCompatible lists charsets in which ASCII characters are single bytes
// that mean ASCII and no multi-byte sequence contains a byte below 0x80.
// Not swe7: its bytes '@', '[', '\\', ']', '^', '`', '{', '|', '}' and '~' are
// the letters É, Ä, Ö, Å, Ü, é, ä, ö, å and ü.
func asciiCompatible(cs string) bool {
	switch cs {
	case "utf8mb4", "utf8mb3", "utf8", "latin1", "latin2", "latin5", "latin7", "ascii", "cp1250", "cp1251",
		"cp1256", "cp1257", "cp850", "cp852", "cp866", "koi8r", "koi8u", "greek", "hebrew", "armscii8",
		"geostd8", "keybcs2", "macce", "macroman", "dec8", "hp8", "tis620":
		return true
	}
	return false
}

// cutChars keeps the first n characters of s.
func cutChars(s []byte, n int, charset string) ([]byte, bool) {
	if charset != "utf8mb4" && charset != "utf8mb3" && charset != "utf8" {
		if len(s) > n {
			s = s[:n]
		}
		return s, true
	}
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return s, false
		}
		i += size
	}
	return s[:i], true
}
