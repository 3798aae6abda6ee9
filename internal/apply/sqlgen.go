package apply

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// maxStatementBytes bounds one statement; maxRoundTripBytes one round trip
// (both well below the server's default max_allowed_packet of 16 MiB).
const (
	maxStatementBytes = 1 << 20
	maxRoundTripBytes = 4 << 20
)

// stmtInfo describes one statement of a round trip, to check its result
// and to name what failed.
type stmtInfo struct {
	expect int64 // rows it must affect; -1 when not checked
	txn    *txn.Txn
	table  *plan.Table
	what   string
	row    []binlog.Value // a row of the statement, for messages
	key    []int
}

// sqlWriter accumulates statements for one target transaction and hands
// them to flush in round trips.
type sqlWriter struct {
	buf   []byte
	stmts []stmtInfo
	lit   literal
	start int // offset of the statement being written
	// flush sends buf (a sequence of ';'-separated statements) and checks
	// each statement against stmts.
	flush func(sql []byte, stmts []stmtInfo) error
	// fkChecks/checkConstraints mirror the session settings while the
	// transaction's statements are written; both are on between batches.
	fkOff, constraintsOff bool
	// oneByOne sends every statement in its own round trip (diagnosis).
	oneByOne bool
	// dml counts the row statements written since reset.
	dml int
}

func (w *sqlWriter) reset() {
	w.buf, w.stmts = w.buf[:0], w.stmts[:0]
	w.fkOff, w.constraintsOff = false, false
	w.dml = 0
}

// guardVar counts, on the server, row statements that did not affect the
// rows they should have. The position update turns a non-zero count into
// an error, so a COMMIT sent in the same round trip never runs after a
// mismatch (the server stops a multi-statement at the first error).
const guardVar = "@binlane_bad"

// rowCountCheck describes the statement that follows a row statement to
// update guardVar.
const rowCountCheck = "row count check"

// beginTxn starts the target transaction.
func (w *sqlWriter) beginTxn() error {
	if err := w.raw("START TRANSACTION"); err != nil {
		return err
	}
	return w.raw("SET " + guardVar + "=0")
}

// begin starts a statement.
func (w *sqlWriter) begin() {
	w.start = len(w.buf)
	w.lit.lax = false
}

// end finishes a statement; statements that stored values only a relaxed
// sql_mode accepts get a per-statement override.
func (w *sqlWriter) end(info stmtInfo) error {
	if w.lit.lax {
		prefix := "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION' FOR "
		w.buf = append(w.buf, prefix...)
		copy(w.buf[w.start+len(prefix):], w.buf[w.start:len(w.buf)-len(prefix)])
		copy(w.buf[w.start:], prefix)
	}
	w.buf = append(w.buf, ";\n"...)
	w.stmts = append(w.stmts, info)
	if info.txn != nil {
		w.dml++
		if info.expect >= 0 {
			w.buf = append(w.buf, "SET "+guardVar+"="+guardVar+"+(ROW_COUNT()<>"...)
			w.buf = strconv.AppendInt(w.buf, info.expect, 10)
			w.buf = append(w.buf, ");\n"...)
			w.stmts = append(w.stmts, stmtInfo{expect: -1, what: rowCountCheck})
		}
	}
	if w.oneByOne || len(w.buf) >= maxRoundTripBytes {
		return w.send()
	}
	return nil
}

// raw adds a statement whose result is not checked.
func (w *sqlWriter) raw(s string) error {
	w.begin()
	w.buf = append(w.buf, s...)
	return w.end(stmtInfo{expect: -1, what: "session"})
}

// send flushes what has been written.
func (w *sqlWriter) send() error {
	if len(w.stmts) == 0 {
		return nil
	}
	err := w.flush(w.buf, w.stmts)
	w.buf, w.stmts = w.buf[:0], w.stmts[:0]
	return err
}

// session switches the foreign-key and check-constraint settings to what
// a rows event recorded on the source.
func (w *sqlWriter) session(flags uint16) error {
	fkOff := flags&binlog.RowsFlagNoForeignKeyChecks != 0
	if fkOff != w.fkOff {
		w.fkOff = fkOff
		if err := w.raw("SET SESSION foreign_key_checks=" + onOff(!fkOff)); err != nil {
			return err
		}
	}
	cOff := flags&binlog.RowsFlagNoCheckConstraints != 0
	if cOff != w.constraintsOff {
		w.constraintsOff = cOff
		if err := w.raw("SET SESSION check_constraint_checks=" + onOff(!cOff)); err != nil {
			return err
		}
	}
	return nil
}

func onOff(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

// restoreSession turns the checks back on at the end of a transaction.
func (w *sqlWriter) restoreSession() error {
	return w.session(0)
}

// appendRow writes "(v1,v2,...)" for the given source columns.
func (w *sqlWriter) appendRow(p *plan.Table, row []binlog.Value, cols []int) error {
	w.buf = append(w.buf, '(')
	for i, c := range cols {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		var err error
		if w.buf, err = w.lit.append(w.buf, &row[c], &p.Source.Columns[c], &p.Cols[c]); err != nil {
			return columnError(p, c, err)
		}
	}
	w.buf = append(w.buf, ')')
	return nil
}

// appendMatch writes the condition that finds a row: its key columns, or
// its whole before image for tables without a usable key. The whole-image
// match is null-safe and compares strings byte for byte: under a
// case-insensitive or PAD SPACE collation 'a' equals 'A ', and picking the
// wrong one of two such rows would change the wrong row.
func (w *sqlWriter) appendMatch(p *plan.Table, row []binlog.Value) error {
	cols, op := p.RowKey, "="
	if cols == nil {
		cols, op = p.Write, "<=>"
	}
	for i, c := range cols {
		if i > 0 {
			w.buf = append(w.buf, " AND "...)
		}
		if op == "<=>" && (row[c].Kind == binlog.KindString || row[c].Kind == binlog.KindJSON) {
			w.buf = append(w.buf, "BINARY "...)
		}
		w.buf = append(w.buf, p.Cols[c].Quoted...)
		w.buf = append(w.buf, op...)
		var err error
		if w.buf, err = w.lit.append(w.buf, &row[c], &p.Source.Columns[c], &p.Cols[c]); err != nil {
			return columnError(p, c, err)
		}
	}
	return nil
}

func columnError(p *plan.Table, c int, err error) error {
	return fmt.Errorf("table %s column `%s`: %w", p.Name, p.Cols[c].Name, err)
}

// sameValue reports whether two values are identical (bytes included).
func sameValue(a, b *binlog.Value) bool {
	return a.Kind == b.Kind && a.N == b.N && a.Micro == b.Micro && a.Neg == b.Neg && bytes.Equal(a.B, b.B)
}
