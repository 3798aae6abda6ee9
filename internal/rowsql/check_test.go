package rowsql

import (
	"errors"
	"testing"
)

// TestBlame: a failed round trip is named by its statement only when that
// statement is certainly the one that failed and names what it holds.
func TestBlame(t *testing.T) {
	p := upsertTable("plain", false, nil, "id", "v")
	one := Stmt{Expect: 1, Txn: t1, Table: p, What: "insert", Row: row(i64(1), i64(0)), Exact: true}
	many := one
	many.Expect = 8 // a multi-row INSERT: its Row is only its first
	chunk := Stmt{Expect: 500, Txn: t1, What: "insert copied rows", Subject: "rows 1-500 of `d`.`plain`"}
	guard := Stmt{Expect: -1, What: RowCountCheck}
	block := Stmt{Expect: -1, Txn: t1, Table: p, What: BlockWhat, Block: true}
	for _, c := range []struct {
		name  string
		stmts []Stmt
		named bool
	}{
		{"one row", []Stmt{one}, true},
		{"one row and its guard", []Stmt{one, guard}, true},
		{"several rows", []Stmt{many}, false},
		{"a chunk of copied rows", []Stmt{chunk}, true},
		{"two row statements", []Stmt{one, one}, false},
		{"a block", []Stmt{block}, false},
		{"no transaction", []Stmt{{Expect: 1, What: "position update"}}, false},
		{"nothing", nil, false},
	} {
		err := blame(c.stmts, errors.New("x"))
		if named := errors.As(err, new(*StmtError)); named != c.named {
			t.Errorf("%s: named %v, want %v (%v)", c.name, named, c.named, err)
		}
	}
}
