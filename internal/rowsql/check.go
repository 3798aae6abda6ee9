package rowsql

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRowCount is matched (errors.Is) by a RowCountError.
var ErrRowCount = errors.New("row count mismatch")

// RowCountError is a statement that did not affect the rows it should
// have: a row missing on the target, or there twice.
type RowCountError struct {
	Stmt Stmt
	Got  int64
}

func (e *RowCountError) Error() string {
	if e.Got < 0 {
		return fmt.Sprintf("%s: %s: the target reported no row count (expected %d)", Describe(e.Stmt), e.Stmt.What, e.Stmt.Expect)
	}
	return fmt.Sprintf("%s: %s affected %d rows on the target, expected %d", Describe(e.Stmt), e.Stmt.What, e.Got, e.Stmt.Expect)
}

func (e *RowCountError) Unwrap() error { return ErrRowCount }

// StmtError is a server error in a known statement.
type StmtError struct {
	Stmt Stmt
	Err  error
}

func (e *StmtError) Error() string {
	return Describe(e.Stmt) + ", " + e.Stmt.What + ": " + e.Err.Error()
}
func (e *StmtError) Unwrap() error { return e.Err }

// check compares the rows each statement of a round trip affected with
// what it should have. A statement without a count fails the check: most
// row statements have no guard on the server (see guardedRows), so this
// check is all that stands between a missing row and a COMMIT.
func check(stmts []Stmt, counts []int64) error {
	for i, st := range stmts {
		switch {
		case st.Expect < 0:
		case i >= len(counts):
			return &RowCountError{Stmt: st, Got: -1}
		case counts[i] != st.Expect:
			return &RowCountError{Stmt: st, Got: counts[i]}
		}
	}
	return nil
}

// blame names the statement a failed round trip failed in, when that is
// certain: a round trip holding one statement of one row (and its
// row-count check), as diagnosis sends them, or one chunk of copied rows
// (named by its Subject). A statement of several rows names its first,
// which need not be the one that failed.
func blame(stmts []Stmt, err error) error {
	n := len(stmts)
	if n == 0 || n > 2 || n == 2 && stmts[1].What != RowCountCheck {
		return err
	}
	if st := stmts[0]; st.Txn != nil && !st.Block && (st.Expect == 1 || st.Subject != "") {
		return &StmtError{Stmt: st, Err: err}
	}
	return err
}

// Describe says which transaction, table and row a statement was for.
func Describe(st Stmt) string {
	if st.Subject != "" {
		return st.Subject // copied rows: no source transaction of their own
	}
	var b strings.Builder
	if st.Txn != nil {
		b.WriteString("transaction ")
		b.WriteString(st.Txn.Describe())
	}
	if st.Table != nil {
		fmt.Fprintf(&b, ", table %s", st.Table.Name)
	}
	if st.Row != nil && st.Table != nil {
		b.WriteString(", row (")
		cols := st.Key
		if cols == nil {
			cols = st.Table.Write
			if len(cols) > 4 {
				cols = cols[:4]
			}
		}
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			v := st.Row[c]
			fmt.Fprintf(&b, "%s=%s", st.Table.Cols[c].Name, abbreviate(v.String(), 64))
		}
		b.WriteString(")")
	}
	return b.String()
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
