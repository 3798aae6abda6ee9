package apply

import (
	"testing"

	"github.com/binlane/binlane/internal/txn"
)

// TestLoadStatement: a LOAD DATA logged as a statement reads the file
// binlane serves from the binlog's blocks, as LOCAL, with the source's
// duplicate handling, the rest of the statement as it was.
func TestLoadStatement(t *testing.T) {
	cases := []struct {
		q          string
		start, end uint32
		dup        byte
		want       string
	}{
		{"LOAD DATA INFILE '/tmp/data.txt' REPLACE INTO TABLE `t`", 9, 45, 2,
			"LOAD DATA LOCAL INFILE 'Reader::f' REPLACE INTO TABLE `t`"},
		{"LOAD DATA LOCAL INFILE '/tmp/SQL_LOAD_MB-1-1' INTO TABLE `d` FIELDS TERMINATED BY '\\t' (`a`)", 15, 50, 0,
			"LOAD DATA LOCAL INFILE 'Reader::f' INTO TABLE `d` FIELDS TERMINATED BY '\\t' (`a`)"},
		{"LOAD DATA CONCURRENT INFILE 'x' IGNORE INTO TABLE t", 20, 43, 1,
			"LOAD DATA CONCURRENT LOCAL INFILE 'Reader::f' IGNORE INTO TABLE t"},
	}
	for _, c := range cases {
		got, err := loadStatement(c.q, &txn.LoadData{FileStart: c.start, FileEnd: c.end, DupHandling: c.dup}, "Reader::f")
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", c.q, got, err, c.want)
		}
	}
	if _, err := loadStatement("LOAD DATA", &txn.LoadData{FileStart: 5, FileEnd: 50}, "f"); err == nil {
		t.Error("a file name outside the statement was accepted")
	}
}
