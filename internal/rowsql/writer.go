package rowsql

import (
	"fmt"
	"strconv"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Default bounds of one statement and one round trip: well below the
// server's default max_allowed_packet of 16 MiB. A single row larger than
// that still goes in one statement of its own.
const (
	DefaultMaxStatement = 1 << 20
	DefaultMaxRoundTrip = 4 << 20
)

// Stmt describes one statement of a round trip, to check its result and to
// name what failed.
type Stmt struct {
	Expect int64 // rows it must affect; -1 when not checked
	Txn    *txn.Txn
	Table  *plan.Table
	What   string
	Row    []binlog.Value // a row of the statement, for messages
	Key    []int          // the columns that name the row
	// Subject, when set, is what the statement was for instead of Table
	// and Row (copied rows).
	Subject string
	// FileName and File: the statement is a LOAD DATA LOCAL INFILE of File,
	// which the sink serves under FileName while the round trip runs.
	FileName string
	File     []byte
	// Block: a compound statement of row statements (Writer.Blocks), whose
	// rows are checked by guards inside it; Txn and Table name its first.
	Block bool
	// Exact: the statement affects Expect rows or fails with an error (a
	// plain multi-row INSERT: a row it cannot insert is an error, never a
	// smaller count), so it needs no guard on the server.
	Exact bool
}

// Sink runs round trips: it returns the rows each statement affected, in
// order (the writer checks them against what each should have: a statement
// without a count fails the check), or the round trip's error. sql and
// stmts are only valid during the call.
type Sink interface {
	Send(sql []byte, stmts []Stmt) (counts []int64, err error)
}

// Writer accumulates the statements of one target transaction and hands
// them to its sink in round trips. It is not safe for concurrent use; its
// buffers are reused from one transaction to the next.
type Writer struct {
	sink Sink
	// Collapse merges the changes of collapsible tables into their last
	// images (plan.Table.Collapsible); other tables keep source order.
	Collapse bool
	// OneByOne sends every statement in its own round trip (diagnosis).
	OneByOne bool
	// Blocks puts consecutive row statements into one compound statement
	// (MariaDB's BEGIN NOT ATOMIC ... END), each followed by its guard: the
	// server answers the block with one result instead of one per
	// statement, which costs it less than half the CPU per row (see
	// blockStatements). Only for a MariaDB target; never in OneByOne
	// (diagnosis names single statements).
	Blocks bool
	// Runs gathers the row changes Body writes, across the transactions of
	// the target transaction, into runs of one table and operation that
	// become one statement each (see runs.go); other tables' changes keep
	// their source order. Never in OneByOne.
	Runs bool
	// MaxStatement and MaxRoundTrip bound statements and round trips (SQL
	// text and LOAD DATA files together).
	MaxStatement, MaxRoundTrip int
	// Hold keeps full round trips instead of sending them; the next Flush
	// without it sends them first (see hold.go).
	Hold bool
	// InfilePrefix, when set, makes copied chunks LOAD DATA LOCAL INFILE
	// statements of in-memory files named with it (see Chunk); the sink
	// must serve Stmt.File under Stmt.FileName. "": chunks are INSERTs.
	InfilePrefix string
	// JoinBudget, when not 0, is how many bytes one temporary MEMORY table
	// of changed rows may take (join.go): the target session's binlog
	// leaves temporary tables out (no binlog, or binlog_format ROW) and its
	// max_heap_table_size allows them. 0: no join updates.
	JoinBudget int64

	buf   []byte
	stmts []Stmt
	file  []byte // the LOAD DATA files of the round trip, one after another
	files int    // LOAD DATA files named so far (names are not reused)
	lit   literal
	start int // offset of the statement being written
	// fkOff mirrors the session's foreign_key_checks while the
	// transaction's statements are written; the checks are on between
	// transactions. (CHECK constraints are never checked for rows: see
	// apply's session.)
	fkOff bool
	dml   int // row statements written since Begin
	// unchecked counts row statements in the unsent buffer that have no
	// guard after them: only the client's check of their row counts, after
	// the round trip, covers them, so Commit must not send COMMIT with them.
	unchecked int
	// block is set while a compound statement is open in buf; blockAt is
	// where it starts.
	block     bool
	blockAt   int
	blockRows int // row statements in the open block
	open      *openStmt
	o         openStmt // storage for open, to avoid allocating
	col       collapser
	pend      pending // changes waiting for the run planner (Runs)
	assign    []int   // scratch: the columns an upsert assigns
	// held: round trips kept under Hold, heldBytes their size; spare: the
	// buffers of one sent, for the next.
	held      []roundTrip
	heldBytes int
	spare     roundTrip
	// grown counts the rows this writer inserted into each table since
	// the table was planned (see deleteRows).
	grown map[*plan.Table]int64
}

// NewWriter returns a writer sending to sink.
func NewWriter(sink Sink) *Writer {
	return &Writer{sink: sink, MaxStatement: DefaultMaxStatement, MaxRoundTrip: DefaultMaxRoundTrip}
}

// Guard variables. guardVar counts row statements that did not affect the
// rows they should have; the position update turns a non-zero count into
// an error, so a COMMIT sent after it in the same round trip never runs
// after a mismatch (the server stops a multi-statement at the first error).
// countVar counts the rows an upsert found already present.
//
// A guard is a statement of its own, and the server's cost of one is about
// two thirds of a primary-key UPDATE's (11 of 17 µs of target CPU
// measured): only the first guardedRows row statements of a transaction
// get one, which keeps a small transaction's rows, position and COMMIT in
// one round trip. Later ones are checked by the client from the round
// trip's per-statement row counts, and Commit sends them before the
// position update: one more round trip for a large transaction, instead of
// a statement per row.
const (
	guardedRows = 16

	guardVar = "@binlane_bad"
	countVar = "@binlane_n"
	// GuardVar is guardVar, for a caller that must read it itself (an XA
	// transaction's rows commit without the position update).
	GuardVar = guardVar
)

// RowCountCheck describes the statement that follows a row statement to
// update the guard.
const RowCountCheck = "row count check"

// Begin starts a target transaction.
func (w *Writer) Begin() error {
	w.reset()
	if err := w.Raw("START TRANSACTION"); err != nil {
		return err
	}
	return w.Raw("SET " + guardVar + "=0," + countVar + "=0")
}

// BeginXA starts the target's branch of an XA transaction the source
// prepared: its rows are written as for Begin; the caller ends and
// prepares it.
func (w *Writer) BeginXA(id string) error {
	w.reset()
	if err := w.Raw("XA START " + id); err != nil {
		return err
	}
	return w.Raw("SET " + guardVar + "=0," + countVar + "=0")
}

// reset forgets what was written and not sent. Descriptions are cleared,
// not only truncated: each holds a row whose values point into a binlog
// event, and a stale one would keep that event's buffer alive.
func (w *Writer) reset() {
	clear(w.stmts)
	w.buf, w.stmts, w.file = w.buf[:0], w.stmts[:0], w.file[:0]
	w.fkOff = false
	w.dml, w.unchecked = 0, 0
	w.block = false
	w.open, w.o = nil, openStmt{}
	w.col.reset()
	w.pend.reset()
	w.dropHeld()
}

// RowStatements is the number of row statements written since Begin.
func (w *Writer) RowStatements() int { return w.dml }

// Pending reports whether statements wait to be sent.
func (w *Writer) Pending() bool { return len(w.stmts) > 0 }

// collapse hands a change of a collapsible table to the collapser (taken),
// under Collapse; a partial image of such a table is written in source
// order, after what the collapser holds of the table.
func (w *Writer) collapse(t *txn.Txn, p *plan.Table, c *txn.Change) (taken bool, err error) {
	if !w.Collapse || !p.Collapsible {
		return false, nil
	}
	if !c.Partial {
		w.col.add(t, p, c)
		return true, nil
	}
	return false, w.flushCollapsed(p)
}

// Rows writes the row changes of one rows item with its plan.
func (w *Writer) Rows(t *txn.Txn, p *plan.Table, changes []txn.Change) error {
	if err := w.writeRuns(); err != nil { // held changes come first
		return err
	}
	for j := range changes {
		c := &changes[j]
		taken, err := w.collapse(t, p, c)
		if err != nil {
			return err
		}
		if taken {
			continue
		}
		if err := w.change(t, p, c); err != nil {
			return err
		}
	}
	return nil
}

// Keys are the conflict keys a scheduler's writeset holds for a body's
// changes: Spans[i] locates those of body.Changes[i] in Set. The run
// planner reuses them instead of hashing every change again.
type Keys struct {
	Set   *scheduler.KeySet
	Spans []writeset.Span
}

// Body writes every row item of a transaction body; plans holds the plan of
// each item (nil for items that are not rows). keys, when not nil, are the
// keys of its changes (one span per change of body).
func (w *Writer) Body(t *txn.Txn, body *txn.Body, plans []*plan.Table, keys *Keys) error {
	if keys != nil && len(keys.Spans) != len(body.Changes) {
		keys = nil // not this body's (filtered or resolved since)
	}
	if w.Collapse {
		w.col.reserve(body, plans)
	}
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemRows {
			// Nothing moves past a step that is not rows (a savepoint
			// left in a resolved body, a statement).
			if err := w.writeRuns(); err != nil {
				return err
			}
			continue
		}
		changes := body.Changes[it.First:it.Last]
		var err error
		if w.hoisting() {
			err = w.hold(t, plans[i], changes, keys, it.First)
		} else {
			err = w.Rows(t, plans[i], changes)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Finish closes the open statement, writes collapsed rows and turns the
// session's checks back on. Call it once the transaction's rows are all
// written.
func (w *Writer) Finish() error {
	if err := w.writeRuns(); err != nil {
		return err
	}
	if err := w.closeOpen(); err != nil {
		return err
	}
	if err := w.col.write(w); err != nil {
		return err
	}
	w.col.reset()
	return w.session(0)
}

// Commit records the tail (position.Tail) after what has been written,
// commits, and sends the last round trip. Each record is checked: the
// position update must match the stream's row and owner, a deferred
// statement and a copy checkpoint must each insert their row, a finished
// XA transaction must have been recorded.
func (w *Writer) Commit(t *position.Tail) error {
	if w.unchecked > 0 {
		if err := w.Flush(); err != nil {
			return err
		}
	}
	for _, d := range t.Deferred {
		w.begin()
		w.buf = position.AppendDeferred(w.buf, t.Stream, d.GTID, d.Schema, d.Reason, d.Statement)
		if err := w.end(Stmt{Expect: 1, What: "record deferred statement"}); err != nil {
			return err
		}
	}
	if t.XAPrepared != "" {
		w.begin()
		w.buf = position.AppendXAPrepared(w.buf, t.Stream, t.XAPrepared, t.XAPreparedGTID)
		if err := w.end(Stmt{Expect: -1, What: "record the prepared XA transaction"}); err != nil {
			return err
		}
	}
	if t.XAFinished != "" {
		w.begin()
		w.buf = position.AppendXAFinished(w.buf, t.Stream, t.XAFinished)
		if err := w.end(Stmt{Expect: 1, What: "forget the finished XA transaction"}); err != nil {
			return err
		}
	}
	for _, cp := range t.Copy {
		w.begin()
		w.buf = position.AppendCopyProgress(w.buf, t.Stream, cp)
		if err := w.end(Stmt{Expect: 1, What: "record the copy's progress"}); err != nil {
			return err
		}
	}
	w.begin()
	w.buf = position.AppendUpdate(w.buf, t.Stream, t.Save, t.Owner, guardVar)
	if err := w.end(Stmt{Expect: 1, What: positionUpdate}); err != nil {
		return err
	}
	if err := w.Raw("COMMIT"); err != nil {
		return err
	}
	return w.Flush()
}

// positionUpdate describes the position update of Commit's round trip.
const positionUpdate = "position update"

// Commits reports whether a round trip holds a transaction's commit
// (Commit's position update and COMMIT).
func Commits(stmts []Stmt) bool {
	for i := len(stmts) - 1; i >= 0; i-- {
		if stmts[i].What == positionUpdate {
			return true
		}
	}
	return false
}

// Raw adds a statement whose result is not checked.
func (w *Writer) Raw(s string) error {
	w.begin()
	w.buf = append(w.buf, s...)
	return w.end(Stmt{Expect: -1, What: "session"})
}

// Flush sends what has been written, the open statement ended first (a
// statement that commits implicitly may follow: nothing written may wait),
// after any round trips held before; under Hold it keeps it instead.
func (w *Writer) Flush() error {
	if err := w.closeOpen(); err != nil {
		return err
	}
	w.closeBlock()
	if w.Hold {
		if len(w.stmts) == 0 {
			return nil
		}
		return w.holdTrip()
	}
	if len(w.held) > 0 {
		if err := w.sendHeld(); err != nil {
			return err
		}
	}
	if len(w.stmts) == 0 {
		return nil
	}
	err := w.exchange(w.buf, w.stmts)
	clear(w.stmts) // see reset
	w.buf, w.stmts, w.file = w.buf[:0], w.stmts[:0], w.file[:0]
	w.unchecked = 0
	if cap(w.file) > 4*w.MaxRoundTrip {
		w.file = nil // a huge row's file: not kept for the next chunk
	}
	return err
}

// Discard drops what has been written and not sent.
func (w *Writer) Discard() { w.reset() }

// begin starts a statement.
func (w *Writer) begin() {
	w.start = len(w.buf)
	w.lit.lax = false
}

// end finishes a statement; statements that stored values only a relaxed
// sql_mode accepts get a per-statement override.
func (w *Writer) end(st Stmt) error {
	if w.lit.lax {
		w.setStatementAt(w.start, laxSQLMode)
	}
	if w.inBlock(st) && len(w.buf)-w.start < blockStatementBytes {
		return w.endInBlock(st)
	}
	if w.block {
		w.insertAt(w.start, blockEnd)
		w.block = false
	}
	w.buf = append(w.buf, ";\n"...)
	w.stmts = append(w.stmts, st)
	if st.Txn != nil {
		w.dml++
		switch {
		case st.Expect < 0, st.Exact:
		case w.dml > guardedRows:
			w.unchecked++
		default:
			w.appendGuard(st.Expect)
			w.stmts = append(w.stmts, Stmt{Expect: -1, What: RowCountCheck})
		}
	}
	if w.OneByOne || len(w.buf)+len(w.file) >= w.MaxRoundTrip {
		return w.Flush()
	}
	return nil
}

const (
	// blockStatements bounds the row statements of one block: the server
	// builds a parse tree per statement of a block before it runs any, and
	// its cost per row grows with the block (PK UPDATEs with guards, target
	// CPU per row: 14-17 µs in blocks of 16 to 256, 22 µs at 1,024,
	// 120 µs at 4,096; 33-42 µs as single statements).
	blockStatements = 64
	// blockStatementBytes: a statement this long goes outside compound
	// statements. Inside one, the server's lexer copies the body's string
	// literals converted and escaped to utf8 (the text of a stored
	// program; Lex_input_stream::body_utf8_append_escape), about 4.5 ns a
	// byte: 23% of the target's CPU on the documents benchmark (JSON of
	// 2-20 KB), where a statement of its own costs some 20 µs more, the
	// price of about 4 KB.
	blockStatementBytes = 4 << 10
	blockBegin          = "BEGIN NOT ATOMIC\n"
	blockEnd            = "END;\n"
	// BlockWhat describes a compound statement of row statements.
	BlockWhat = "row statements (one compound statement)"
)

// inBlock reports whether a statement just written goes into a compound
// statement: row statements (not LOAD DATA, which a compound statement
// cannot hold) and the guards collapsed upserts write after themselves.
func (w *Writer) inBlock(st Stmt) bool {
	if !w.Blocks || w.OneByOne {
		return false
	}
	return st.Txn != nil && st.FileName == "" || w.block && st.What == RowCountCheck
}

// endInBlock ends a statement inside the open compound statement, opening
// one first if needed. Every row statement in it gets its guard: the client
// sees one row count for the whole block.
func (w *Writer) endInBlock(st Stmt) error {
	if !w.block {
		w.insertAt(w.start, blockBegin)
		w.block, w.blockAt, w.blockRows = true, w.start, 0
		w.stmts = append(w.stmts, Stmt{Expect: -1, Txn: st.Txn, Table: st.Table, What: BlockWhat, Block: true})
	}
	w.buf = append(w.buf, ";\n"...)
	if st.Txn != nil {
		w.dml++
		if st.Expect >= 0 && !st.Exact {
			w.appendGuard(st.Expect)
		}
	}
	w.blockRows++
	if w.blockRows >= blockStatements || len(w.buf)-w.blockAt >= w.MaxStatement {
		w.closeBlock()
	}
	if len(w.buf)+len(w.file) >= w.MaxRoundTrip {
		return w.Flush()
	}
	return nil
}

// appendGuard writes the guard after a row statement that must affect
// expect rows: it counts a mismatch in guardVar, which the position
// update's own guard turns into an error before COMMIT.
func (w *Writer) appendGuard(expect int64) {
	w.buf = append(appendGuardSet(w.buf, expect), ";\n"...)
}

// appendGuardSet appends the guard's SET for a statement that must have
// affected expect rows, without the statement's end.
func appendGuardSet(dst []byte, expect int64) []byte {
	dst = append(dst, "SET "+guardVar+"="+guardVar+"+(ROW_COUNT()<>"...)
	dst = strconv.AppendInt(dst, expect, 10)
	return append(dst, ')')
}

// closeBlock ends the open compound statement, if any.
func (w *Writer) closeBlock() {
	if w.block {
		w.buf = append(w.buf, blockEnd...)
		w.block = false
	}
}

// insertAt inserts s into the buffer at offset at.
func (w *Writer) insertAt(at int, s string) {
	n := len(w.buf)
	w.buf = append(w.buf, s...)
	copy(w.buf[at+len(s):], w.buf[at:n])
	copy(w.buf[at:], s)
}

// session switches the foreign-key setting to what a rows event recorded
// on the source.
func (w *Writer) session(flags uint16) error {
	fkOff := flags&binlog.RowsFlagNoForeignKeyChecks != 0
	if fkOff == w.fkOff {
		return nil
	}
	w.fkOff = fkOff
	return w.Raw("SET SESSION foreign_key_checks=" + onOff(!fkOff))
}

func onOff(on bool) string {
	if on {
		return "1"
	}
	return "0"
}

// appendRow writes "(v1,v2,...)" for the given source columns: values a
// statement writes, never compares.
func (w *Writer) appendRow(p *plan.Table, row []binlog.Value, cols []int) error {
	w.buf = append(w.buf, '(')
	for i, c := range cols {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		var err error
		if w.buf, err = w.lit.value(w.buf, &row[c], &p.Source.Columns[c], &p.Cols[c]); err != nil {
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
func (w *Writer) appendMatch(p *plan.Table, row []binlog.Value) error {
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
	return fmt.Errorf("table %s column %s: %w", p.Name, sqlquote.Name(p.Cols[c].Name), err)
}

// SameValue reports whether two values are identical (bytes included).
func SameValue(a, b *binlog.Value) bool {
	return a.Kind == b.Kind && a.N == b.N && a.Micro == b.Micro && a.Neg == b.Neg && string(a.B) == string(b.B)
}
