package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// ErrChecksum reports an event whose CRC32 does not match its bytes.
var ErrChecksum = errors.New("checksum mismatch")

// DecodeError locates a decoding failure.
type DecodeError struct {
	File string
	Pos  uint64
	Type EventType
	Err  error
}

func (e *DecodeError) Error() string {
	file := e.File
	if file == "" {
		file = "(unknown file)"
	}
	if e.Type == EventUnknown {
		// Framing errors (a truncated file, a bad size) have no event type.
		return fmt.Sprintf("binlog %s:%d: %v", file, e.Pos, e.Err)
	}
	return fmt.Sprintf("binlog %s:%d: %s event: %v", file, e.Pos, e.Type, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Decoder turns raw events into structures. It carries the state a binlog
// stream builds up: the current format description (checksum algorithm,
// post-header lengths), the table-id registry and the current position.
// A Decoder is not safe for concurrent use.
type Decoder struct {
	fde    *FormatDescriptionEvent
	tables map[uint64]*TableMap
	file   string
	next   uint64 // position after the last real event
	// SkipChecksum turns CRC32 verification off (the trailer is still
	// stripped); verification is on by default.
	SkipChecksum bool
	zstd         *zstd.Decoder // made on the first compressed transaction payload
	preFDE       byte          // checksum algorithm before the first format description
	alloc        slabs
	lastSchema   string // the schema of the last query event, reused when repeated
	// offline: events are located by their offset in the file being read
	// (set by OpenFile). A relay log holds its source's events, whose
	// headers carry the source's positions, after the source's rotate.
	offline bool
}

// NewDecoder returns a decoder that expects a format description event
// before any event other than a rotate.
func NewDecoder() *Decoder {
	return &Decoder{tables: make(map[uint64]*TableMap), preFDE: ChecksumUndefined}
}

// SetInitialChecksum declares the checksum algorithm of the events that
// precede the first format description: a replication stream's fake rotate
// (and early heartbeats) follow @master_binlog_checksum, which the client
// set. Without it the decoder guesses from the bytes (a file name is
// printable, a CRC rarely is).
func (d *Decoder) SetInitialChecksum(alg byte) { d.preFDE = alg }

// File returns the current file name and the position after the last event.
func (d *Decoder) File() (string, uint64) { return d.file, d.next }

// SetPosition sets the file and position of the next event (used when a
// dump starts at a known position, and by the file reader).
func (d *Decoder) SetPosition(file string, pos uint64) { d.file, d.next = file, pos }

// EventFormatDescription returns the current format description, or nil.
func (d *Decoder) EventFormatDescription() *FormatDescriptionEvent { return d.fde }

// Table returns the table map registered under id.
func (d *Decoder) Table(id uint64) (*TableMap, bool) {
	t, ok := d.tables[id]
	return t, ok
}

// Reset forgets table maps and the format description, as after a
// reconnect: the next events must bring their own.
func (d *Decoder) Reset() {
	d.fde = nil
	clear(d.tables)
}

// Decode decodes one complete event (header, body and, when the format
// description says so, a CRC32 trailer). The event may keep references to
// raw: the caller must not reuse it while the event is in use.
func (d *Decoder) Decode(raw []byte) (*Event, error) {
	if len(raw) < HeaderLen {
		return nil, &DecodeError{File: d.file, Pos: d.next, Err: fmt.Errorf("event of %d bytes is shorter than its header", len(raw))}
	}
	h := parseHeader(raw)
	ev := d.alloc.events.next()
	*ev = Event{Header: h, File: d.file}
	ev.Pos = d.startPos(h)
	fail := func(err error) (*Event, error) {
		return nil, &DecodeError{File: d.file, Pos: ev.Pos, Type: h.Type, Err: err}
	}
	if uint64(h.EventSize) != uint64(len(raw)) {
		return fail(fmt.Errorf("header says %d bytes, got %d", h.EventSize, len(raw)))
	}
	body, err := d.body(raw, h)
	if err != nil {
		return fail(err)
	}
	data, err := d.decodeBody(h, raw, body)
	if err != nil {
		return fail(err)
	}
	ev.Data = data
	switch x := data.(type) {
	case *RowsEvent:
		x.where = DecodeError{File: ev.File, Pos: ev.Pos, Type: h.Type}
	case *TransactionPayloadEvent:
		// Inner events have no position of their own: they are located
		// by the payload event that carries them.
		for _, in := range x.Events {
			in.Pos = ev.Pos
			if rows, ok := in.Data.(*RowsEvent); ok {
				rows.where = DecodeError{File: ev.File, Pos: ev.Pos, Type: in.Header.Type}
			}
		}
	}
	d.advance(h, ev)
	return ev, nil
}

func parseHeader(raw []byte) Header {
	return Header{
		Timestamp: binary.LittleEndian.Uint32(raw[0:]),
		Type:      EventType(raw[4]),
		ServerID:  binary.LittleEndian.Uint32(raw[5:]),
		EventSize: binary.LittleEndian.Uint32(raw[9:]),
		LogPos:    binary.LittleEndian.Uint32(raw[13:]),
		Flags:     binary.LittleEndian.Uint16(raw[17:]),
	}
}

// startPos computes where the event starts. Real events carry the position
// after themselves; MariaDB 11.4+ writes 0 for events from the transaction
// cache, so fall back to counting.
func (d *Decoder) startPos(h Header) uint64 {
	if d.offline {
		return d.next
	}
	if h.LogPos >= h.EventSize && h.LogPos != 0 && !isArtificial(h) {
		return uint64(h.LogPos - h.EventSize)
	}
	return d.next
}

func isArtificial(h Header) bool {
	return h.Flags&FlagArtificial != 0 || h.Timestamp == 0 && (h.Type == EventRotate || h.Type == EventHeartbeat || h.Type == EventHeartbeatV2)
}

func (d *Decoder) advance(h Header, ev *Event) {
	if d.offline {
		d.next = ev.Pos + uint64(h.EventSize)
		if r, ok := ev.Data.(*RotateEvent); ok && !r.Fake {
			clear(d.tables)
		}
		return
	}
	switch h.Type {
	case EventHeartbeat, EventHeartbeatV2:
		return
	case EventRotate:
		r := ev.Data.(*RotateEvent)
		d.file, d.next = r.NextFile, r.Position
		if !r.Fake {
			// A real rotate ends the file: table ids die with it.
			clear(d.tables)
		}
		return
	}
	if h.Type == EventFormatDescription && h.LogPos == 0 {
		// A source resuming a dump mid-file resends the file's format
		// description with log_pos 0: it does not occupy the stream.
		return
	}
	if isArtificial(h) {
		// A fake GTID list after skipped groups carries the real offset.
		if h.Type == EventMariaGTIDList && h.LogPos != 0 {
			d.next = uint64(h.LogPos)
		}
		return
	}
	if h.LogPos != 0 {
		d.next = uint64(h.LogPos)
	} else {
		d.next = ev.Pos + uint64(h.EventSize)
	}
}

// body strips the header and, when the format description announces CRC32,
// verifies and strips the trailer.
func (d *Decoder) body(raw []byte, h Header) ([]byte, error) {
	alg := ChecksumOff
	hl := HeaderLen
	switch {
	case h.Type == EventFormatDescription:
		alg = fdeChecksum(raw)
	case d.fde != nil:
		alg = d.fde.Checksum
		// Some builds (Google's MySQL 5.1) extend the header of the
		// events after the format description with fields of their own.
		hl = int(d.fde.HeaderLen)
	case d.preFDE == ChecksumCRC32:
		alg = ChecksumCRC32
	}
	if len(raw) < hl {
		return nil, fmt.Errorf("event of %d bytes is shorter than its %d-byte header", len(raw), hl)
	}
	if alg != ChecksumCRC32 {
		return raw[hl:], nil
	}
	if len(raw) < hl+4 {
		return nil, fmt.Errorf("event too short for its checksum")
	}
	n := len(raw) - 4
	if !d.SkipChecksum {
		want := binary.LittleEndian.Uint32(raw[n:])
		if got := eventCRC(raw[:n], h); got != want {
			return nil, fmt.Errorf("%w: computed 0x%08x, event says 0x%08x", ErrChecksum, got, want)
		}
	}
	return raw[hl:n], nil
}

// eventCRC computes an event's CRC32. A format description is summed with
// its "file in use" flag clear: the server flips that flag in place when it
// closes the file, after the checksum was written.
func eventCRC(b []byte, h Header) uint32 {
	if h.Type != EventFormatDescription || h.Flags&FlagBinlogInUse == 0 {
		return crc32.ChecksumIEEE(b)
	}
	var flags [2]byte
	binary.LittleEndian.PutUint16(flags[:], h.Flags&^FlagBinlogInUse)
	crc := crc32.ChecksumIEEE(b[:17])
	crc = crc32.Update(crc, crc32.IEEETable, flags[:])
	return crc32.Update(crc, crc32.IEEETable, b[19:])
}

// fdeChecksum reads a format description's algorithm byte, which checksum-
// aware servers put 5 bytes before the end whatever the algorithm. Older
// servers write no such byte: for them it is ChecksumUndefined, and the
// body ends with the post-header lengths.
func fdeChecksum(raw []byte) byte {
	// binlog version(2) + server version(50) + timestamp(4) + header len(1)
	const fixed = HeaderLen + 57
	if len(raw) < fixed {
		return ChecksumOff
	}
	if !checksumAware(strings.TrimRight(string(raw[HeaderLen+2:HeaderLen+52]), "\x00")) {
		return ChecksumUndefined
	}
	if len(raw) < fixed+5 {
		return ChecksumOff
	}
	alg := raw[len(raw)-5]
	if alg == ChecksumCRC32 {
		return alg
	}
	return ChecksumOff
}

func (d *Decoder) decodeBody(h Header, raw, body []byte) (any, error) {
	if h.Type == EventFormatDescription {
		return d.decodeFDE(body, fdeChecksum(raw))
	}
	// Before the first format description the checksum may be unknown.
	guessCRC := d.fde == nil && d.preFDE == ChecksumUndefined
	if h.Type == EventRotate {
		return decodeRotate(h, body, guessCRC)
	}
	if h.Type == EventHeartbeat {
		return decodeHeartbeat(h, body, guessCRC)
	}
	if h.Type == EventStartV3 {
		// Servers before MySQL 5.0 start their files so (binlog format
		// v1 to v3, some with a shorter header); v4 starts with a format
		// description.
		return nil, errors.New("binlog format before v4 (MySQL 3.23 to 4.1) is not supported")
	}
	if d.fde == nil {
		return nil, errors.New("event before any format description event")
	}
	switch h.Type {
	case EventQuery, EventQueryCompressed, EventExecuteLoadQuery:
		return d.decodeQuery(h, body)
	case EventBeginLoadQuery, EventAppendBlock:
		return decodeLoadBlock(body)
	case EventDeleteFile:
		r := &reader{b: body}
		e := &DeleteFileEvent{FileID: r.u32("file id")}
		return e, r.err
	case EventWriteRowsPreGA, EventUpdateRowsPreGA, EventDeleteRowsPreGA:
		return nil, errors.New("pre-GA rows events (a MySQL 5.1 beta format) are not supported")
	case EventLoad, EventCreateFile, EventExecLoad, EventNewLoad:
		return nil, errors.New("statement-based LOAD DATA in the format of MySQL 3.23 to 5.0.2 is not supported")
	case EventXID:
		r := &reader{b: body}
		x := d.alloc.xids.next()
		x.XID = r.u64("xid")
		return x, r.err
	case EventTableMap:
		return d.decodeTableMap(body)
	case EventWriteRowsV1, EventUpdateRowsV1, EventDeleteRowsV1, EventWriteRowsV2, EventUpdateRowsV2, EventDeleteRowsV2,
		EventWriteRowsCompressedV1, EventUpdateRowsCompressedV1, EventDeleteRowsCompressedV1,
		EventWriteRowsCompressedV2, EventUpdateRowsCompressedV2, EventDeleteRowsCompressedV2, EventPartialUpdateRows:
		return d.decodeRows(h, body)
	case EventMariaGTID:
		return decodeMariaGTID(h, body, d.alloc.gtids.next())
	case EventMariaGTIDList:
		return decodeGTIDList(body)
	case EventBinlogCheckpoint:
		r := &reader{b: body}
		n := r.u32("file name length")
		e := &BinlogCheckpointEvent{File: string(r.take(int(n), "file name"))}
		return e, r.err
	case EventAnnotateRows:
		a := d.alloc.annotate.next()
		a.Query = body
		return a, nil
	case EventRowsQuery:
		if len(body) < 1 {
			return nil, errShort
		}
		q := d.alloc.rowsQ.next()
		q.Query = body[1:]
		return q, nil
	case EventMySQLGTID, EventAnonymousGTID:
		return decodeMySQLGTID(h, body, d.alloc.mysql.next())
	case EventPreviousGTIDs:
		return decodePreviousGTIDs(body)
	case EventHeartbeatV2:
		return decodeHeartbeatV2(body)
	case EventXAPrepare:
		return decodeXAPrepare(body)
	case EventIncident:
		return decodeIncident(body)
	case EventTransactionPayload:
		return d.decodePayload(body)
	case EventStartEncryption:
		return &SkippedEvent{Reason: "start-encryption marker"}, nil
	case EventIntvar:
		return decodeIntvar(body)
	case EventRand:
		return decodeRand(body)
	case EventUserVar:
		return decodeUserVar(body)
	case EventIgnorable, EventTransactionContext, EventViewChange, EventStop:
		return &SkippedEvent{Reason: h.Type.String()}, nil
	case EventGTIDTagged:
		return decodeTaggedGTID(body, d.alloc.mysql.next())
	case eventMariaPartialRows:
		return nil, errors.New("partial rows events (MariaDB 12.3+ fragmented rows) are not supported")
	}
	if h.Flags&FlagIgnorable != 0 {
		return &SkippedEvent{Reason: fmt.Sprintf("ignorable event type %d", h.Type)}, nil
	}
	return nil, fmt.Errorf("unknown event type %d not marked ignorable", byte(h.Type))
}

func (d *Decoder) decodeFDE(body []byte, alg byte) (*FormatDescriptionEvent, error) {
	r := &reader{b: body}
	f := &FormatDescriptionEvent{}
	f.BinlogVersion = r.u16("binlog version")
	f.ServerVersion = strings.TrimRight(string(r.take(50, "server version")), "\x00")
	f.CreateTimestamp = r.u32("create timestamp")
	f.HeaderLen = r.u8("header length")
	if r.err != nil {
		return nil, r.err
	}
	if f.BinlogVersion != 4 {
		return nil, fmt.Errorf("binlog version %d is not supported (need 4)", f.BinlogVersion)
	}
	if f.HeaderLen < HeaderLen {
		return nil, fmt.Errorf("header length %d is not supported (need at least %d)", f.HeaderLen, HeaderLen)
	}
	rest := r.rest()
	// Checksum-aware servers end the body with the algorithm byte and a
	// 4-byte CRC; body() already stripped the CRC when the algorithm is
	// CRC32, and left the 4 (unused) bytes in place when it is off. Older
	// servers end it with the last post-header length, which stays.
	f.Checksum = alg
	switch {
	case alg == ChecksumUndefined:
		f.Checksum = ChecksumOff
	case alg == ChecksumCRC32 && len(rest) >= 1:
		rest = rest[:len(rest)-1]
	case len(rest) >= 5:
		rest = rest[:len(rest)-5]
	}
	f.PostHeaderLens = append([]byte(nil), rest...)
	f.Flavor = FlavorMySQL
	if strings.Contains(f.ServerVersion, "MariaDB") {
		f.Flavor = FlavorMariaDB
		f.explicitDefaultsInFlags2 = mariaWritesExplicitDefaults(f.ServerVersion)
	}
	if n := f.postHeaderLen(EventTableMap); n >= 0 && n < 6 {
		return nil, fmt.Errorf("format description gives table maps a post-header of %d bytes (need 6 or 8)", n)
	}
	if d.fde != nil {
		// A new format description starts a new file (or a restarted
		// source): table ids of the previous one are void.
		clear(d.tables)
	}
	d.fde = f
	return f, nil
}

func decodeRotate(h Header, body []byte, mayHaveCRC bool) (*RotateEvent, error) {
	r := &reader{b: body}
	e := &RotateEvent{Position: r.u64("position")}
	name := r.rest()
	if mayHaveCRC && len(name) > 4 && !printable(name[len(name)-4:]) {
		name = name[:len(name)-4]
	}
	e.NextFile = string(name)
	e.Fake = h.Timestamp == 0 || h.Flags&FlagArtificial != 0
	if r.err == nil && e.NextFile == "" {
		return nil, errors.New("rotate without a file name")
	}
	return e, r.err
}

func decodeHeartbeat(h Header, body []byte, mayHaveCRC bool) (*HeartbeatEvent, error) {
	e := &HeartbeatEvent{Pos: uint64(h.LogPos)}
	name := body
	// MariaDB past 4 GiB: header log_pos is 0 and an 8-byte position leads.
	if h.LogPos == 0 && len(body) >= 8 && !printable(body[:8]) {
		e.Pos = binary.LittleEndian.Uint64(body)
		name = body[8:]
	}
	// A CRC32 trailer may still be attached (the heartbeat can arrive before
	// we know the algorithm); file names are printable, checksums rarely.
	if mayHaveCRC && len(name) > 4 && !printable(name[len(name)-4:]) {
		name = name[:len(name)-4]
	}
	e.File = string(name)
	return e, nil
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c > 0x7e {
			return false
		}
	}
	return true
}

func decodeHeartbeatV2(body []byte) (*HeartbeatEvent, error) {
	r := &reader{b: body}
	e := &HeartbeatEvent{}
	for r.remaining() > 0 && r.err == nil {
		typ := r.lenenc("heartbeat field type")
		if typ == 0 {
			break
		}
		val := r.lenencBytes("heartbeat field")
		switch typ {
		case 1:
			e.File = string(val)
		case 2:
			v, n := lenencInt(val)
			if n == 0 {
				return nil, errors.New("heartbeat position: bad packed integer")
			}
			e.Pos = v
		}
	}
	return e, r.err
}
