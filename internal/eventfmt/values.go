// Package eventfmt prints decoded binlog events for people: a text form
// modelled on `mariadb-binlog -vv` (positions, event headers, GTIDs, table
// maps, and each row's columns with name, type and value) and a JSON form
// with one object per line.
//
// The package owns presentation only. It must never decide anything about
// replication (groups, positions, what to apply): it shows what the decoder
// produced, and shows undecodable values as such instead of failing.
package eventfmt

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/binlane/binlane/internal/binlog"
)

// appendValue formats a column value for the text form: strings and
// temporals quoted, ENUM and SET by name, BIT in b'…' form.
func appendValue(dst []byte, v *binlog.Value, c *binlog.Column) []byte {
	switch v.Kind {
	case binlog.KindNull:
		return append(dst, "NULL"...)
	case binlog.KindString:
		if vec, ok := vectorText(v, c); ok {
			return appendQuoted(dst, vec)
		}
		return appendQuoted(dst, v.B)
	case binlog.KindEnum, binlog.KindSet:
		return appendQuoted(dst, []byte(enumSetText(v, c)))
	case binlog.KindBit:
		return appendBits(dst, v)
	case binlog.KindGeometry:
		return append(append(append(dst, "X'"...), hex.EncodeToString(v.B)...), '\'')
	case binlog.KindDate, binlog.KindTime, binlog.KindDateTime, binlog.KindTimestamp, binlog.KindJSON:
		return appendQuoted(dst, v.AppendText(nil))
	}
	return v.AppendText(dst)
}

// vectorText writes a VECTOR's float32s as MySQL's VECTOR_TO_STRING
// lists them, "[1.1,2.2]"; false when the value is not a whole number of
// them (it is then shown as bytes).
func vectorText(v *binlog.Value, c *binlog.Column) ([]byte, bool) {
	if c.Type != binlog.TypeVector || len(v.B)%4 != 0 {
		return nil, false
	}
	out := []byte{'['}
	for i := 0; i < len(v.B); i += 4 {
		if i > 0 {
			out = append(out, ',')
		}
		f := math.Float32frombits(binary.LittleEndian.Uint32(v.B[i:]))
		out = strconv.AppendFloat(out, float64(f), 'g', -1, 32)
	}
	return append(out, ']'), true
}

// enumSetText names an ENUM member or the members of a SET; indexes the
// table map does not name (no FULL metadata) stay numeric.
func enumSetText(v *binlog.Value, c *binlog.Column) string {
	if v.Kind == binlog.KindEnum {
		switch n := v.N; {
		case n == 0:
			return "" // the error value
		case n > 0 && int(n) <= len(c.EnumValues):
			return string(c.EnumValues[n-1])
		}
		return strconv.FormatInt(v.N, 10)
	}
	var out []byte
	bits := uint64(v.N)
	for i := 0; i < 64 && bits != 0; i++ {
		if bits&(1<<i) == 0 {
			continue
		}
		bits &^= 1 << i
		if len(out) > 0 {
			out = append(out, ',')
		}
		if i < len(c.SetValues) {
			out = append(out, c.SetValues[i]...)
		} else {
			out = append(out, '#')
			out = strconv.AppendInt(out, int64(i+1), 10)
		}
	}
	return string(out)
}

func appendBits(dst []byte, v *binlog.Value) []byte {
	width := int(v.Prec)
	if width == 0 || width > 64 {
		width = 64
	}
	dst = append(dst, "b'"...)
	for i := width - 1; i >= 0; i-- {
		dst = append(dst, '0'+byte(uint64(v.N)>>i&1))
	}
	return append(dst, '\'')
}

// appendQuoted single-quotes b, escaping quotes, backslashes and anything
// that is not printable UTF-8 (binary data shows as \xNN).
func appendQuoted(dst, b []byte) []byte {
	dst = append(dst, '\'')
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == '\'' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == utf8.RuneError && n <= 1, r < 0x20, r == 0x7f:
			dst = append(dst, `\x`...)
			dst = append(dst, hex.EncodeToString(b[:1])...)
			n = 1
		default:
			dst = append(dst, b[:n]...)
		}
		b = b[n:]
	}
	return append(dst, '\'')
}

// typeText describes a column like mariadb-binlog's comment does, with
// the parameters the metadata carries.
func typeText(c *binlog.Column) string {
	s := c.Type.String()
	switch c.Type {
	case binlog.TypeNewDecimal:
		s += "(" + strconv.Itoa(c.Precision()) + "," + strconv.Itoa(c.Scale()) + ")"
	case binlog.TypeVarchar, binlog.TypeVarString, binlog.TypeString, binlog.TypeBit:
		s += "(" + strconv.Itoa(int(c.Meta)) + ")"
	case binlog.TypeDateTime2, binlog.TypeTimestamp2, binlog.TypeTime2:
		if c.Fsp() > 0 {
			s += "(" + strconv.Itoa(c.Fsp()) + ")"
		}
	}
	if c.Unsigned {
		s += " UNSIGNED"
	}
	return s
}
