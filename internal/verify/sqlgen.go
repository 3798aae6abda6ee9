package verify

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/sqlquote"
)

// column is one column as information_schema describes it.
type column struct {
	Name      string
	DataType  string // DATA_TYPE, lower case: "int", "varchar", ...
	Type      string // COLUMN_TYPE: "int(10) unsigned", "varchar(20)", ...
	Charset   string // empty for non-character types
	Collation string
	Nullable  bool
	Precision int64 // NUMERIC_PRECISION (DECIMAL only)
	Scale     int64 // NUMERIC_SCALE (DECIMAL only)
}

// encoding says how a column's value is turned into text for hashing. Each
// encoding is injective for the column's stored values and never produces
// the separator '#', so the row string decodes back to one row.
type encoding int

const (
	// encText: the server's own rendering is exact. Integers and DECIMAL
	// print every digit at a fixed scale; DATE, TIME, DATETIME, TIMESTAMP
	// print at their declared fractional precision (TIMESTAMP in the
	// session's UTC, where no two instants share a text); YEAR.
	encText encoding = iota
	// encDouble: CAST(x AS DOUBLE). DOUBLE renders shortest round-trip
	// digits, which is exact, but FLOAT renders only 6 digits (16777217
	// prints as 16777200) and DOUBLE(M,D) renders D decimals; widening to
	// DOUBLE is exact and restores the round-trip rendering.
	encDouble
	// encNumber: x+0, the stored integer of BIT, ENUM (index) and SET
	// (bitmask); names could not tell an ENUM member that is the empty
	// string from the empty error value.
	encNumber
	// encHex: HEX(x), the stored bytes. Strings in every charset and
	// collation (so 'abc' differs from 'ABC' and 'a' from 'a '), binary
	// strings, BLOB/TEXT, JSON (text in MariaDB), geometry (SRID + WKB),
	// INET6/UUID and any type this list does not know.
	encHex
)

func (c column) encoding() encoding {
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint",
		"decimal", "numeric", "date", "time", "datetime", "timestamp", "year":
		return encText
	case "float", "double", "real", "double precision":
		return encDouble
	case "bit", "enum", "set":
		return encNumber
	default:
		return encHex
	}
}

// canonical is the SQL expression whose text stands for the column's value
// in checksums and in row comparisons. It is NULL exactly when the column
// is NULL.
func (c column) canonical() string {
	q := sqlquote.Name(c.Name)
	switch c.encoding() {
	case encText:
		return q
	case encDouble:
		return "CAST(" + q + " AS DOUBLE)"
	case encNumber:
		return "(" + q + "+0)"
	default:
		return "HEX(" + q + ")"
	}
}

// rowString is the SQL expression of one row's canonical text: a bitmask of
// NULL columns (CONCAT_WS skips NULLs, so without it NULL would equal an
// absent value and shift the others), then every column's canonical text,
// separated by '#', which no encoding produces.
func rowString(cols []column) string {
	var b strings.Builder
	b.WriteString("CONCAT_WS('#', CONCAT(")
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("ISNULL(" + sqlquote.Name(c.Name) + ")")
	}
	b.WriteString(")")
	for _, c := range cols {
		b.WriteString(", " + c.canonical())
	}
	b.WriteString(")")
	return b.String()
}

// rowHash folds the row string's MD5 to an unsigned 64-bit integer. Chunks
// SUM it rather than BIT_XOR it: a sum is exact (the server returns a
// DECIMAL) and counts duplicate rows, which XOR would cancel out.
func rowHash(cols []column) string {
	return "CAST(CONV(SUBSTRING(MD5(" + rowString(cols) + "), 1, 16), 16, 10) AS UNSIGNED)"
}

// param is the SQL placeholder expression for a bound on this key column.
// It gives the bound the column's own type, charset and collation, so the
// comparison follows the index order and the range optimizer can use the
// index (a utf8mb4 constant against a utf8mb3 column would not).
func (c column) param() string {
	switch c.DataType {
	case "decimal", "numeric":
		return fmt.Sprintf("CAST(? AS DECIMAL(%d,%d))", c.Precision, c.Scale)
	case "char", "varchar":
		return fmt.Sprintf("CONVERT(? USING %s) COLLATE %s", c.Charset, c.Collation)
	case "binary", "varbinary":
		// Raw bytes sent as a string parameter are checked as utf8mb4 by
		// the server; hex is plain ASCII.
		return "UNHEX(?)"
	}
	return "?"
}

// arg converts a key value as the server returned it (text protocol) into
// the argument for param.
func (c column) arg(raw []byte) (any, error) {
	switch c.DataType {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint", "year":
		if strings.Contains(c.Type, "unsigned") {
			v, err := strconv.ParseUint(string(raw), 10, 64)
			return v, err
		}
		v, err := strconv.ParseInt(string(raw), 10, 64)
		return v, err
	case "binary", "varbinary":
		return hex.EncodeToString(raw), nil
	}
	return string(raw), nil
}

// keyBound is one end of a chunk: the key values of a source row, already
// converted to query arguments. A nil bound is unbounded.
type keyBound []any

// rangeWhere returns the predicate lower < key <= upper (either end may be
// nil) and its arguments. Row constructors such as (a,b) > (?,?) make
// MariaDB scan the whole index, so the comparison is spelled out as
// a > ? OR (a = ? AND (b > ? OR (b = ? AND c > ?))), which the range
// optimizer turns into one index range.
func rangeWhere(key []column, lower, upper keyBound) (string, []any) {
	var parts []string
	var args []any
	if lower != nil {
		p, a := nested(key, lower, ">", ">")
		parts, args = append(parts, p), append(args, a...)
	}
	if upper != nil {
		p, a := nested(key, upper, "<", "<=")
		parts, args = append(parts, p), append(args, a...)
	}
	return strings.Join(parts, " AND "), args
}

func nested(key []column, vals keyBound, op, last string) (string, []any) {
	var args []any
	var build func(i int) string
	build = func(i int) string {
		col, p := sqlquote.Name(key[i].Name), key[i].param()
		if i == len(key)-1 {
			args = append(args, vals[i])
			return col + " " + last + " " + p
		}
		args = append(args, vals[i], vals[i])
		return "(" + col + " " + op + " " + p + " OR (" + col + " = " + p + " AND " + build(i+1) + "))"
	}
	s := build(0)
	if len(key) == 1 {
		s = "(" + s + ")"
	}
	return s, args
}

// names returns the quoted column names joined by ", ".
func names(cols []column) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = sqlquote.Name(c.Name)
	}
	return strings.Join(q, ", ")
}
