package sqlquote

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// text is a string or a byte slice: the quoters take either without a
// conversion (and its allocation) at the call site.
type text interface{ ~string | ~[]byte }

// Name quotes an identifier: `name`, a backtick doubled.
func Name(s string) string { return string(AppendName(nil, s)) }

// AppendName appends Name(s) to dst.
func AppendName[T text](dst []byte, s T) []byte { return appendDoubled(dst, '`', s) }

// appendDoubled appends s between quotes q, a q in s written twice.
func appendDoubled[T text](dst []byte, q byte, s T) []byte {
	dst = slices.Grow(dst, len(s)+2)
	dst = append(dst, q)
	from := 0
	for i := 0; i < len(s); i++ {
		if s[i] == q {
			dst = append(dst, s[from:i+1]...)
			from = i // the quote goes out twice
		}
	}
	dst = append(dst, s[from:]...)
	return append(dst, q)
}

// Qualified quotes a schema-qualified name: `schema`.`name`, or `schema`
// alone when name is "".
func Qualified(schema, name string) string {
	b := AppendName(make([]byte, 0, len(schema)+len(name)+5), schema)
	if name != "" {
		b = append(b, '.')
		b = AppendName(b, name)
	}
	return string(b)
}

// Account quotes an account as user@host in identifier quotes
// (`user`@`host`), which CREATE USER, GRANT, DEFINER= and the like take in
// every sql_mode; a string-literal account would need the backslash rule.
func Account(user, host string) string {
	b := AppendName(make([]byte, 0, len(user)+len(host)+5), user)
	b = append(b, '@')
	return string(AppendName(b, host))
}

// SplitAccount splits CURRENT_USER()'s or a definer's user@host at its
// last @ (a user name may hold one, a host name may not). Without an @ the
// host is "%", as an account named by its user alone is.
func SplitAccount(s string) (user, host string) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return s, "%"
	}
	return s[:i], s[i+1:]
}

// Grantee is information_schema's GRANTEE of an account: 'user'@'host'
// with nothing escaped, as the server writes it. It is a value to compare
// (bound as a parameter), never SQL.
func Grantee(user, host string) string { return "'" + user + "'@'" + host + "'" }

// String quotes s as a string literal that reads the same under every
// sql_mode (the package doc says how).
func String(s string) string { return string(AppendString(nil, s)) }

// AppendString appends String(s) to dst.
func AppendString[T text](dst []byte, s T) []byte {
	switch formOf(s) {
	case notText:
		return AppendHex(dst, "", s)
	case escaped:
		return AppendHex(dst, "utf8mb4", s)
	}
	return appendDoubled(dst, '\'', s)
}

// The forms String writes a value in.
const (
	quoted  = iota // '...': printable ASCII but the backslash, and valid UTF-8
	escaped        // _utf8mb4 X'..': UTF-8 text with a backslash or a control byte
	notText        // X'..': not UTF-8, so bytes (a binary string, stored as they are)
)

// formOf says in which form String writes s.
func formOf[T text](s T) int {
	form, ascii := quoted, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 0x80:
			ascii = false
		case c < 0x20 || c == 0x7f || c == '\\':
			form = escaped
		}
	}
	if ascii {
		return form
	}
	valid := false
	if b, ok := any(s).([]byte); ok {
		valid = utf8.Valid(b)
	} else {
		valid = utf8.ValidString(string(s))
	}
	if !valid {
		return notText
	}
	return form
}

// AppendHex appends b as a hexadecimal literal with charset's introducer
// (_charset X'..'; none when charset is ""): no escapes, so the same in
// every sql_mode, for any bytes. An empty b is an empty quoted string
// after the introducer (an empty X literal is not accepted everywhere).
func AppendHex[T text](dst []byte, charset string, b T) []byte {
	if charset != "" {
		dst = append(dst, '_')
		dst = append(dst, charset...)
		dst = append(dst, ' ')
	}
	if len(b) == 0 {
		return append(dst, "''"...)
	}
	dst = slices.Grow(dst, 2*len(b)+3)
	dst = append(dst, "X'"...)
	for i := 0; i < len(b); i++ {
		dst = append(dst, hexDigits[b[i]>>4], hexDigits[b[i]&0xf])
	}
	return append(dst, '\'')
}

const hexDigits = "0123456789abcdef"

// AppendEscaped appends b as a backslash-escaped literal, after charset's
// introducer (_charset'...'; none when charset is ""): the compact form of
// the apply path's row values. It is correct only in a session whose
// sql_mode binlane set without NO_BACKSLASH_ESCAPES (the package doc says
// why it exists); use String anywhere else.
//
// The escaped bytes are those that end or alter a quoted string (quote,
// backslash, NUL) plus CR, LF and Ctrl-Z, so that statements stay
// printable. The escapes work byte by byte, so the value's charset does
// not matter as long as no escape can be swallowed by a byte before it:
// the apply session's character_set_client is binary (dsn.ApplySession),
// where each byte is read as itself, and in utf8mb4 no multi-byte
// sequence holds an ASCII byte.
//
// A long byte slice (sparseMin and more: documents, wide text) is scanned
// for its escapes with IndexByte (appendSparse), a short value or a string
// a word at a time (appendWords); both write the same bytes.
func AppendEscaped[T text](dst []byte, charset string, b T) []byte {
	if charset != "" {
		dst = append(dst, '_')
		dst = append(dst, charset...)
	}
	dst = append(dst, '\'')
	dst = slices.Grow(dst, len(b)+len(b)/32+2)
	from := 0
	if len(b) >= sparseMin {
		if v, ok := any(b).([]byte); ok {
			dst, from = appendSparse(dst, v)
		}
	}
	dst = appendWords(dst, b, from)
	return append(dst, '\'')
}

// sparseMin is the length from which a value's escapes are found with
// IndexByte, one scan per escaped byte value, instead of a word at a time:
// in a long value escapes are rare, and the runtime's IndexByte reads 32
// bytes per instruction (BenchmarkAppendEscaped/json: 2-3x faster).
// A short value would pay six calls for a few words.
const sparseMin = 256

// escapedBytes are the bytes escapes has a letter for.
const escapedBytes = "\x00\n\r\x1a'\\"

// appendSparse appends the escaped b[:from] and returns from: where
// appendWords takes over, len(b) when the value ended. It keeps, for each
// escaped byte value, where it next occurs (one IndexByte from the last
// occurrence, so each scan reads a stretch once) and copies the stretches
// between them whole. Escapes close together make a call per few bytes,
// so after a run of them the rest goes to the word loop.
func appendSparse(dst, b []byte) ([]byte, int) {
	var next [len(escapedBytes)]int
	for k := range next {
		next[k] = indexFrom(b, 0, escapedBytes[k])
	}
	from, near := 0, 0 // near: escapes in a row closer than 16 bytes
	for {
		k := 0
		for j := 1; j < len(next); j++ {
			if next[j] < next[k] {
				k = j
			}
		}
		i := next[k]
		if i == len(b) {
			return append(dst, b[from:]...), len(b)
		}
		if i-from < 16 {
			if near++; near == 8 {
				return dst, from
			}
		} else {
			near = 0
		}
		dst = append(dst, b[from:i]...)
		dst = append(dst, '\\', escapes[b[i]])
		from = i + 1
		next[k] = indexFrom(b, from, escapedBytes[k])
	}
}

// indexFrom is the index of the first c in b at or after from, or len(b).
func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return len(b)
}

// appendWords appends b[from:] escaped, eight bytes at a time while none
// of them may need an escape: a row value is mostly plain, and the table
// below costs a lookup and a branch per byte (docs' JSON: a quarter of
// binlane's CPU went there; BenchmarkAppendEscaped/json 2.5x faster this
// way).
func appendWords[T text](dst []byte, b T, from int) []byte {
	i := from
	for i < len(b) {
		if i+8 <= len(b) && !mayEscape(load8(b, i)) {
			i += 8
			continue
		}
		end := min(i+8, len(b))
		for ; i < end; i++ {
			esc := escapes[b[i]]
			if esc == 0 {
				continue
			}
			dst = append(dst, b[from:i]...)
			dst = append(dst, '\\', esc)
			from = i + 1
		}
	}
	return append(dst, b[from:]...)
}

// load8 reads b[i:i+8] as a little-endian word (one load once compiled).
func load8[T text](b T, i int) uint64 {
	b = b[i : i+8]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// mayEscape reports whether a word of eight bytes may hold one that
// escapes has a letter for: a byte below 0x1b (NUL, LF, CR and Ctrl-Z
// among them; the others take the slow path for nothing), a quote or a
// backslash. The tests are the exact "has a byte below n" and "has a zero
// byte" of bit-twiddling folklore: a byte of 0x80 or more never sets its
// lane's flag (the ^x term), so UTF-8 text stays on the fast path.
func mayEscape(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	below := (x - lo*0x1b) & ^x & hi
	q, bs := x^(lo*'\''), x^(lo*'\\')
	return below|(q-lo)&^q&hi|(bs-lo)&^bs&hi != 0
}

// escapes maps a byte to the letter of its backslash escape (0: none).
var escapes = [256]byte{0: '0', '\n': 'n', '\r': 'r', 0x1a: 'Z', '\'': '\'', '\\': '\\'}

// ErrNotPlain is Setting's error for a value that is not a plain name.
var ErrNotPlain = errors.New("not a plain name binlane can set")

// Setting quotes the value of a session variable (sql_mode, time_zone, a
// character set or collation name) as a string literal, if it is a plain
// name: letters, digits, and _ , + : / - and space. Such a value needs no
// escape in any sql_mode; anything else (it came from the source) is
// refused with ErrNotPlain.
func Setting(v string) (string, error) {
	for i := 0; i < len(v); i++ {
		if !settingByte(v[i]) {
			return "", fmt.Errorf("%q: %w", v, ErrNotPlain)
		}
	}
	return "'" + v + "'", nil
}

func settingByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("_,+:/- ", c) >= 0
}
