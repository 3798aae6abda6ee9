package copier

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/txn"
)

// TestStatementDMLDuringCopy: a statement-logged DML statement that reads
// or writes a table whose copy is not finished is refused (the target would
// compute its rows from a partial table); one on copied tables, or on a
// table whose copy is done, runs; the refusal names the table.
func TestStatementDMLDuringCopy(t *testing.T) {
	s, err := NewState([]*Table{{Schema: "shop", Name: "done"}, {Schema: "shop", Name: "copying"}},
		[]position.CopyTable{{Schema: "shop", Table: "done", State: position.CopyDone}})
	if err != nil {
		t.Fatal(err)
	}
	dml := func(q string, tables ...string) *txn.Statement {
		st := &txn.Statement{Schema: "shop", Query: q, DML: true}
		for _, n := range tables {
			st.Tables = append(st.Tables, txn.TableName{Schema: "shop", Table: n})
		}
		return st
	}
	cases := []struct {
		st     *txn.Statement
		refuse string
	}{
		{dml("UPDATE done SET a = 1", "done"), ""},
		{dml("INSERT INTO other SELECT * FROM done", "other", "done"), ""},
		{dml("INSERT INTO done SELECT * FROM copying", "done", "copying"), "`shop`.`copying`"},
		{dml("DELETE FROM COPYING", "COPYING"), "still copying"},
		{dml("INSERT INTO done VALUES ('REFERENCES')", "done"), ""}, // DDL's REFERENCES rule is not DML's
	}
	for _, c := range cases {
		_, _, err := s.Statement(c.st)
		switch {
		case c.refuse == "" && err != nil:
			t.Errorf("%s: %v", c.st.Query, err)
		case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: error %v, want one naming %q", c.st.Query, err, c.refuse)
		}
	}
}
