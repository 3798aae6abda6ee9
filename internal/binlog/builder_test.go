package binlog

import (
	"encoding/binary"
	"hash/crc32"
)

// Test-only event builders. No MySQL server can be installed here, so the
// MySQL-only paths are tested with events assembled byte by byte from the
// documented layouts (MySQL's libbinlogevents headers and the protocol
// notes in shared/research/binlog-protocol.md sections 3 and 4); they are
// unverified against a live MySQL server.

type eventBuilder struct {
	serverID uint32
	pos      uint32
	crc      bool
}

func newBuilder(crc bool) *eventBuilder { return &eventBuilder{serverID: 1, pos: 4, crc: crc} }

// event frames a body: common header, then the CRC32 trailer when enabled.
func (b *eventBuilder) event(typ EventType, flags uint16, body []byte) []byte {
	size := HeaderLen + len(body)
	if b.crc {
		size += 4
	}
	b.pos += uint32(size)
	raw := make([]byte, HeaderLen, size)
	binary.LittleEndian.PutUint32(raw[0:], 1700000000)
	raw[4] = byte(typ)
	binary.LittleEndian.PutUint32(raw[5:], b.serverID)
	binary.LittleEndian.PutUint32(raw[9:], uint32(size))
	binary.LittleEndian.PutUint32(raw[13:], b.pos)
	binary.LittleEndian.PutUint16(raw[17:], flags)
	raw = append(raw, body...)
	if b.crc {
		// Servers sum a format description with BINLOG_IN_USE cleared, so
		// that clearing it in place on close keeps the CRC valid.
		sum := append([]byte(nil), raw...)
		if typ == EventFormatDescription {
			sum[17] &^= byte(FlagBinlogInUse)
		}
		raw = binary.LittleEndian.AppendUint32(raw, crc32.ChecksumIEEE(sum))
	}
	return raw
}

// innerEvent frames an event as a TRANSACTION_PAYLOAD carries it: no CRC.
func innerEvent(typ EventType, body []byte) []byte {
	b := &eventBuilder{serverID: 1}
	return b.event(typ, 0, body)
}

// fdeBody builds a format description: MySQL 8.0 post-header lengths for
// the types the decoder looks up, 6-byte table ids unless shortIDs.
func fdeBody(version string, shortIDs, crc bool) []byte {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	v := make([]byte, 50)
	copy(v, version)
	body = append(body, v...)
	body = binary.LittleEndian.AppendUint32(body, 1700000000)
	body = append(body, HeaderLen)
	post := make([]byte, 41)
	set := func(t EventType, n byte) { post[t-1] = n }
	set(EventQuery, 13)
	set(EventRotate, 8)
	idPost := byte(8)
	if shortIDs {
		idPost = 6
	}
	set(EventTableMap, idPost)
	for _, t := range []EventType{EventWriteRowsV1, EventUpdateRowsV1, EventDeleteRowsV1} {
		set(t, idPost)
	}
	for _, t := range []EventType{EventWriteRowsV2, EventUpdateRowsV2, EventDeleteRowsV2, EventPartialUpdateRows} {
		set(t, 10)
	}
	set(EventMySQLGTID, 42)
	set(EventAnonymousGTID, 42)
	set(EventTransactionPayload, 40)
	body = append(body, post...)
	if crc {
		return append(body, ChecksumCRC32)
	}
	// Checksum-aware servers append the algorithm and 4 unused bytes even
	// when checksums are off.
	return append(body, ChecksumOff, 0, 0, 0, 0)
}

// mysqlDecoder returns a decoder that has read a MySQL 8.0 format
// description.
func mysqlDecoder(tb interface{ Fatal(...any) }, shortIDs bool) (*Decoder, *eventBuilder) {
	b := newBuilder(true)
	d := NewDecoder()
	if _, err := d.Decode(b.event(EventFormatDescription, 0, fdeBody("8.0.36", shortIDs, true))); err != nil {
		tb.Fatal(err)
	}
	return d, b
}

func lenenc(n uint64) []byte {
	switch {
	case n < 251:
		return []byte{byte(n)}
	case n < 1<<16:
		return binary.LittleEndian.AppendUint16([]byte{0xfc}, uint16(n))
	case n < 1<<24:
		return []byte{0xfd, byte(n), byte(n >> 8), byte(n >> 16)}
	}
	return binary.LittleEndian.AppendUint64([]byte{0xfe}, n)
}

// tableMapBody builds a table map: types and their metadata bytes, all
// columns nullable, then optional metadata TLVs.
func tableMapBody(id uint64, idLen int, schema, table string, types []ColumnType, meta []byte, tlv []byte) []byte {
	body := make([]byte, idLen, 64)
	for i := 0; i < idLen; i++ {
		body[i] = byte(id >> (8 * i))
	}
	body = append(body, 1, 0)
	body = append(body, byte(len(schema)))
	body = append(append(body, schema...), 0)
	body = append(body, byte(len(table)))
	body = append(append(body, table...), 0)
	body = append(body, lenenc(uint64(len(types)))...)
	for _, t := range types {
		body = append(body, byte(t))
	}
	body = append(append(body, lenenc(uint64(len(meta)))...), meta...)
	for i := 0; i < (len(types)+7)/8; i++ {
		body = append(body, 0xff)
	}
	return append(body, tlv...)
}

// rowsBody builds a rows event body: v2 events get the extra-data block.
func rowsBody(typ EventType, id uint64, idLen int, ncols int, extra []byte, rows []byte) []byte {
	body := make([]byte, idLen, 64+len(rows))
	for i := 0; i < idLen; i++ {
		body[i] = byte(id >> (8 * i))
	}
	body = binary.LittleEndian.AppendUint16(body, RowsFlagStmtEnd)
	if typ >= EventWriteRowsV2 && typ <= EventDeleteRowsV2 || typ == EventPartialUpdateRows {
		body = binary.LittleEndian.AppendUint16(body, uint16(2+len(extra)))
		body = append(body, extra...)
	}
	body = append(body, lenenc(uint64(ncols))...)
	bm := make([]byte, (ncols+7)/8)
	for i := 0; i < ncols; i++ {
		bm[i/8] |= 1 << (i % 8)
	}
	body = append(body, bm...)
	if rowsKind(typ) == RowsUpdate {
		body = append(body, bm...)
	}
	return append(body, rows...)
}
