package rowsql

import (
	"strconv"
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
	lax := "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION' FOR "
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

func TestChunkLoadData(t *testing.T) {
	cols := []txn.ChunkColumn{
		{Name: "id", Kind: txn.KindNumber}, {Name: "d", Kind: txn.KindQuoted}, {Name: "s", Kind: txn.KindText, Charset: "latin1"},
		{Name: "b", Kind: txn.KindBinary}, {Name: "f", Kind: txn.KindBits},
	}
	c := &txn.Chunk{Schema: "app", Table: "t`x", Columns: cols, Rows: [][][]byte{
		{[]byte("1"), []byte("2024-01-02 03:04:05"), []byte("it's\ta\nb"), []byte("\x00\\N\r"), []byte{5, '\t'}},
		{[]byte("-2.5e3"), nil, []byte(""), nil, nil},
		{[]byte("3"), []byte("0000-00-00"), []byte(`\N`), []byte("y"), []byte{1, 0}},
	}}
	s := &sink{}
	w := NewWriter(s)
	w.InfilePrefix = "Reader::f'-"
	w.MaxRoundTrip = 60 // the first file holds two rows (it passes 60 bytes with the second), the third goes alone
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
	load := func(n int) string {
		return "LOAD DATA LOCAL INFILE 'Reader::f\\'-" + strconv.Itoa(n) + "' INTO TABLE `app`.`t``x` CHARACTER SET binary " +
			`FIELDS TERMINATED BY '\t' ENCLOSED BY '' ESCAPED BY '\\' LINES STARTING BY '' TERMINATED BY '\n' (` +
			"`id`,`d`,`s`,`b`,`f`)"
	}
	want := []string{
		"START TRANSACTION",
		"SET @binlane_bad=0,@binlane_n=0",
		"SET SESSION foreign_key_checks=0",
		load(0),
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>2)",
		load(1),
		"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)",
		"SET SESSION foreign_key_checks=1",
	}
	if got := s.all(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var files []Stmt
	for _, trip := range s.stmts {
		for _, st := range trip {
			if st.File != nil {
				files = append(files, st)
			}
		}
	}
	wantFiles := []struct{ name, data string }{
		{"Reader::f'-0", "1\t2024-01-02 03:04:05\tit's\\ta\\nb\t\x00\\\\N\r\t\x05\\t\n-2.5e3\t\\N\t\t\\N\t\\N\n"},
		{"Reader::f'-1", "3\t0000-00-00\t\\\\N\ty\t\x01\x00\n"},
	}
	if len(files) != len(wantFiles) {
		t.Fatalf("%d files, want %d", len(files), len(wantFiles))
	}
	for i, f := range files {
		if f.FileName != wantFiles[i].name || string(f.File) != wantFiles[i].data || f.Expect <= 0 {
			t.Errorf("file %d: %q %q (expect %d), want %q %q", i, f.FileName, f.File, f.Expect, wantFiles[i].name, wantFiles[i].data)
		}
	}
	// Names are not reused by the next chunk.
	if err := w.Chunk(&txn.Txn{}, c); err != nil {
		t.Fatal(err)
	}
	if last := s.stmts[len(s.stmts)-1]; !strings.Contains(string(last[len(last)-2].FileName), "-3") {
		t.Errorf("a later chunk's last file is %q", last[len(last)-2].FileName)
	}
}

func TestChunkLoadDataRefusesBadValues(t *testing.T) {
	for _, c := range []txn.Chunk{
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: txn.KindNumber}}, Rows: [][][]byte{{[]byte("1\t2")}}},
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: "vector"}}, Rows: [][][]byte{{[]byte("1")}}},
		{Columns: []txn.ChunkColumn{{Name: "n", Kind: txn.KindNumber}}, Rows: [][][]byte{{[]byte("1"), []byte("2")}}},
	} {
		w := NewWriter(&sink{})
		w.InfilePrefix = "f"
		if err := w.Chunk(&txn.Txn{}, &c); err == nil {
			t.Errorf("chunk %v: no error", c.Rows)
		}
	}
}
