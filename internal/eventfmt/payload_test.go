package eventfmt

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
)

// rawEvent frames a body with a common header (no checksum).
func rawEvent(typ binlog.EventType, logPos uint32, body []byte) []byte {
	raw := make([]byte, binlog.HeaderLen, binlog.HeaderLen+len(body))
	binary.LittleEndian.PutUint32(raw[0:], 1700000000)
	raw[4] = byte(typ)
	binary.LittleEndian.PutUint32(raw[5:], 1)
	binary.LittleEndian.PutUint32(raw[9:], uint32(binlog.HeaderLen+len(body)))
	binary.LittleEndian.PutUint32(raw[13:], logPos)
	return append(raw, body...)
}

// payloadEvents decodes a MySQL 8.0 format description (checksums off)
// and an uncompressed Transaction_payload holding BEGIN, a table map, an
// insert of one row (id=7) and a commit.
func payloadEvents(t *testing.T) []*binlog.Event {
	t.Helper()
	fde := binary.LittleEndian.AppendUint16(nil, 4)
	fde = append(fde, append([]byte("8.0.36"), make([]byte, 44)...)...)
	fde = binary.LittleEndian.AppendUint32(fde, 1700000000)
	fde = append(fde, binlog.HeaderLen)
	post := make([]byte, 41)
	post[binlog.EventQuery-1], post[binlog.EventTableMap-1], post[binlog.EventWriteRowsV2-1] = 13, 8, 10
	fde = append(append(fde, post...), binlog.ChecksumOff, 0, 0, 0, 0)

	query := make([]byte, 13) // thread id, exec time, schema length, error code, status length
	query[8] = 4
	query = append(query, "test\x00BEGIN"...)
	tableMap := append([]byte{88, 0, 0, 0, 0, 0, 1, 0, 4}, "test\x00\x03tb1\x00\x01\x03\x00\x01"...)
	rows := []byte{88, 0, 0, 0, 0, 0, 1, 0, 2, 0, 1, 1, 0, 7, 0, 0, 0}
	xid := binary.LittleEndian.AppendUint64(nil, 462)
	var inner []byte
	for _, e := range []struct {
		typ  binlog.EventType
		body []byte
	}{{binlog.EventQuery, query}, {binlog.EventTableMap, tableMap}, {binlog.EventWriteRowsV2, rows}, {binlog.EventXID, xid}} {
		inner = append(inner, rawEvent(e.typ, 0, e.body)...)
	}
	// Fields (type, length, packed value): payload size, compression
	// none (255, three bytes packed), uncompressed size, end.
	n := byte(len(inner))
	payload := []byte{1, 1, n, 2, 3, 0xfc, 255, 0, 3, 1, n, 0}
	payload = append(payload, inner...)

	d := binlog.NewDecoder()
	d.SetPosition("b.000001", 4)
	var evs []*binlog.Event
	pos := uint32(4)
	for _, e := range []struct {
		typ  binlog.EventType
		body []byte
	}{{binlog.EventFormatDescription, fde}, {binlog.EventTransactionPayload, payload}} {
		pos += uint32(binlog.HeaderLen + len(e.body))
		ev, err := d.Decode(rawEvent(e.typ, pos, e.body))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestPayloadJSON: --json shows a compressed transaction's events, rows
// included, in the payload's "events".
func TestPayloadJSON(t *testing.T) {
	var out bytes.Buffer
	p := NewJSON(&out)
	for _, ev := range payloadEvents(t) {
		if err := p.Print(ev); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var payload struct {
		Type        string `json:"type"`
		Compression string `json:"compression"`
		Events      []struct {
			Type  string           `json:"type"`
			Query string           `json:"query"`
			Table string           `json:"table"`
			Rows  []map[string]any `json:"rows"`
			XID   uint64           `json:"xid"`
		} `json:"events"`
	}
	if len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &payload) != nil {
		t.Fatalf("output:\n%s", out.String())
	}
	ev := payload.Events
	if payload.Type != "Transaction_payload" || payload.Compression != "none" || len(ev) != 4 ||
		ev[0].Query != "BEGIN" || ev[1].Table != "tb1" || ev[2].Type != "Write_rows" || len(ev[2].Rows) != 1 || ev[3].XID != 462 {
		t.Fatalf("payload: %+v\n%s", payload, lines[1])
	}
	if after, _ := ev[2].Rows[0]["after"].(map[string]any); after["@1"] != 7.0 {
		t.Errorf("row: %v", ev[2].Rows[0])
	}
}

// TestFileEvents: the events binlog dump --file met in real binlogs and
// printed nothing for, or only in text: a statement-based LOAD DATA, a
// tagged Previous_gtids set, a checkpoint, an incident.
func TestFileEvents(t *testing.T) {
	sid, _ := gtid.ParseUUID("55778904-0299-11f1-b1b8-4ef0c4956feb")
	var set gtid.Set
	set.Add(gtid.GTID{Flavor: gtid.MySQL, SID: sid, Seq: 1})
	set.Add(gtid.GTID{Flavor: gtid.MySQL, SID: sid, Tag: "mytag", Seq: 2})
	load := &binlog.QueryEvent{Schema: "d", Query: []byte("LOAD DATA INFILE '/tmp/x' INTO TABLE t"), Load: &binlog.LoadQuery{FileID: 3}}
	evs := []*binlog.Event{
		{Header: binlog.Header{Type: binlog.EventBeginLoadQuery}, Data: &binlog.LoadBlockEvent{FileID: 3, Data: []byte("1\n2\n")}},
		{Header: binlog.Header{Type: binlog.EventExecuteLoadQuery}, Data: load},
		{Header: binlog.Header{Type: binlog.EventDeleteFile}, Data: &binlog.DeleteFileEvent{FileID: 3}},
		{Header: binlog.Header{Type: binlog.EventPreviousGTIDs}, Data: &binlog.PreviousGTIDsEvent{Set: set}},
		{Header: binlog.Header{Type: binlog.EventBinlogCheckpoint}, Data: &binlog.BinlogCheckpointEvent{File: "b.000001"}},
		{Header: binlog.Header{Type: binlog.EventIncident}, Data: &binlog.IncidentEvent{Incident: 1, Message: "lost"}},
	}
	var text, js bytes.Buffer
	tp, jp := NewText(&text), NewJSON(&js)
	for _, ev := range evs {
		if err := tp.Print(ev); err != nil {
			t.Fatal(err)
		}
		if err := jp.Print(ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []string{
		"Begin_load_query: file_id: 3  block_len: 4\n",
		"Execute_load_query: thread_id=0 exec_time=0 error_code=0 db=`d`\nLOAD DATA INFILE '/tmp/x' INTO TABLE t\n# file_id: 3\n",
		"Delete_file: file_id: 3\n",
		"Previous_gtids: 55778904-0299-11f1-b1b8-4ef0c4956feb:1:mytag:2\n",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	for _, want := range []string{
		`"file_id":3,"block_len":4}`, `"load_file_id":3}`, `"type":"Delete_file","server_id":0,"timestamp":0,"file_id":3}`,
		`"gtids":"55778904-0299-11f1-b1b8-4ef0c4956feb:1:mytag:2"}`, `"checkpoint_file":"b.000001"}`, `"incident":1,"message":"lost"}`,
	} {
		if !strings.Contains(js.String(), want) {
			t.Errorf("json lacks %s:\n%s", want, js.String())
		}
	}
}

// TestVectorValues: a VECTOR prints its float32s as MySQL lists them, in
// text and as a JSON array; bytes that are not whole float32s, or values
// JSON has no number for, print as bytes.
func TestVectorValues(t *testing.T) {
	vec := &binlog.Column{Type: binlog.TypeVector, Meta: 4, Collation: 63}
	nan := binary.LittleEndian.AppendUint32(nil, 0x7fc00000)
	cases := []struct {
		b          []byte
		text, json string
	}{
		{[]byte{0xcd, 0xcc, 0x8c, 0x3f, 0, 0, 0x80, 0xbf}, "'[1.1,-1]'", "[1.1,-1]"},
		{nil, "'[]'", "[]"},
		{[]byte{1, 2, 3}, `'\x01\x02\x03'`, `{"hex":"010203"}`},
		{nan, "'[NaN]'", `{"hex":"0000c07f"}`},
	}
	for _, c := range cases {
		v := binlog.Value{Kind: binlog.KindString, B: c.b}
		if got := string(appendValue(nil, &v, vec)); got != c.text {
			t.Errorf("%x: text %s, want %s", c.b, got, c.text)
		}
		if got := string(jsonValue(&v, vec)); got != c.json {
			t.Errorf("%x: json %s, want %s", c.b, got, c.json)
		}
	}
}
