package rowsql

import (
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Chunk writes the rows of a copied chunk. A plain load, never INSERT
// IGNORE or REPLACE: a row already on the target means the copy and the
// stream disagree, which must stop the stream, not be papered over; every
// statement is checked to insert exactly the rows it carries. Foreign keys
// are not checked: the tables a chunk references were copied before it
// (see package copier), and the source checked the rows when it wrote
// them.
//
// With InfilePrefix set the rows go as LOAD DATA LOCAL INFILE of an
// in-memory file (see loadChunk), which costs the target about a quarter
// less CPU per row than INSERT (BenchmarkChunkShapes); otherwise as
// multi-row INSERTs.
func (w *Writer) Chunk(t *txn.Txn, c *txn.Chunk) error {
	if len(c.Rows) == 0 {
		return nil
	}
	if err := w.session(binlog.RowsFlagNoForeignKeyChecks); err != nil {
		return err
	}
	subject := fmt.Sprintf("copied rows of %s.%s (snapshot at %s)", sqlquote.Name(c.Schema), sqlquote.Name(c.Table), c.Pos)
	if w.InfilePrefix != "" {
		return w.loadChunk(t, c, subject)
	}
	head := chunkHead(c)
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

// loadChunk writes the rows as LOAD DATA LOCAL INFILE statements, each
// with a file of at most MaxRoundTrip bytes (a larger row goes alone) that
// the sink serves from memory under the statement's FileName.
//
// Why this stores what INSERT would: the file is read in CHARACTER SET
// binary, so every value's bytes reach its column unconverted, in the
// column's own charset as the source returned them (the copy reads with
// character_set_results binary). LOCAL makes the server treat errors as
// warnings (it cannot stop the client mid-file), as the relaxed sql_mode
// of the INSERT path does for values only that mode accepts (an ENUM's ”,
// zero dates); a duplicate row is skipped rather than failing, which the
// row-count check turns back into a failed commit.
func (w *Writer) loadChunk(t *txn.Txn, c *txn.Chunk, subject string) error {
	for i := 0; i < len(c.Rows); {
		name := w.InfilePrefix + strconv.Itoa(w.files)
		w.files++
		from := len(w.file)
		n := 0
		for i < len(c.Rows) && (n == 0 || len(w.file)-from < w.MaxRoundTrip) {
			var err error
			if w.file, err = appendLoadRow(w.file, c.Columns, c.Rows[i]); err != nil {
				w.file = w.file[:from]
				return fmt.Errorf("%s: %w", subject, err)
			}
			i++
			n++
		}
		w.begin()
		w.buf = appendLoadHead(w.buf, c, name)
		st := Stmt{Expect: int64(n), Txn: t, What: "load copied rows", Subject: subject, FileName: name, File: w.file[from:]}
		if err := w.end(st); err != nil {
			return err
		}
	}
	return nil
}

// appendLoadHead writes the LOAD DATA statement of a chunk's file. Every
// format option is spelled out: the server's defaults are these today,
// but the file's format must not depend on them.
func appendLoadHead(dst []byte, c *txn.Chunk, file string) []byte {
	dst = append(dst, "LOAD DATA LOCAL INFILE "...)
	dst = sqlquote.AppendEscaped(dst, "", file) // LOAD DATA takes no hex literal
	dst = append(dst, " INTO TABLE "...)
	dst = append(dst, sqlquote.Qualified(c.Schema, c.Table)...)
	dst = append(dst, loadFormat+" ("...)
	for i, col := range c.Columns {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, sqlquote.Name(col.Name)...)
	}
	return append(dst, ')')
}

// loadFormat is how binlane's LOAD DATA files are read: every option
// spelled out, so that a file's format never depends on the server's
// defaults. The bytes go unconverted (CHARACTER SET binary).
const loadFormat = ` CHARACTER SET binary FIELDS TERMINATED BY '\t' ENCLOSED BY '' ESCAPED BY '\\'` +
	` LINES STARTING BY '' TERMINATED BY '\n'`

// appendLoadRow writes one line of a chunk's file: values separated by
// tabs, \N for NULL, tab, newline and backslash escaped with a backslash.
func appendLoadRow(dst []byte, cols []txn.ChunkColumn, row [][]byte) ([]byte, error) {
	if len(row) != len(cols) {
		return dst, fmt.Errorf("a row of %d values for %d columns", len(row), len(cols))
	}
	for i, v := range row {
		if i > 0 {
			dst = append(dst, '\t')
		}
		if v == nil {
			dst = append(dst, '\\', 'N')
			continue
		}
		switch cols[i].Kind {
		case txn.KindNumber:
			var err error
			if dst, err = appendNumber(dst, &cols[i], v); err != nil {
				return dst, err
			}
		case txn.KindQuoted, txn.KindText, txn.KindBinary, txn.KindBits:
			// BIT too: a string stored into a BIT column is taken as its
			// bytes, which is what the copy read.
			dst = appendLoadField(dst, v)
		default:
			return dst, badKind(&cols[i])
		}
	}
	return append(dst, '\n'), nil
}

// appendLoadField escapes the bytes LOAD DATA would read as a separator
// or an escape. Any other byte, NUL and CR included, is data as it is.
func appendLoadField(dst, v []byte) []byte {
	from := 0
	for i, c := range v {
		var esc byte
		switch c {
		case '\t':
			esc = 't'
		case '\n':
			esc = 'n'
		case '\\':
			esc = '\\'
		default:
			continue
		}
		dst = append(dst, v[from:i]...)
		dst = append(dst, '\\', esc)
		from = i + 1
	}
	return append(dst, v[from:]...)
}

// chunkHead is "INSERT INTO `s`.`t` (`a`,`b`) VALUES ".
func chunkHead(c *txn.Chunk) []byte {
	b := []byte("INSERT INTO " + sqlquote.Qualified(c.Schema, c.Table) + " (")
	for i, col := range c.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, sqlquote.Name(col.Name)...)
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
			var err error
			if dst, err = appendNumber(dst, &cols[i], v); err != nil {
				return dst, err
			}
		case txn.KindQuoted:
			dst = sqlquote.AppendEscaped(dst, "", v)
		case txn.KindText:
			dst = appendString(dst, v, cols[i].Charset)
		case txn.KindBinary:
			dst = appendString(dst, v, "")
		case txn.KindBits:
			dst = append(dst, "0x"...)
			if len(v) == 0 {
				dst = append(dst, '0', '0')
			}
			dst = hex.AppendEncode(dst, v)
		default:
			return dst, badKind(&cols[i])
		}
	}
	return append(dst, ')'), nil
}

// appendNumber writes a numeric column's text, which must be a number:
// anything else would be SQL (or break a LOAD DATA line).
func appendNumber(dst []byte, col *txn.ChunkColumn, v []byte) ([]byte, error) {
	if !isNumber(v) {
		return dst, fmt.Errorf("column %s: %q is not a number", sqlquote.Name(col.Name), abbreviate(string(v), 40))
	}
	return append(dst, v...), nil
}

func badKind(col *txn.ChunkColumn) error {
	return fmt.Errorf("column %s: no way to write a value of kind %q", sqlquote.Name(col.Name), col.Kind)
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
