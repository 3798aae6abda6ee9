package rowsql

import (
	"encoding/hex"
	"fmt"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// Chunk writes the rows of a copied chunk: multi-row INSERTs no larger
// than MaxStatement (a row larger than that goes alone), each checked to
// insert every row it carries. A plain INSERT, not INSERT IGNORE or
// REPLACE: a row already on the target means the copy and the stream
// disagree, which must stop the stream, not be papered over. Foreign keys
// are not checked: the tables a chunk references were copied before it
// (see package copier), and the source checked the rows when it wrote them.
// The statements run under a non-strict sql_mode, like row changes that
// carry values only that mode accepts: the target's table has the
// source's definition, so the values fit as the source stored them.
func (w *Writer) Chunk(t *txn.Txn, c *txn.Chunk) error {
	if len(c.Rows) == 0 {
		return nil
	}
	if err := w.session(binlog.RowsFlagNoForeignKeyChecks); err != nil {
		return err
	}
	head := chunkHead(c)
	subject := fmt.Sprintf("copied rows of %s.%s", schema.QuoteName(c.Schema), schema.QuoteName(c.Table))
	for i := 0; i < len(c.Rows); {
		w.begin()
		// The rows are what the source stored, into a table of the same
		// definition; some (an ENUM's '' for an invalid value, zero dates)
		// only the sql_mode that let the source store them accepts.
		w.lit.lax = true
		w.buf = append(w.buf, head...)
		n := 0
		for i < len(c.Rows) && (n == 0 || len(w.buf)-w.start < w.MaxStatement) {
			if n > 0 {
				w.buf = append(w.buf, ',')
			}
			var err error
			if w.buf, err = appendChunkRow(w.buf, c.Columns, c.Rows[i]); err != nil {
				return fmt.Errorf("%s: %w", subject, err)
			}
			i++
			n++
		}
		if err := w.end(Stmt{Expect: int64(n), Txn: t, What: "insert copied rows", Subject: subject}); err != nil {
			return err
		}
	}
	return nil
}

// chunkHead is "INSERT INTO `s`.`t` (`a`,`b`) VALUES ".
func chunkHead(c *txn.Chunk) []byte {
	b := []byte("INSERT INTO " + schema.QuoteName(c.Schema) + "." + schema.QuoteName(c.Table) + " (")
	for i, col := range c.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, schema.QuoteName(col.Name)...)
	}
	return append(b, ") VALUES "...)
}

// appendChunkRow writes "(v1,v2,...)" from a copied row's text values.
func appendChunkRow(dst []byte, cols []txn.ChunkColumn, row [][]byte) ([]byte, error) {
	if len(row) != len(cols) {
		return dst, fmt.Errorf("a row of %d values for %d columns", len(row), len(cols))
	}
	dst = append(dst, '(')
	for i, v := range row {
		if i > 0 {
			dst = append(dst, ',')
		}
		if v == nil {
			dst = append(dst, "NULL"...)
			continue
		}
		switch cols[i].Kind {
		case txn.KindNumber:
			if !isNumber(v) {
				return dst, fmt.Errorf("column %s: %q is not a number", schema.QuoteName(cols[i].Name), abbreviate(string(v), 40))
			}
			dst = append(dst, v...)
		case txn.KindQuoted:
			dst = appendQuoted(dst, v)
		case txn.KindText:
			dst = AppendString(dst, v, cols[i].Charset)
		case txn.KindBinary:
			dst = AppendString(dst, v, "")
		case txn.KindBits:
			dst = append(dst, "0x"...)
			if len(v) == 0 {
				dst = append(dst, '0', '0')
			}
			dst = hex.AppendEncode(dst, v)
		default:
			return dst, fmt.Errorf("column %s: no way to write a value of kind %q", schema.QuoteName(cols[i].Name), cols[i].Kind)
		}
	}
	return append(dst, ')'), nil
}

// isNumber accepts what the server prints for numeric columns: digits, a
// sign, a decimal point and an exponent. Anything else would be SQL.
func isNumber(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	for _, c := range v {
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			return false
		}
	}
	return true
}
