package binlog

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// loadDecoder returns a decoder that has read a MySQL 5.7 format
// description, whose Execute_load_query post-header is 26 bytes.
func loadDecoder(t *testing.T) (*Decoder, *eventBuilder) {
	t.Helper()
	fde := fdeBody("5.7.30-log", false, true)
	fde[57+int(EventExecuteLoadQuery)-1] = 26
	b := newBuilder(true)
	d := NewDecoder()
	if _, err := d.Decode(b.event(EventFormatDescription, 0, fde)); err != nil {
		t.Fatal(err)
	}
	return d, b
}

// executeLoadBody builds an Execute_load_query body: a query event's
// post-header, the file id, the file clause's bounds and the duplicate
// handling, no status variables, schema "db".
func executeLoadBody(fileID, start, end uint32, query string) []byte {
	body := binary.LittleEndian.AppendUint32(nil, 23) // thread id
	body = binary.LittleEndian.AppendUint32(body, 0)  // exec time
	body = append(body, 2)                            // schema length
	body = binary.LittleEndian.AppendUint16(body, 0)  // error code
	body = binary.LittleEndian.AppendUint16(body, 0)  // status variables length
	body = binary.LittleEndian.AppendUint32(body, fileID)
	body = binary.LittleEndian.AppendUint32(body, start)
	body = binary.LittleEndian.AppendUint32(body, end)
	body = append(body, 2) // REPLACE
	return append(append(body, "db\x00"...), query...)
}

// TestLoadDataEvents: a statement-based LOAD DATA (MySQL 5.0.3+, MariaDB)
// decodes: its file's blocks, and the statement with where its file clause
// is, as a query event (which replication treats as statement-based DML).
func TestLoadDataEvents(t *testing.T) {
	d, b := loadDecoder(t)
	const q = "LOAD DATA INFILE '/tmp/data.txt' REPLACE INTO TABLE `t`"
	blocks := []struct {
		typ  EventType
		body []byte
	}{
		{EventBeginLoadQuery, append(binary.LittleEndian.AppendUint32(nil, 7), "1,a\n"...)},
		{EventAppendBlock, append(binary.LittleEndian.AppendUint32(nil, 7), "2,b\n"...)},
	}
	for _, bl := range blocks {
		ev, err := d.Decode(b.event(bl.typ, 0, bl.body))
		if err != nil {
			t.Fatal(err)
		}
		if lb, ok := ev.Data.(*LoadBlockEvent); !ok || lb.FileID != 7 || len(lb.Data) != 4 {
			t.Fatalf("%s: got %+v", bl.typ, ev.Data)
		}
	}
	ev, err := d.Decode(b.event(EventExecuteLoadQuery, 0, executeLoadBody(7, 9, 45, q)))
	if err != nil {
		t.Fatal(err)
	}
	qe, ok := ev.Data.(*QueryEvent)
	if !ok || string(qe.Query) != q || qe.Schema != "db" || qe.ThreadID != 23 ||
		qe.Load == nil || *qe.Load != (LoadQuery{FileID: 7, FileStart: 9, FileEnd: 45, DupHandling: 2}) {
		t.Fatalf("got %+v", ev.Data)
	}
	if clause := q[qe.Load.FileStart:qe.Load.FileEnd]; clause != " INFILE '/tmp/data.txt' REPLACE INTO" {
		t.Errorf("file clause %q", clause)
	}
	ev, err = d.Decode(b.event(EventDeleteFile, 0, binary.LittleEndian.AppendUint32(nil, 7)))
	if err != nil || ev.Data.(*DeleteFileEvent).FileID != 7 {
		t.Fatalf("Delete_file: %+v %v", ev, err)
	}
	// A plain query event has no Load.
	if ev, err := d.Decode(b.event(EventQuery, 0, executeLoadBody(0, 0, 0, "BEGIN")[:13])); err == nil && ev.Data.(*QueryEvent).Load != nil {
		t.Error("a query event got a Load")
	}
}

// TestOldFormatRefusals: what binlane does not read is refused with a
// message naming it, at the event that needs it.
func TestOldFormatRefusals(t *testing.T) {
	d, b := loadDecoder(t)
	cases := []struct {
		name string
		typ  EventType
		body []byte
		want string
	}{
		{"file clause past the statement", EventExecuteLoadQuery, executeLoadBody(7, 10, 99, "LOAD DATA INFILE 'x' INTO TABLE t"),
			"file name at [10,99) of a 33-byte statement"},
		{"file clause reversed", EventExecuteLoadQuery, executeLoadBody(7, 12, 10, "LOAD DATA INFILE 'x' INTO TABLE t"), "file name at [12,10)"},
		{"Load", EventLoad, make([]byte, 40), "statement-based LOAD DATA in the format of MySQL 3.23 to 5.0.2 is not supported"},
		{"Create_file", EventCreateFile, make([]byte, 40), "MySQL 3.23 to 5.0.2"},
		{"Exec_load", EventExecLoad, make([]byte, 4), "MySQL 3.23 to 5.0.2"},
		{"New_load", EventNewLoad, make([]byte, 40), "MySQL 3.23 to 5.0.2"},
		{"pre-GA rows", EventWriteRowsPreGA, make([]byte, 20), "pre-GA rows events (a MySQL 5.1 beta format) are not supported"},
		{"table map without metadata", EventTableMap, tableMapBody(5, 6, "test", "t1", []ColumnType{TypeLong}, nil, nil)[:20],
			"table `test`.`t1`: table map without column metadata and nullable bitmap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.Decode(b.event(c.typ, 0, c.body))
			var de *DecodeError
			if !errors.As(err, &de) || de.Type != c.typ || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a %s error saying %q", err, c.typ, c.want)
			}
			if !strings.Contains(err.Error(), c.typ.String()+" event") {
				t.Errorf("%q does not name the event", err)
			}
		})
	}
	// A file of MySQL 4.x starts with Start_v3.
	_, err := NewDecoder().Decode(newBuilder(false).event(EventStartV3, 0, make([]byte, 56)))
	if err == nil || !strings.Contains(err.Error(), "Start_v3 event: binlog format before v4 (MySQL 3.23 to 4.1) is not supported") {
		t.Errorf("Start_v3: %v", err)
	}
}
