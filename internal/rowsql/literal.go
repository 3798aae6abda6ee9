package rowsql

import (
	"fmt"
	"math"
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/sqlquote"
)

// literal renders row values as SQL literals that reproduce the stored
// value exactly:
//   - integers and DECIMAL in decimal digits;
//   - FLOAT and DOUBLE as the exact double in exponent form (the server
//     parses a literal with an exponent as a double, then rounds a FLOAT
//     column back to the same float32);
//   - temporals as text (TIMESTAMP in UTC: sessions run with time_zone
//     '+00:00');
//   - strings as escaped literals (sqlquote.AppendEscaped) with the
//     source charset's introducer (_binary for binary data), so no
//     connection-charset conversion happens and the column's own collation applies in comparisons (the
//     index stays usable). Escaping grows a value by a few percent at most
//     where hex would double it, so a value that fits the target's
//     max_allowed_packet on the source fits in our statement too;
//   - ENUM and SET by their member names when the table map lists them
//     (robust to reordered definitions), otherwise by number.
//
// lax is set when a value needs a relaxed sql_mode to be stored (the ENUM
// error value 0, which only non-strict modes accept).
type literal struct {
	lax bool
}

// value renders a value a statement writes into its column (a VALUES
// list, an assignment), never one it compares: a string the column stores
// as it is (plan.Col.StoreBytes) goes as a _binary literal, which the
// server stores as the same bytes (validated against the column's charset
// as they are copied in, as any literal is) without first counting its
// characters and checking it in its own charset, as it does for an
// introducer of a charset (THD::make_string_literal_charset: 9% of the
// target's CPU samples on the documents benchmark).
// apply.BenchmarkWideLiterals: 0.82-0.86x the target's CPU of the
// charset's introducer on JSON document inserts and updates. A
// comparison keeps the charset's introducer: a binary string would
// compare bytes, not the column's collation.
func (l *literal) value(dst []byte, v *binlog.Value, src *binlog.Column, col *plan.Col) ([]byte, error) {
	if col.StoreBytes && v.Kind == binlog.KindString {
		return sqlquote.AppendEscaped(dst, "binary", v.B), nil
	}
	return l.append(dst, v, src, col)
}

func (l *literal) append(dst []byte, v *binlog.Value, src *binlog.Column, col *plan.Col) ([]byte, error) {
	switch v.Kind {
	case binlog.KindNull:
		return append(dst, "NULL"...), nil
	case binlog.KindInt, binlog.KindYear, binlog.KindUint, binlog.KindFloat, binlog.KindDouble, binlog.KindDecimal:
		return appendText(dst, v)
	case binlog.KindBit:
		return strconv.AppendUint(dst, uint64(v.N), 10), nil
	case binlog.KindDate, binlog.KindTime, binlog.KindDateTime, binlog.KindTimestamp:
		dst = append(dst, '\'')
		dst, err := appendText(dst, v)
		return append(dst, '\''), err
	case binlog.KindString, binlog.KindJSON:
		b := v.B
		if v.Kind == binlog.KindJSON {
			text, err := binlog.AppendJSON(nil, v.B)
			if err != nil {
				return dst, err
			}
			b = text
		}
		return appendString(dst, b, col.Introducer), nil
	case binlog.KindGeometry:
		return appendString(dst, v.B, ""), nil
	case binlog.KindEnum:
		if v.N == 0 {
			l.lax = true
			return append(dst, '0'), nil
		}
		if src != nil && int(v.N) <= len(src.EnumValues) {
			return appendString(dst, src.EnumValues[v.N-1], col.Introducer), nil
		}
		return strconv.AppendInt(dst, v.N, 10), nil
	case binlog.KindSet:
		if src != nil && len(src.SetValues) > 0 {
			return appendSetNames(dst, uint64(v.N), src.SetValues, col.Introducer)
		}
		return strconv.AppendUint(dst, uint64(v.N), 10), nil
	case binlog.KindAbsent:
		return dst, fmt.Errorf("value missing from the row image")
	}
	return dst, fmt.Errorf("cannot render a %s value", v.Kind)
}

// appendText writes the text of a number or a temporal, which a literal
// and a LOAD DATA file (load.go) both carry: integers and DECIMAL in
// decimal digits, FLOAT and DOUBLE as the exact double in exponent form,
// temporals unquoted. Other kinds are an error.
func appendText(dst []byte, v *binlog.Value) ([]byte, error) {
	switch v.Kind {
	case binlog.KindInt, binlog.KindYear:
		return strconv.AppendInt(dst, v.N, 10), nil
	case binlog.KindUint:
		return strconv.AppendUint(dst, uint64(v.N), 10), nil
	case binlog.KindFloat, binlog.KindDouble:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, fmt.Errorf("non-finite floating-point value")
		}
		return strconv.AppendFloat(dst, f, 'e', -1, 64), nil
	case binlog.KindDecimal:
		return binlog.AppendDecimal(dst, v.B, int(v.Prec), int(v.Scale))
	case binlog.KindDate, binlog.KindTime, binlog.KindDateTime, binlog.KindTimestamp:
		return v.AppendText(dst), nil
	}
	return dst, fmt.Errorf("no text form for a %s value", v.Kind)
}

// appendString writes b as a string literal with the introducer of its
// character set (_binary for binary data, charset ""), in sqlquote's
// compact escaped form: rows are written in apply's sessions, whose
// sql_mode binlane sets without NO_BACKSLASH_ESCAPES.
func appendString(dst, b []byte, charset string) []byte {
	if charset == "" {
		charset = "binary"
	}
	return sqlquote.AppendEscaped(dst, charset, b)
}

func appendSetNames(dst []byte, bits uint64, names [][]byte, charset string) ([]byte, error) {
	var joined []byte
	for i := 0; i < len(names) && i < 64; i++ {
		if bits&(1<<uint(i)) == 0 {
			continue
		}
		if len(joined) > 0 {
			joined = append(joined, ',')
		}
		joined = append(joined, names[i]...)
	}
	if len(names) < 64 && bits>>uint(len(names)) != 0 {
		return dst, fmt.Errorf("SET value 0x%x has bits beyond its %d members", bits, len(names))
	}
	return appendString(dst, joined, charset), nil
}
