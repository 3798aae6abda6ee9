package binlog

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/binlane/binlane/internal/gtid"
)

// MySQL-only events, built from the documented layouts (see builder_test.go).

func gtidBody(anonymous bool, tail []byte) []byte {
	body := []byte{1} // flags: may have statement-based events
	sid := make([]byte, 16)
	gno := uint64(42)
	if !anonymous {
		for i := range sid {
			sid[i] = byte(0x10 + i)
		}
	} else {
		gno = 0
	}
	body = append(body, sid...)
	body = binary.LittleEndian.AppendUint64(body, gno)
	return append(body, tail...)
}

func appendUint56(b []byte, v uint64) []byte {
	for i := 0; i < 7; i++ {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

func TestMySQLGTIDEvent(t *testing.T) {
	logical := []byte{2}
	logical = binary.LittleEndian.AppendUint64(logical, 7)
	logical = binary.LittleEndian.AppendUint64(logical, 8)
	full := append([]byte(nil), logical...)
	full = appendUint56(full, 1700000000123456|1<<55)
	full = appendUint56(full, 1600000000654321)
	full = append(full, lenenc(70000)...)
	full = binary.LittleEndian.AppendUint32(full, 80036|1<<31)
	full = binary.LittleEndian.AppendUint32(full, 50744)
	same := append([]byte(nil), logical...)
	same = appendUint56(same, 1700000000123456)
	same = append(same, lenenc(300)...)
	same = binary.LittleEndian.AppendUint32(same, 80036)
	tests := []struct {
		name string
		typ  EventType
		body []byte
		want MySQLGTIDEvent
	}{
		{"8.0 with originals", EventMySQLGTID, gtidBody(false, full), MySQLGTIDEvent{Flags: 1, LastCommitted: 7, SequenceNumber: 8,
			ImmediateCommitTS: 1700000000123456, OriginalCommitTS: 1600000000654321, TransactionLength: 70000,
			ImmediateServerVersion: 80036, OriginalServerVersion: 50744}},
		{"8.0 original equals immediate", EventMySQLGTID, gtidBody(false, same), MySQLGTIDEvent{Flags: 1, LastCommitted: 7, SequenceNumber: 8,
			ImmediateCommitTS: 1700000000123456, OriginalCommitTS: 1700000000123456, TransactionLength: 300,
			ImmediateServerVersion: 80036, OriginalServerVersion: 80036}},
		{"5.7 logical clock only", EventMySQLGTID, gtidBody(false, logical), MySQLGTIDEvent{Flags: 1, LastCommitted: 7, SequenceNumber: 8}},
		{"5.6 no logical clock", EventMySQLGTID, gtidBody(false, nil), MySQLGTIDEvent{Flags: 1}},
		{"anonymous", EventAnonymousGTID, gtidBody(true, full), MySQLGTIDEvent{Anonymous: true, Flags: 1, LastCommitted: 7, SequenceNumber: 8,
			ImmediateCommitTS: 1700000000123456, OriginalCommitTS: 1600000000654321, TransactionLength: 70000,
			ImmediateServerVersion: 80036, OriginalServerVersion: 50744}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, b := mysqlDecoder(t, false)
			ev, err := d.Decode(b.event(tt.typ, 0, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got := *ev.Data.(*MySQLGTIDEvent)
			want := tt.want
			if !want.Anonymous {
				want.GTID = gtid.GTID{Flavor: gtid.MySQL, Seq: 42}
				for i := range want.GTID.SID {
					want.GTID.SID[i] = byte(0x10 + i)
				}
			}
			if got != want {
				t.Fatalf("got  %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestMySQLGTIDRejectsBadGNO(t *testing.T) {
	d, b := mysqlDecoder(t, false)
	body := gtidBody(false, nil)
	binary.LittleEndian.PutUint64(body[17:], 0)
	_, err := d.Decode(b.event(EventMySQLGTID, 0, body))
	var de *DecodeError
	if !errors.As(err, &de) || de.Type != EventMySQLGTID {
		t.Fatalf("gno 0: got %v", err)
	}
}

func TestPreviousGTIDs(t *testing.T) {
	set, err := gtid.ParseSet("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:7,4e11fa47-71ca-11e1-9e33-c80aa9429562:10")
	if err != nil {
		t.Fatal(err)
	}
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventPreviousGTIDs, 0, set.EncodeMySQL()))
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Data.(*PreviousGTIDsEvent).Set; !got.Equal(set) {
		t.Fatalf("got %s, want %s", got, set)
	}
}

func TestHeartbeatV2(t *testing.T) {
	body := append([]byte{1}, lenenc(13)...)
	body = append(body, "binlog.000042"...)
	pos := lenenc(5_000_000_000)
	body = append(append(append(body, 2), lenenc(uint64(len(pos)))...), pos...)
	body = append(body, 0)
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventHeartbeatV2, FlagArtificial, body))
	if err != nil {
		t.Fatal(err)
	}
	hb := ev.Data.(*HeartbeatEvent)
	if hb.File != "binlog.000042" || hb.Pos != 5_000_000_000 {
		t.Fatalf("got %+v", hb)
	}
	if _, next := d.File(); next != 4+uint64(len(b.event(EventFormatDescription, 0, fdeBody("8.0.36", false, true)))) {
		t.Fatalf("a heartbeat moved the position to %d", next)
	}
}

func TestXAPrepare(t *testing.T) {
	body := []byte{1}
	body = binary.LittleEndian.AppendUint32(body, 1)
	body = binary.LittleEndian.AppendUint32(body, 3)
	body = binary.LittleEndian.AppendUint32(body, 2)
	body = append(body, "abcde"...)
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventXAPrepare, 0, body))
	if err != nil {
		t.Fatal(err)
	}
	x := ev.Data.(*XAPrepareEvent)
	if !x.OnePhase || x.XID.FormatID != 1 || string(x.XID.GTRID) != "abc" || string(x.XID.BQUAL) != "de" {
		t.Fatalf("got %+v", x)
	}
	binary.LittleEndian.PutUint32(body[5:], 65)
	if _, err := d.Decode(b.event(EventXAPrepare, 0, body)); err == nil {
		t.Fatal("gtrid of 65 bytes accepted")
	}
}

func TestUnknownEvents(t *testing.T) {
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventType(99), FlagIgnorable, []byte("future")))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ev.Data.(*SkippedEvent); !ok {
		t.Fatalf("ignorable unknown event: got %T", ev.Data)
	}
	raw := b.event(EventType(99), 0, []byte("future"))
	_, err = d.Decode(raw)
	var de *DecodeError
	if !errors.As(err, &de) || de.Type != 99 || !strings.Contains(err.Error(), "not marked ignorable") {
		t.Fatalf("unknown event: got %v", err)
	}
	if de.Pos != uint64(b.pos)-uint64(len(raw)) {
		t.Fatalf("error at %d, event at %d", de.Pos, uint64(b.pos)-uint64(len(raw)))
	}
}

// intTable maps `d`.`t` (INT, VARCHAR(10)) under id.
func intTable(id uint64, idLen int) []byte {
	return tableMapBody(id, idLen, "d", "t", []ColumnType{TypeLong, TypeVarchar}, []byte{10, 0}, nil)
}

// intRow is one row image of intTable.
func intRow(n int32, s string) []byte {
	row := []byte{0}
	row = binary.LittleEndian.AppendUint32(row, uint32(n))
	return append(append(row, byte(len(s))), s...)
}

func TestTableIDWidths(t *testing.T) {
	for _, tt := range []struct {
		short bool
		id    uint64
		typ   EventType
	}{
		{true, 0xfffffffe, EventWriteRowsV1},
		{false, 0xfffffffffffe, EventWriteRowsV1},
		{false, 0x123456789a, EventWriteRowsV2},
	} {
		idLen := 6
		if tt.short {
			idLen = 4
		}
		d, b := mysqlDecoder(t, tt.short)
		ev, err := d.Decode(b.event(EventTableMap, 0, intTable(tt.id, idLen)))
		if err != nil {
			t.Fatal(err)
		}
		if tm := ev.Data.(*TableMap); tm.TableID != tt.id || tm.QualifiedName() != "`d`.`t`" {
			t.Fatalf("table map: id %d name %s", tm.TableID, tm.QualifiedName())
		}
		ev, err = d.Decode(b.event(tt.typ, 0, rowsBody(tt.typ, tt.id, idLen, 2, nil, intRow(-7, "x"))))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := ev.Data.(*RowsEvent).AppendRows(nil)
		if err != nil || len(vals) != 2 || vals[0].N != -7 || string(vals[1].B) != "x" {
			t.Fatalf("id %x: %v %v", tt.id, vals, err)
		}
	}
}

func TestRowsV2ExtraData(t *testing.T) {
	d, b := mysqlDecoder(t, false)
	if _, err := d.Decode(b.event(EventTableMap, 0, intTable(5, 6))); err != nil {
		t.Fatal(err)
	}
	// Partition info (type 1): partition id, and for updates the source
	// partition id.
	extra := []byte{1, 3, 0, 2, 0}
	rows := append(intRow(1, "a"), intRow(2, "bb")...)
	for _, typ := range []EventType{EventWriteRowsV2, EventUpdateRowsV2, EventDeleteRowsV2} {
		ev, err := d.Decode(b.event(typ, 0, rowsBody(typ, 5, 6, 2, extra, rows)))
		if err != nil {
			t.Fatal(err)
		}
		vals, err := ev.Data.(*RowsEvent).AppendRows(nil)
		if err != nil || len(vals) != 4 || vals[2].N != 2 || string(vals[3].B) != "bb" {
			t.Fatalf("%s: %v %v", typ, vals, err)
		}
	}
	body := rowsBody(EventWriteRowsV2, 5, 6, 2, extra, rows)
	binary.LittleEndian.PutUint16(body[8:], 1)
	if _, err := d.Decode(b.event(EventWriteRowsV2, 0, body)); err == nil {
		t.Fatal("extra data length 1 accepted")
	}
}

func TestPartialUpdateRows(t *testing.T) {
	d, b := mysqlDecoder(t, false)
	// (INT, JSON): one JSON column, 4-byte length prefix.
	tm := tableMapBody(9, 6, "d", "j", []ColumnType{TypeLong, TypeJSON}, []byte{4}, nil)
	if _, err := d.Decode(b.event(EventTableMap, 0, tm)); err != nil {
		t.Fatal(err)
	}
	doc := encodeJSONDoc(jsonObj{{"a", int64(1)}})
	image := func(n int32) []byte {
		r := []byte{0}
		r = binary.LittleEndian.AppendUint32(r, uint32(n))
		r = binary.LittleEndian.AppendUint32(r, uint32(len(doc)))
		return append(r, doc...)
	}
	before := image(1)
	for _, tt := range []struct {
		name    string
		after   []byte
		wantErr error
	}{
		{"no options", append([]byte{0}, image(1)...), nil},
		{"partial option, full value", append([]byte{1, 0}, image(1)...), nil},
		{"partial value", append([]byte{1, 1}, image(1)...), ErrPartialJSON},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rows := append(append([]byte(nil), before...), tt.after...)
			ev, err := d.Decode(b.event(EventPartialUpdateRows, 0, rowsBody(EventPartialUpdateRows, 9, 6, 2, nil, rows)))
			if err != nil {
				t.Fatal(err)
			}
			vals, err := ev.Data.(*RowsEvent).AppendRows(nil)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if err == nil && (len(vals) != 4 || vals[3].String() != `{"a": 1}`) {
				t.Fatalf("values %v", vals)
			}
		})
	}
}

func payloadBody(compression uint64, uncompressed, payload []byte) []byte {
	field := func(b []byte, typ, v uint64) []byte {
		val := lenenc(v)
		return append(append(append(b, lenenc(typ)...), lenenc(uint64(len(val)))...), val...)
	}
	var body []byte
	body = field(body, 1, uint64(len(payload)))
	body = field(body, 2, compression)
	body = field(body, 3, uint64(len(uncompressed)))
	body = append(body, 0)
	return append(body, payload...)
}

func payloadEvents() []byte {
	var inner []byte
	inner = append(inner, innerEvent(EventQuery, queryBody("d", "BEGIN"))...)
	inner = append(inner, innerEvent(EventTableMap, intTable(3, 6))...)
	inner = append(inner, innerEvent(EventWriteRowsV2, rowsBody(EventWriteRowsV2, 3, 6, 2, nil, intRow(9, "in")))...)
	return append(inner, innerEvent(EventXID, binary.LittleEndian.AppendUint64(nil, 77))...)
}

func TestTransactionPayloadUncompressed(t *testing.T) {
	d, b := mysqlDecoder(t, false)
	inner := payloadEvents()
	ev, err := d.Decode(b.event(EventTransactionPayload, 0, payloadBody(255, inner, inner)))
	if err != nil {
		t.Fatal(err)
	}
	checkPayload(t, ev.Data.(*TransactionPayloadEvent))
	// A broken inner row image is reported at the payload's position, as
	// the inner event's type.
	bad := append(innerEvent(EventTableMap, intTable(3, 6)),
		innerEvent(EventWriteRowsV2, rowsBody(EventWriteRowsV2, 3, 6, 2, nil, []byte{0, 1, 0, 0, 0, 200, 'x'}))...)
	raw := b.event(EventTransactionPayload, 0, payloadBody(255, bad, bad))
	ev, err = d.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ev.Data.(*TransactionPayloadEvent).Events[1].Data.(*RowsEvent).AppendRows(nil)
	var de *DecodeError
	if !errors.As(err, &de) || de.Type != EventWriteRowsV2 || de.Pos != ev.Pos || ev.Pos != uint64(b.pos)-uint64(len(raw)) {
		t.Fatalf("inner row error: %v (%+v)", err, de)
	}
}

func TestTransactionPayloadZstd(t *testing.T) {
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := payloadEvents()
	compressed := enc.EncodeAll(inner, nil)
	enc.Close()
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventTransactionPayload, 0, payloadBody(0, inner, compressed)))
	if err != nil {
		t.Fatal(err)
	}
	checkPayload(t, ev.Data.(*TransactionPayloadEvent))
	compressed[len(compressed)/2] ^= 0xff
	if _, err := d.Decode(b.event(EventTransactionPayload, 0, payloadBody(0, inner, compressed))); err == nil {
		t.Fatal("corrupt zstd frame accepted")
	}
}

func checkPayload(t *testing.T, p *TransactionPayloadEvent) {
	t.Helper()
	if len(p.Events) != 4 {
		t.Fatalf("%d inner events", len(p.Events))
	}
	if q := p.Events[0].Data.(*QueryEvent); q.Kind() != QueryBegin {
		t.Fatalf("first inner event %q", q.Query)
	}
	vals, err := p.Events[2].Data.(*RowsEvent).AppendRows(nil)
	if err != nil || len(vals) != 2 || vals[0].N != 9 || string(vals[1].B) != "in" {
		t.Fatalf("inner rows: %v %v", vals, err)
	}
	if x := p.Events[3].Data.(*XIDEvent); x.XID != 77 {
		t.Fatalf("inner xid %d", x.XID)
	}
}

func TestTransactionPayloadErrors(t *testing.T) {
	inner := payloadEvents()
	for _, tt := range []struct {
		name string
		body []byte
		want string
	}{
		{"unknown compression", payloadBody(7, inner, inner), "compression"},
		{"truncated inner event", payloadBody(255, inner, inner[:len(inner)-3]), "payload"},
		{"size mismatch", payloadBody(255, inner[:10], inner), "size"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, b := mysqlDecoder(t, false)
			_, err := d.Decode(b.event(EventTransactionPayload, 0, tt.body))
			var de *DecodeError
			if !errors.As(err, &de) || de.Type != EventTransactionPayload || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// queryBody builds a QUERY body with no status variables.
func queryBody(schema, query string) []byte {
	body := binary.LittleEndian.AppendUint32(nil, 1)
	body = binary.LittleEndian.AppendUint32(body, 0)
	body = append(body, byte(len(schema)))
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = append(append(body, schema...), 0)
	return append(body, query...)
}
