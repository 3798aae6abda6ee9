package binlog

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
)

func mariaDecoder(t testing.TB, crc bool) (*Decoder, *eventBuilder) {
	b := newBuilder(crc)
	d := NewDecoder()
	d.SetPosition("binlog.000001", 4)
	if _, err := d.Decode(b.event(EventFormatDescription, 0, fdeBody("10.11.19-MariaDB-log", false, crc))); err != nil {
		t.Fatal(err)
	}
	return d, b
}

func mariaGTIDBody(seq uint64, domain uint32, flags byte, rest ...byte) []byte {
	body := binary.LittleEndian.AppendUint64(nil, seq)
	body = binary.LittleEndian.AppendUint32(body, domain)
	body = append(append(body, flags), rest...)
	for len(body) < 19 {
		body = append(body, 0) // MariaDB pads the body to 19 bytes
	}
	return body
}

func TestMariaGTIDEvent(t *testing.T) {
	xa := binary.LittleEndian.AppendUint32(nil, 1)
	xa = append(xa, 3, 2)
	xa = append(xa, "gtrbq"...)
	commitID := binary.LittleEndian.AppendUint64(nil, 99)
	saSeq := binary.LittleEndian.AppendUint64(nil, 1234)
	tests := []struct {
		name string
		body []byte
		want MariaGTIDEvent
	}{
		{"standalone ddl", mariaGTIDBody(7, 2, MariaFlStandalone|MariaFlDDL), MariaGTIDEvent{Flags2: MariaFlStandalone | MariaFlDDL}},
		{"group commit id", mariaGTIDBody(7, 2, MariaFlTransactional|MariaFlGroupCommitID, commitID...),
			MariaGTIDEvent{Flags2: MariaFlTransactional | MariaFlGroupCommitID, CommitID: 99}},
		{"prepared xa", mariaGTIDBody(7, 2, MariaFlPreparedXA|MariaFlTransactional, xa...),
			MariaGTIDEvent{Flags2: MariaFlPreparedXA | MariaFlTransactional, XID: &XAID{FormatID: 1, GTRID: []byte("gtr"), BQUAL: []byte("bq")}}},
		{"multi-engine extra flags", mariaGTIDBody(7, 2, MariaFlTransactional, append(append([]byte(nil), commitID[:0]...), mariaFlExtraMultiEng, 2)...),
			MariaGTIDEvent{Flags2: MariaFlTransactional, FlagsExtra: mariaFlExtraMultiEng, ExtraEngines: 2}},
		{"commit alter", mariaGTIDBody(7, 2, MariaFlStandalone|MariaFlDDL, append([]byte{mariaFlExtraCommitAlt}, saSeq...)...),
			MariaGTIDEvent{Flags2: MariaFlStandalone | MariaFlDDL, FlagsExtra: mariaFlExtraCommitAlt, SAseqNo: 1234}},
		{"xa, commit id and extra flags", mariaGTIDBody(7, 2, MariaFlCompletedXA|MariaFlGroupCommitID,
			append(append(append([]byte(nil), commitID...), xa...), mariaFlExtraStartAlt)...),
			MariaGTIDEvent{Flags2: MariaFlCompletedXA | MariaFlGroupCommitID, CommitID: 99, FlagsExtra: mariaFlExtraStartAlt,
				XID: &XAID{FormatID: 1, GTRID: []byte("gtr"), BQUAL: []byte("bq")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, b := mariaDecoder(t, true)
			b.serverID = 5
			ev, err := d.Decode(b.event(EventMariaGTID, 0, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got := ev.Data.(*MariaGTIDEvent)
			want := tt.want
			want.GTID = gtid.GTID{Flavor: gtid.MariaDB, Domain: 2, ServerID: 5, Seq: 7}
			if got.GTID != want.GTID || got.Flags2 != want.Flags2 || got.CommitID != want.CommitID || got.FlagsExtra != want.FlagsExtra ||
				got.ExtraEngines != want.ExtraEngines || got.SAseqNo != want.SAseqNo || (got.XID == nil) != (want.XID == nil) {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
			if want.XID != nil && got.XID.String() != want.XID.String() {
				t.Fatalf("xid %s, want %s", got.XID, want.XID)
			}
		})
	}
}

func TestMariaGTIDList(t *testing.T) {
	body := binary.LittleEndian.AppendUint32(nil, 2|1<<28)
	for _, g := range [][3]uint64{{0, 1, 100}, {3, 7, 5}} {
		body = binary.LittleEndian.AppendUint32(body, uint32(g[0]))
		body = binary.LittleEndian.AppendUint32(body, uint32(g[1]))
		body = binary.LittleEndian.AppendUint64(body, g[2])
	}
	d, b := mariaDecoder(t, true)
	ev, err := d.Decode(b.event(EventMariaGTIDList, 0, body))
	if err != nil {
		t.Fatal(err)
	}
	l := ev.Data.(*GTIDListEvent)
	if l.Flags != 1 || len(l.List) != 2 || l.List[1].String() != "3-7-5" {
		t.Fatalf("got %+v", l)
	}
	binary.LittleEndian.PutUint32(body, 3)
	if _, err := d.Decode(b.event(EventMariaGTIDList, 0, body)); err == nil {
		t.Fatal("count larger than the body accepted")
	}
}

// queryWithStatus builds a QUERY body with status variables.
func queryWithStatus(status []byte, schema, query string) []byte {
	body := binary.LittleEndian.AppendUint32(nil, 9)
	body = binary.LittleEndian.AppendUint32(body, 0)
	body = append(body, byte(len(schema)))
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint16(body, uint16(len(status)))
	body = append(append(append(body, status...), schema...), 0)
	return append(body, query...)
}

func TestQueryStatusVars(t *testing.T) {
	var st []byte
	st = append(binary.LittleEndian.AppendUint32(append(st, 0), 0x4000), 1)
	st = binary.LittleEndian.AppendUint64(st, 1411383296)
	st = append(st, 2, 3, 'd', 'e', 'f', 0)
	st = binary.LittleEndian.AppendUint16(binary.LittleEndian.AppendUint16(append(st, 3), 2), 1)
	st = append(st, 4, 45, 0, 46, 0, 47, 0)
	st = append(st, 5, 6)
	st = append(st, "+00:00"...)
	st = append(st, 12, 2, 'a', 0, 'b', 0)
	st = append(st, 128, 1, 2, 3)
	st = binary.LittleEndian.AppendUint64(append(st, 129), 77)
	st = binary.LittleEndian.AppendUint64(append(st, 130, mariaFlExtraCommitAlt), 5)
	st = append(st, 8, 33, 0)
	st = append(st, 200, 1, 2, 3) // unknown: parsing stops here
	st = append(st, 7, 1, 0)
	d, b := mariaDecoder(t, true)
	ev, err := d.Decode(b.event(EventQuery, 0, queryWithStatus(st, "db", "ALTER TABLE t ADD c INT")))
	if err != nil {
		t.Fatal(err)
	}
	q := ev.Data.(*QueryEvent)
	s := q.Status
	if q.Schema != "db" || string(q.Query) != "ALTER TABLE t ADD c INT" || q.ThreadID != 9 {
		t.Fatalf("query %+v", q)
	}
	if !s.HasFlags2 || s.Flags2 != 0x4000 || !s.HasSQLMode || s.SQLMode != 1411383296 || s.AutoIncInc != 2 || s.AutoIncOffset != 1 ||
		s.ClientCharset != 45 || s.ConnCollation != 46 || s.ServerCollat != 47 || s.TimeZone != "+00:00" || s.MariaXid != 77 ||
		s.GTIDFlags3 != mariaFlExtraCommitAlt || s.CharsetDB != 33 || s.LCTimeNames != 0 ||
		!s.HasMicros || s.Micros != 0x030201 || !s.MariaDB {
		t.Fatalf("status %+v", s)
	}
	// 10.11 records explicit_defaults_for_timestamp in flags2: clear here.
	if !s.HasExplicitDefaultsTS || s.ExplicitDefaultsTS {
		t.Fatalf("explicit_defaults_for_timestamp %v/%v from flags2 0x4000", s.HasExplicitDefaultsTS, s.ExplicitDefaultsTS)
	}
}

func zlibWrap(t testing.TB, data []byte) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	w.Write(data)
	w.Close()
	n := len(data)
	hdr := []byte{0x80 | 3, byte(n >> 16), byte(n >> 8), byte(n)}
	return append(hdr, z.Bytes()...)
}

func TestCompressedEvents(t *testing.T) {
	d, b := mariaDecoder(t, true)
	query := strings.Repeat("INSERT INTO t VALUES (1); ", 10)
	ev, err := d.Decode(b.event(EventQueryCompressed, 0, queryWithStatus(nil, "db", string(zlibWrap(t, []byte(query))))))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(ev.Data.(*QueryEvent).Query); got != query {
		t.Fatalf("query %q", got)
	}
	if _, err := d.Decode(b.event(EventTableMap, 0, intTable(4, 6))); err != nil {
		t.Fatal(err)
	}
	rows := rowsBody(EventWriteRowsV1, 4, 6, 2, nil, nil)
	rows = append(rows, zlibWrap(t, append(intRow(3, "zz"), intRow(4, "y")...))...)
	ev, err = d.Decode(b.event(EventWriteRowsCompressedV1, 0, rows))
	if err != nil {
		t.Fatal(err)
	}
	vals, err := ev.Data.(*RowsEvent).AppendRows(nil)
	if err != nil || len(vals) != 4 || vals[2].N != 4 || string(vals[1].B) != "zz" {
		t.Fatalf("%v %v", vals, err)
	}
	for _, bad := range [][]byte{{0x03, 0, 0, 1}, {0x85, 0}, {0x81}, {0x81, 0xff, 0x78, 0x9c}, {0x91, 1, 0}} {
		if _, err := decompress(bad); err == nil {
			t.Errorf("decompress(%x) accepted", bad)
		}
	}
}

func TestQueryKind(t *testing.T) {
	tests := []struct {
		q    string
		want QueryKind
	}{
		{"BEGIN", QueryBegin},
		{"begin work", QueryBegin},
		{"START TRANSACTION", QueryBegin},
		{"BEGIN NOT ATOMIC SELECT 1; END", QueryOther},
		{"COMMIT", QueryCommit},
		{"  /* c */ COMMIT /* implicit */", QueryCommit},
		{"ROLLBACK", QueryRollback},
		{"ROLLBACK TO `sp1`", QuerySavepoint},
		{"ROLLBACK WORK TO SAVEPOINT sp", QuerySavepoint},
		{"SAVEPOINT `sp1`", QuerySavepoint},
		{"RELEASE SAVEPOINT sp", QuerySavepoint},
		{"XA START X'61',X'62',7", QueryXA},
		{"xa commit 'x'", QueryXA},
		{"XAX", QueryOther},
		{"# comment\nCOMMIT", QueryCommit},
		{"-- comment\nBEGIN", QueryBegin},
		{"/*!40000 ALTER TABLE t DISABLE KEYS */", QueryOther},
		{"CREATE TABLE t (id INT)", QueryOther},
		{"DROP TABLE IF EXISTS `t` /* generated by server */", QueryOther},
		{"/* unterminated", QueryOther},
		{"", QueryOther},
		{"'COMMIT'", QueryOther},
		{"COMMIT1", QueryOther},
		{"/*!40101 BEGIN NOT ATOMIC SELECT 1; END */", QueryOther},
		{"ROLLBACK /* x */ WORK -- y\n TO sp", QuerySavepoint},
		{"XA/**/COMMIT 'x'", QueryXA},
	}
	for _, tt := range tests {
		q := &QueryEvent{Query: []byte(tt.q)}
		if got := q.Kind(); got != tt.want {
			t.Errorf("%q: kind %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestXAVerb(t *testing.T) {
	for q, want := range map[string]string{
		"XA START X'61',X'62',7":       "START",
		"xa commit 'x'":                "COMMIT",
		"/* XA END */ XA ROLLBACK 'x'": "ROLLBACK",
		"XA":                           "",
		"COMMIT":                       "",
		"SELECT 'XA COMMIT'":           "",
	} {
		if got := (&QueryEvent{Query: []byte(q)}).XAVerb(); got != want {
			t.Errorf("%q: XAVerb %q, want %q", q, got, want)
		}
	}
}

// TestQueryKindNoAllocation: Kind runs on every query event.
func TestQueryKindNoAllocation(t *testing.T) {
	q := &QueryEvent{Query: []byte("COMMIT")}
	if n := testing.AllocsPerRun(100, func() { _ = q.Kind() }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}

func TestPositions(t *testing.T) {
	b := newBuilder(true)
	d := NewDecoder()
	// A dump starts with a fake rotate naming the file (timestamp 0).
	rot := binary.LittleEndian.AppendUint64(nil, 1234)
	fake := b.event(EventRotate, FlagArtificial, append(rot, "binlog.000007"...))
	binary.LittleEndian.PutUint32(fake[0:], 0)
	binary.LittleEndian.PutUint32(fake[13:], 0)
	fixCRC(fake)
	if _, err := d.Decode(fake); err != nil {
		t.Fatal(err)
	}
	if f, p := d.File(); f != "binlog.000007" || p != 1234 {
		t.Fatalf("after fake rotate: %s:%d", f, p)
	}
	// The format description resent mid-file has log_pos 0: no move.
	fde := b.event(EventFormatDescription, 0, fdeBody("10.11.19-MariaDB-log", false, true))
	binary.LittleEndian.PutUint32(fde[13:], 0)
	fixCRC(fde)
	if _, err := d.Decode(fde); err != nil {
		t.Fatal(err)
	}
	if _, p := d.File(); p != 1234 {
		t.Fatalf("format description moved the position to %d", p)
	}
	b.pos = 1234
	if _, err := d.Decode(b.event(EventTableMap, 0, intTable(4, 6))); err != nil {
		t.Fatal(err)
	}
	if _, p := d.File(); p != uint64(b.pos) {
		t.Fatalf("position %d, want %d", p, b.pos)
	}
	// A real rotate ends the file and its table ids.
	ev, err := d.Decode(b.event(EventRotate, 0, append(binary.LittleEndian.AppendUint64(nil, 4), "binlog.000008"...)))
	if err != nil || ev.Data.(*RotateEvent).Fake {
		t.Fatalf("rotate: %v %+v", err, ev)
	}
	if _, ok := d.Table(4); ok {
		t.Fatal("table map survived a rotate")
	}
	if f, p := d.File(); f != "binlog.000008" || p != 4 {
		t.Fatalf("after rotate: %s:%d", f, p)
	}
}

func fixCRC(raw []byte) {
	n := len(raw) - 4
	binary.LittleEndian.PutUint32(raw[n:], eventCRC(raw[:n], parseHeader(raw)))
}

func TestFormatDescriptionChecksum(t *testing.T) {
	for _, crc := range []bool{true, false} {
		b := newBuilder(crc)
		d := NewDecoder()
		ev, err := d.Decode(b.event(EventFormatDescription, FlagBinlogInUse, fdeBody("10.11.19-MariaDB-log", false, crc)))
		if err != nil {
			t.Fatal(err)
		}
		f := ev.Data.(*FormatDescriptionEvent)
		if want := map[bool]byte{true: ChecksumCRC32, false: ChecksumOff}[crc]; f.Checksum != want || len(f.PostHeaderLens) != 41 {
			t.Fatalf("crc=%v: checksum %d, %d post-header lengths", crc, f.Checksum, len(f.PostHeaderLens))
		}
		if f.Flavor != FlavorMariaDB || f.postHeaderLen(EventTableMap) != 8 {
			t.Fatalf("flavor %s", f.Flavor)
		}
	}
	// The server clears BINLOG_IN_USE in place when it closes a file; the
	// CRC was computed with the flag cleared, so both forms verify.
	b := newBuilder(true)
	raw := b.event(EventFormatDescription, 0, fdeBody("8.0.36", false, true))
	raw[17] |= byte(FlagBinlogInUse)
	if _, err := NewDecoder().Decode(raw); err != nil {
		t.Fatalf("in-use format description: %v", err)
	}
	raw[30] ^= 1
	if _, err := NewDecoder().Decode(raw); !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt format description: %v", err)
	}
}

func TestHeartbeat(t *testing.T) {
	tests := []struct {
		name string
		fde  bool
		body []byte
		pos  uint32
		want HeartbeatEvent
	}{
		{"no format description yet, with crc", false, append([]byte("binlog.000003"), 0x01, 0x9c, 0xff, 0x00), 555,
			HeartbeatEvent{File: "binlog.000003", Pos: 555}},
		{"past 4 GiB", true, append(binary.LittleEndian.AppendUint64(nil, 5<<30), "binlog.000003"...), 0,
			HeartbeatEvent{File: "binlog.000003", Pos: 5 << 30}},
		{"printable crc after the format description", true, []byte("binlog.000003"), 42,
			HeartbeatEvent{File: "binlog.000003", Pos: 42}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, b := mariaDecoder(t, true)
			if !tt.fde {
				d, b = NewDecoder(), newBuilder(false)
			}
			raw := b.event(EventHeartbeat, FlagArtificial, tt.body)
			binary.LittleEndian.PutUint32(raw[0:], 0)
			binary.LittleEndian.PutUint32(raw[13:], tt.pos)
			if tt.fde {
				fixCRC(raw)
			}
			ev, err := d.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := *ev.Data.(*HeartbeatEvent); got != tt.want {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	d, b := mariaDecoder(t, true)
	raw := b.event(EventXID, 0, binary.LittleEndian.AppendUint64(nil, 1))
	pos := uint64(b.pos) - uint64(len(raw))
	tests := []struct {
		name string
		raw  []byte
		want string
	}{
		{"short", raw[:10], "shorter than its header"},
		{"size mismatch", raw[:len(raw)-1], "header says"},
		{"bad crc", append(append([]byte(nil), raw[:len(raw)-1]...), raw[len(raw)-1]^1), "checksum mismatch"},
		{"no table map", b.event(EventWriteRowsV1, 0, rowsBody(EventWriteRowsV1, 77, 6, 2, nil, intRow(1, "a"))), "no table map"},
	}
	for _, tt := range tests {
		_, err := d.Decode(tt.raw)
		var de *DecodeError
		if !errors.As(err, &de) || de.File != "binlog.000001" || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v", tt.name, err)
		}
		if tt.name == "bad crc" && (de.Pos != pos || de.Type != EventXID || !errors.Is(err, ErrChecksum)) {
			t.Errorf("%s: %+v", tt.name, de)
		}
	}
}

func TestTableMapOwnsItsBytes(t *testing.T) {
	d, b := mariaDecoder(t, true)
	tlv := append([]byte{metaEnumStrValue}, lenenc(5)...)
	tlv = append(tlv, 2, 1, 'a', 1, 'b')
	body := tableMapBody(3, 6, "d", "e", []ColumnType{TypeString}, []byte{byte(TypeEnum), 1}, tlv)
	raw := b.event(EventTableMap, 0, body)
	ev, err := d.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'X' // a stream reader reuses its buffer
	}
	c := ev.Data.(*TableMap).Columns[0]
	if c.Type != TypeEnum || len(c.EnumValues) != 2 || string(c.EnumValues[1]) != "b" {
		t.Fatalf("enum column after the buffer was reused: %+v", c)
	}
}

func TestRowsWithoutColumnsPresent(t *testing.T) {
	d, b := mariaDecoder(t, true)
	if _, err := d.Decode(b.event(EventTableMap, 0, intTable(4, 6))); err != nil {
		t.Fatal(err)
	}
	body := rowsBody(EventWriteRowsV1, 4, 6, 2, nil, []byte{1, 2, 3})
	body[9] = 0 // columns-present bitmap: none
	ev, err := d.Decode(b.event(EventWriteRowsV1, 0, body))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Data.(*RowsEvent).AppendRows(nil); err == nil {
		t.Fatal("rows of zero bytes accepted (the loop would never end)")
	}
}

func TestInitialChecksum(t *testing.T) {
	// A fake rotate before the format description, with a CRC whose bytes
	// happen to be printable: only the declared algorithm tells.
	for i := 0; ; i++ {
		b := newBuilder(true)
		name := fmt.Sprintf("binlog.%06d", i)
		raw := b.event(EventRotate, FlagArtificial, append(binary.LittleEndian.AppendUint64(nil, 4), name...))
		binary.LittleEndian.PutUint32(raw[0:], 0)
		binary.LittleEndian.PutUint32(raw[13:], 0)
		fixCRC(raw)
		if !printable(raw[len(raw)-4:]) {
			continue
		}
		d := NewDecoder()
		d.SetInitialChecksum(ChecksumCRC32)
		ev, err := d.Decode(raw)
		if err != nil || ev.Data.(*RotateEvent).NextFile != name {
			t.Fatalf("got %+v, %v", ev, err)
		}
		raw[len(raw)-1] ^= 0x01
		if _, err := d.Decode(raw); !errors.Is(err, ErrChecksum) {
			t.Fatalf("corrupt fake rotate: %v", err)
		}
		return
	}
}

func TestIncidentSkippedAndReset(t *testing.T) {
	d, b := mariaDecoder(t, true)
	ev, err := d.Decode(b.event(EventIncident, 0, append([]byte{1, 0, 9}, "lost evts"...)))
	if err != nil {
		t.Fatal(err)
	}
	if in := ev.Data.(*IncidentEvent); in.Incident != 1 || in.Message != "lost evts" {
		t.Fatalf("incident %+v", in)
	}
	for _, typ := range []EventType{EventStop} {
		ev, err := d.Decode(b.event(typ, 0, make([]byte, 9)))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.Data.(*SkippedEvent); !ok {
			t.Fatalf("%s: %T", typ, ev.Data)
		}
	}
	// A fake GTID list after skipped groups carries the real position.
	raw := b.event(EventMariaGTIDList, FlagArtificial, binary.LittleEndian.AppendUint32(nil, 0))
	binary.LittleEndian.PutUint32(raw[0:], 0)
	binary.LittleEndian.PutUint32(raw[13:], 9999)
	fixCRC(raw)
	if _, err := d.Decode(raw); err != nil {
		t.Fatal(err)
	}
	if _, p := d.File(); p != 9999 {
		t.Fatalf("position %d after a fake GTID list at 9999", p)
	}
	if _, err := d.Decode(b.event(EventTableMap, 0, intTable(4, 6))); err != nil {
		t.Fatal(err)
	}
	d.Reset()
	if _, ok := d.Table(4); ok || d.EventFormatDescription() != nil {
		t.Fatal("Reset kept state")
	}
	if _, err := d.Decode(b.event(EventXID, 0, make([]byte, 8))); err == nil {
		t.Fatal("event before a format description accepted after Reset")
	}
}
