package binlog

import (
	"math"
	"strconv"
	"time"
)

// Kind says how a Value's fields are to be read.
type Kind uint8

const (
	KindAbsent    Kind = iota // column not in this row image (MINIMAL/NOBLOB)
	KindNull                  // SQL NULL
	KindInt                   // N (signed)
	KindUint                  // uint64(N)
	KindFloat                 // float32 bits in N
	KindDouble                // float64 bits in N
	KindDecimal               // B: binary decimal; Prec, Scale
	KindYear                  // N: the year (0 for the zero year)
	KindDate                  // N: packed temporal (see Temporal)
	KindTime                  // N: packed temporal, Neg; Micro; Fsp
	KindDateTime              // N: packed temporal; Micro; Fsp
	KindTimestamp             // N: seconds since the epoch (UTC); Micro; Fsp
	KindString                // B: bytes in the column's charset (CHAR, VARCHAR, TEXT, BLOB, BINARY; see below)
	KindEnum                  // N: 1-based index, 0 = the error value ''
	KindSet                   // N: member bitmap
	KindBit                   // N: the bits as an unsigned integer; Prec = width in bits
	KindJSON                  // B: MySQL binary JSON
	KindGeometry              // B: SRID + WKB
)

// KindString values are what SELECT returns: CHAR loses its trailing
// spaces (the server strips them before logging, and SELECT does too), and
// BINARY(n), whose trailing 0x00 bytes the server also strips, is padded
// back to n bytes when the table map carries charset metadata (always, on
// MariaDB sources; MySQL needs binlog_row_metadata=FULL or MINIMAL). That
// also covers MariaDB's INET6 and UUID, logged as BINARY(16). MariaDB's JSON
// is LONGTEXT: a KindString holding the JSON text.

var kindNames = [...]string{"absent", "null", "int", "uint", "float", "double", "decimal", "year", "date",
	"time", "datetime", "timestamp", "string", "enum", "set", "bit", "json", "geometry"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is one decoded column value. It refers to the event's bytes (B)
// rather than copying them, so it is only valid while the event is.
type Value struct {
	B     []byte
	N     int64
	Micro uint32 // microseconds of temporal values
	Kind  Kind
	Prec  uint8 // decimal precision, bit width (low 8 bits), temporal fsp
	Scale uint8 // decimal scale
	Neg   bool  // negative TIME
}

// IsNull reports SQL NULL.
func (v *Value) IsNull() bool { return v.Kind == KindNull }

// Int returns an integer value (KindInt, KindYear, KindEnum).
func (v *Value) Int() int64 { return v.N }

// Uint returns an unsigned value (KindUint, KindSet, KindBit).
func (v *Value) Uint() uint64 { return uint64(v.N) }

// Float returns a FLOAT or DOUBLE value as float64 (exact for FLOAT).
func (v *Value) Float() float64 {
	if v.Kind == KindFloat {
		return float64(math.Float32frombits(uint32(v.N)))
	}
	return math.Float64frombits(uint64(v.N))
}

// Temporal is a broken-down DATE, TIME or DATETIME.
type Temporal struct {
	Neg                                    bool
	Year, Month, Day, Hour, Minute, Second int
	Micro                                  int
}

// packTemporal stores date and time parts in one int64: 14 bits year, 4
// month, 5 day, 10 hour (TIME reaches 838), 6 minute, 6 second.
func packTemporal(year, month, day, hour, minute, second int) int64 {
	return int64(year)<<31 | int64(month)<<27 | int64(day)<<22 | int64(hour)<<12 | int64(minute)<<6 | int64(second)
}

// Temporal breaks down a KindDate, KindTime or KindDateTime value; for
// KindTimestamp it gives the UTC wall clock.
func (v *Value) Temporal() Temporal {
	if v.Kind == KindTimestamp {
		// Only 0 seconds and 0 µs is the zero timestamp: 1970-01-01
		// 00:00:00.000001 UTC is a valid TIMESTAMP(6).
		if v.N == 0 && v.Micro == 0 {
			return Temporal{}
		}
		t := time.Unix(v.N, 0).UTC()
		return Temporal{Year: t.Year(), Month: int(t.Month()), Day: t.Day(), Hour: t.Hour(), Minute: t.Minute(),
			Second: t.Second(), Micro: int(v.Micro)}
	}
	n := v.N
	return Temporal{
		Neg:    v.Neg,
		Year:   int(n >> 31 & 0x3fff),
		Month:  int(n >> 27 & 0xf),
		Day:    int(n >> 22 & 0x1f),
		Hour:   int(n >> 12 & 0x3ff),
		Minute: int(n >> 6 & 0x3f),
		Second: int(n & 0x3f),
		Micro:  int(v.Micro),
	}
}

// AppendText appends the value as SELECT would show it in a client with a
// UTC session time zone: numbers in decimal, DECIMAL exactly, temporals as
// text with the column's fractional digits, strings and binary data as
// their raw bytes, MySQL binary JSON as JSON text, NULL as "NULL".
// Differences from SELECT's text, each chosen so that the text reads back
// as the same value:
//   - ENUM and SET show their index and bitmap (ENUM+0, SET+0; the names
//     are in the table map), BIT its unsigned value (BIT+0; SELECT sends
//     the raw bytes);
//   - the zero YEAR is "0000" (as CAST(y AS CHAR); the text protocol sends
//     "0", which a YEAR column would read as 2000);
//   - FLOAT is the shortest text that reads back as the same float32
//     (MariaDB's SELECT rounds to 6 digits), DOUBLE the shortest that reads
//     back as the same float64, with Go's exponent form ("1e+300").
func (v *Value) AppendText(dst []byte) []byte {
	switch v.Kind {
	case KindAbsent:
		return append(dst, "<absent>"...)
	case KindNull:
		return append(dst, "NULL"...)
	case KindInt, KindYear, KindEnum:
		if v.Kind == KindYear && v.N == 0 {
			return append(dst, "0000"...)
		}
		return strconv.AppendInt(dst, v.N, 10)
	case KindUint, KindSet, KindBit:
		return strconv.AppendUint(dst, uint64(v.N), 10)
	case KindFloat:
		return strconv.AppendFloat(dst, float64(math.Float32frombits(uint32(v.N))), 'g', -1, 32)
	case KindDouble:
		return strconv.AppendFloat(dst, math.Float64frombits(uint64(v.N)), 'g', -1, 64)
	case KindDecimal:
		out, err := AppendDecimal(dst, v.B, int(v.Prec), int(v.Scale))
		if err != nil {
			return append(dst, "<bad decimal>"...)
		}
		return out
	case KindDate, KindTime, KindDateTime, KindTimestamp:
		return v.appendTemporal(dst)
	case KindJSON:
		out, err := AppendJSON(dst, v.B)
		if err != nil {
			return append(dst, "<bad json>"...)
		}
		return out
	}
	return append(dst, v.B...)
}

func (v *Value) appendTemporal(dst []byte) []byte {
	t := v.Temporal()
	switch v.Kind {
	case KindDate:
		return appendDate(dst, t)
	case KindTime:
		if t.Neg {
			dst = append(dst, '-')
		}
		dst = appendPadded(dst, t.Hour, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, t.Minute, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, t.Second, 2)
	default:
		dst = appendDate(dst, t)
		dst = append(dst, ' ')
		dst = appendPadded(dst, t.Hour, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, t.Minute, 2)
		dst = append(dst, ':')
		dst = appendPadded(dst, t.Second, 2)
	}
	if v.Prec > 0 {
		dst = append(dst, '.')
		frac := t.Micro
		for i := int(v.Prec); i < 6; i++ {
			frac /= 10
		}
		dst = appendPadded(dst, frac, int(v.Prec))
	}
	return dst
}

func appendDate(dst []byte, t Temporal) []byte {
	dst = appendPadded(dst, t.Year, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, t.Month, 2)
	dst = append(dst, '-')
	return appendPadded(dst, t.Day, 2)
}

func appendPadded(dst []byte, n, width int) []byte {
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], int64(n), 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

// String formats the value with AppendText.
func (v Value) String() string { return string(v.AppendText(nil)) }
