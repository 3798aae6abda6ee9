package rowsql

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/txn"
)

func TestChunk(t *testing.T) {
	cols := []txn.ChunkColumn{
		{Name: "id", Kind: txn.KindNumber}, {Name: "d", Kind: txn.KindQuoted}, {Name: "s", Kind: txn.KindText, Charset: "latin1"},
		{Name: "b", Kind: txn.KindBinary}, {Name: "f", Kind: txn.KindBits},
	}
	c := &txn.Chunk{Schema: "app", Table: "t`x", Columns: cols, Rows: [][][]byte{
		{[]byte("1"), []byte("2024-01-02 03:04:05"), []byte("it's"), []byte("\x00\\"), []byte{5}},
		{[]byte("-2.5e3"), nil, []byte(""), nil, nil},
		{[]byte("3"), []byte("0000-00-00"), []byte("x"), []byte("y"), []byte{1, 0}},
	}}
	s := &sink{}
	w := NewWriter(s)
	w.MaxStatement = 140 // two rows fit in the first statement, the third goes alone
	if err := w.Begin(); err != nil {
		t.Fatal(err)
	}
	if err := w.Chunk(&txn.Txn{}, c); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(s.all(), "\n")
	head := "INSERT INTO `app`.`t``x` (`id`,`d`,`s`,`b`,`f`) VALUES "
	lax := "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,NO_ENGINE_SUBSTITUTION' FOR "
	want := strings.Join([]string{
		"START TRANSACTION",
		"SET @binlane_bad=0,@binlane_n=0",
		"SET SESSION foreign_key_checks=0",
		lax + head + `(1,'2024-01-02 03:04:05',_latin1'it\'s',_binary'\0\\',0x05),(-2.5e3,NULL,_latin1'',NULL,NULL)`,
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>2)",
		lax + head + `(3,'0000-00-00',_latin1'x',_binary'y',0x0100)`,
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"SET SESSION foreign_key_checks=1",
	}, "\n")
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if d := Describe(s.stmts[0][3]); !strings.Contains(d, "copied rows of `app`.`t``x`") {
		t.Errorf("Describe = %q", d)
	}
}

func TestChunkRefusesBadValues(t *testing.T) {
	for _, c := range []txn.Chunk{
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: txn.KindNumber}}, Rows: [][][]byte{{[]byte("1; DROP TABLE x")}}},
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: "vector"}}, Rows: [][][]byte{{[]byte("1")}}},
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: txn.KindNumber}}, Rows: [][][]byte{{[]byte("1"), []byte("2")}}},
	} {
		w := NewWriter(&sink{})
		if err := w.Chunk(&txn.Txn{}, &c); err == nil {
			t.Errorf("chunk %v: no error", c.Rows)
		}
	}
}
