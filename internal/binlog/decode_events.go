package binlog

import (
	"bytes"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/binlane/binlane/internal/gtid"
)

func (d *Decoder) decodeQuery(h Header, body []byte) (*QueryEvent, error) {
	post := d.fde.postHeaderLen(h.Type)
	if post < 13 {
		post = 13
	}
	r := &reader{b: body}
	q := d.alloc.queries.next()
	q.ThreadID = r.u32("thread id")
	q.ExecTime = r.u32("exec time")
	dbLen := int(r.u8("schema length"))
	q.ErrorCode = r.u16("error code")
	statusLen := int(r.u16("status variables length"))
	if h.Type == EventExecuteLoadQuery {
		q.Load = decodeLoadQuery(r, post)
	} else {
		r.skip(post-13, "post-header")
	}
	status := r.take(statusLen, "status variables")
	if schema := r.take(dbLen, "schema"); string(schema) != d.lastSchema {
		d.lastSchema = string(schema)
	}
	q.Schema = d.lastSchema
	r.skip(1, "schema terminator")
	query := r.rest()
	if r.err != nil {
		return nil, r.err
	}
	if err := parseQueryStatus(status, &q.Status); err != nil {
		return nil, err
	}
	q.Status.MariaDB = d.fde.Flavor == FlavorMariaDB
	if d.fde.explicitDefaultsInFlags2 && q.Status.HasFlags2 {
		q.Status.ExplicitDefaultsTS = q.Status.Flags2&Flags2ExplicitDefaultsTS != 0
		q.Status.HasExplicitDefaultsTS = true
	}
	if h.Type == EventQueryCompressed {
		var err error
		if query, err = decompress(query); err != nil {
			return nil, fmt.Errorf("compressed query: %w", err)
		}
	}
	q.Query = query
	if l := q.Load; l != nil && (l.FileStart > l.FileEnd || int(l.FileEnd) > len(query)) {
		return nil, fmt.Errorf("file name at [%d,%d) of a %d-byte statement", l.FileStart, l.FileEnd, len(query))
	}
	return q, nil
}

// parseQueryStatus pulls the status variables binlane needs; an unknown code
// ends parsing (its length is unknown), leaving later fields unset.
func parseQueryStatus(b []byte, s *QueryStatus) error {
	r := &reader{b: b}
	for r.remaining() > 0 && r.err == nil {
		switch code := r.u8("status code"); code {
		case 0:
			s.Flags2, s.HasFlags2 = r.u32("flags2"), true
		case 1:
			s.SQLMode, s.HasSQLMode = r.u64("sql_mode"), true
		case 2:
			n := r.u8("catalog")
			r.skip(int(n)+1, "catalog")
		case 3:
			s.AutoIncInc, s.AutoIncOffset = r.u16("auto_increment"), r.u16("auto_increment")
		case 4:
			s.ClientCharset, s.ConnCollation, s.ServerCollat = r.u16("charset"), r.u16("charset"), r.u16("charset")
		case 5:
			n := r.u8("time zone")
			s.TimeZone = string(r.take(int(n), "time zone"))
		case 6:
			n := r.u8("catalog")
			r.skip(int(n), "catalog")
		case 7:
			s.LCTimeNames = r.u16("lc_time_names")
		case 8:
			s.CharsetDB = r.u16("charset_database")
		case 9:
			r.skip(8, "table_map_for_update")
		case 10:
			r.skip(4, "master_data_written")
		case 11:
			n := r.u8("invoker user")
			r.skip(int(n), "invoker user")
			n = r.u8("invoker host")
			r.skip(int(n), "invoker host")
		case 12:
			n := r.u8("updated db count")
			if n != 254 {
				for i := 0; i < int(n) && r.err == nil; i++ {
					rest := r.b[r.off:]
					end := bytes.IndexByte(rest, 0)
					if end < 0 {
						r.fail("updated db name")
						break
					}
					r.skip(end+1, "updated db name")
				}
			}
		case 13: // MySQL's microseconds of the statement's start
			s.Micros, s.HasMicros = r.u24("microseconds"), true
		case 14:
			r.skip(1, "commit ts")
		case 15:
			r.skip(2, "commit ts2")
		case 16: // MySQL: flags2 does not carry it there
			s.ExplicitDefaultsTS, s.HasExplicitDefaultsTS = r.u8("explicit_defaults_for_timestamp") != 0, true
		case 17:
			s.DDLXid = r.u64("ddl xid")
		case 18:
			s.DefaultUtf8mb4 = r.u16("default_collation_for_utf8mb4")
		case 19:
			r.skip(1, "sql_require_primary_key")
		case 20:
			r.skip(1, "default_table_encryption")
		case 128: // MariaDB's microseconds of the statement's start
			s.Micros, s.HasMicros = r.u24("hrnow"), true
		case 129:
			s.MariaXid = r.u64("xid")
		case 130:
			s.GTIDFlags3 = r.u8("gtid flags3")
			if s.GTIDFlags3&(mariaFlExtraCommitAlt|mariaFlExtraRollbkAlt) != 0 {
				r.skip(8, "start alter seq")
			}
		default:
			return nil
		}
	}
	return r.err
}

// decompress unwraps MariaDB's compressed-event layout: a header byte
// 0x80|n (algorithm in bits 4-6, 0 = zlib), the uncompressed length in n
// big-endian bytes, then a zlib stream.
func decompress(b []byte) ([]byte, error) {
	if len(b) < 1 {
		return nil, errShort
	}
	hdr := b[0]
	n := int(hdr & 0x07)
	if hdr&0x80 == 0 || n < 1 || n > 4 || len(b) < 1+n {
		return nil, fmt.Errorf("bad compression header 0x%02x", hdr)
	}
	if alg := (hdr >> 4) & 0x07; alg != 0 {
		return nil, fmt.Errorf("compression algorithm %d is not supported", alg)
	}
	var size int
	for _, c := range b[1 : 1+n] {
		size = size<<8 | int(c)
	}
	// Deflate cannot shrink data more than 1032 times: a larger claim is
	// corrupt, and must not make us allocate it.
	if size > 1<<30 || size > (len(b)-1-n)*1032+64 {
		return nil, fmt.Errorf("uncompressed size %d is implausible for %d compressed bytes", size, len(b)-1-n)
	}
	zr, err := zlib.NewReader(bytes.NewReader(b[1+n:]))
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("inflate %d bytes: %w", size, err)
	}
	return out, nil
}

func decodeMariaGTID(h Header, body []byte, g *MariaGTIDEvent) (*MariaGTIDEvent, error) {
	r := &reader{b: body}
	seq := r.u64("seq_no")
	domain := r.u32("domain id")
	g.Flags2 = r.u8("flags2")
	g.GTID = gtid.GTID{Flavor: gtid.MariaDB, Domain: domain, ServerID: h.ServerID, Seq: seq}
	if g.Flags2&MariaFlGroupCommitID != 0 {
		g.CommitID = r.u64("commit id")
	}
	if g.Flags2&(MariaFlPreparedXA|MariaFlCompletedXA) != 0 {
		x := &XAID{FormatID: r.u32("xa format id")}
		gl := int(r.u8("xa gtrid length"))
		bl := int(r.u8("xa bqual length"))
		if gl > 64 || bl > 64 {
			return nil, fmt.Errorf("xa id lengths %d/%d exceed 64", gl, bl)
		}
		// Copied: a prepared XA transaction's id is kept until its XA
		// COMMIT, maybe far later in the stream, and must not keep the
		// event's read buffer alive that long (wire.PacketReader.LendAll).
		x.GTRID = bytes.Clone(r.take(gl, "xa gtrid"))
		x.BQUAL = bytes.Clone(r.take(bl, "xa bqual"))
		g.XID = x
	}
	// Extra flags follow when present; otherwise the body is zero-padded to
	// 19 bytes, which reads as "no extra flags".
	if r.err == nil && r.remaining() > 0 {
		g.FlagsExtra = r.u8("flags extra")
		if g.FlagsExtra&mariaFlExtraMultiEng != 0 {
			g.ExtraEngines = r.u8("extra engines")
		}
		if g.FlagsExtra&(mariaFlExtraCommitAlt|mariaFlExtraRollbkAlt) != 0 {
			g.SAseqNo = r.u64("start alter seq")
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	return g, nil
}

func decodeGTIDList(body []byte) (*GTIDListEvent, error) {
	r := &reader{b: body}
	v := r.u32("count")
	e := &GTIDListEvent{Flags: uint8(v >> 28)}
	n := int(v & 0x0fffffff)
	if n > r.remaining()/16 {
		return nil, fmt.Errorf("gtid list of %d entries does not fit in %d bytes", n, r.remaining())
	}
	e.List = make([]gtid.GTID, 0, n)
	for i := 0; i < n; i++ {
		d := r.u32("domain")
		s := r.u32("server id")
		seq := r.u64("seq")
		e.List = append(e.List, gtid.GTID{Flavor: gtid.MariaDB, Domain: d, ServerID: s, Seq: seq})
	}
	return e, r.err
}

func decodeMySQLGTID(h Header, body []byte, g *MySQLGTIDEvent) (*MySQLGTIDEvent, error) {
	r := &reader{b: body}
	g.Anonymous = h.Type == EventAnonymousGTID
	g.Flags = r.u8("flags")
	var sid gtid.UUID
	copy(sid[:], r.take(16, "sid"))
	gno := r.u64("gno")
	if r.err != nil {
		return nil, r.err
	}
	if !g.Anonymous {
		if gno == 0 || gno >= 1<<63 {
			return nil, fmt.Errorf("transaction number %d out of range", gno)
		}
		g.GTID = gtid.GTID{Flavor: gtid.MySQL, SID: sid, Seq: gno}
	}
	if r.remaining() > 0 {
		if lt := r.u8("logical timestamp type"); lt == 2 {
			g.LastCommitted = int64(r.u64("last committed"))
			g.SequenceNumber = int64(r.u64("sequence number"))
		}
	}
	if r.remaining() >= 7 {
		ts := r.uintN(7, "immediate commit timestamp")
		if ts&(1<<55) != 0 {
			ts &^= 1 << 55
			g.OriginalCommitTS = r.uintN(7, "original commit timestamp")
		} else {
			g.OriginalCommitTS = ts
		}
		g.ImmediateCommitTS = ts
	}
	if r.remaining() > 0 {
		g.TransactionLength = r.lenenc("transaction length")
	}
	if r.remaining() >= 4 {
		v := r.u32("server version")
		if v&(1<<31) != 0 {
			v &^= 1 << 31
			g.OriginalServerVersion = r.u32("original server version")
		} else {
			g.OriginalServerVersion = v
		}
		g.ImmediateServerVersion = v
	}
	return g, r.err
}

func decodePreviousGTIDs(body []byte) (*PreviousGTIDsEvent, error) {
	set, err := gtid.DecodeMySQL(body)
	if err != nil {
		return nil, err
	}
	return &PreviousGTIDsEvent{Set: set}, nil
}

func decodeXAPrepare(body []byte) (*XAPrepareEvent, error) {
	r := &reader{b: body}
	e := &XAPrepareEvent{OnePhase: r.u8("one phase") != 0}
	e.XID.FormatID = r.u32("format id")
	gl := r.u32("gtrid length")
	bl := r.u32("bqual length")
	if gl > 64 || bl > 64 {
		return nil, fmt.Errorf("xa id lengths %d/%d exceed 64", gl, bl)
	}
	e.XID.GTRID = bytes.Clone(r.take(int(gl), "gtrid")) // as in the GTID event
	e.XID.BQUAL = bytes.Clone(r.take(int(bl), "bqual"))
	return e, r.err
}

func decodeIncident(body []byte) (*IncidentEvent, error) {
	r := &reader{b: body}
	e := &IncidentEvent{Incident: r.u16("incident")}
	n := r.u8("message length")
	e.Message = string(r.take(int(n), "message"))
	return e, r.err
}

// decodePayload reads MySQL's TRANSACTION_PAYLOAD envelope: a few
// type-length-value fields, then the events of one transaction, zstd-
// compressed or not, without checksums.
func (d *Decoder) decodePayload(body []byte) (*TransactionPayloadEvent, error) {
	e, payload, err := parsePayloadHeader(body)
	if err != nil {
		return nil, err
	}
	if e.PayloadSize != uint64(len(payload)) {
		return nil, fmt.Errorf("payload size field says %d bytes, event holds %d", e.PayloadSize, len(payload))
	}
	if e.UncompressedSize > maxEventSize {
		return nil, fmt.Errorf("uncompressed payload size %d exceeds 1 GiB", e.UncompressedSize)
	}
	switch e.Compression {
	case payloadNone:
	case payloadZstd:
		if payload, err = d.inflateZstd(payload, e.UncompressedSize); err != nil {
			return nil, fmt.Errorf("zstd payload: %w", err)
		}
	default:
		return nil, fmt.Errorf("payload compression type %d is not supported", e.Compression)
	}
	if uint64(len(payload)) != e.UncompressedSize {
		return nil, fmt.Errorf("uncompressed payload of %d bytes, size field says %d", len(payload), e.UncompressedSize)
	}
	for len(payload) > 0 {
		if len(payload) < HeaderLen {
			return nil, fmt.Errorf("payload: %d trailing bytes", len(payload))
		}
		h := parseHeader(payload)
		if int(h.EventSize) > len(payload) || h.EventSize < HeaderLen {
			return nil, fmt.Errorf("payload: inner event of %d bytes in %d", h.EventSize, len(payload))
		}
		inner := payload[:h.EventSize]
		payload = payload[h.EventSize:]
		if h.Type == EventTransactionPayload || h.Type == EventFormatDescription {
			return nil, fmt.Errorf("payload: inner %s event", h.Type)
		}
		data, err := d.decodeBody(h, inner, inner[HeaderLen:])
		if err != nil {
			return nil, fmt.Errorf("payload: inner %s event: %w", h.Type, err)
		}
		e.Events = append(e.Events, &Event{Header: h, File: d.file, Data: data})
	}
	return e, nil
}

// Payload compression types.
const (
	payloadZstd = 0
	payloadNone = 255
)

func parsePayloadHeader(body []byte) (*TransactionPayloadEvent, []byte, error) {
	r := &reader{b: body}
	e := &TransactionPayloadEvent{Compression: payloadNone}
	for r.err == nil {
		typ := r.lenenc("payload field type")
		if typ == 0 {
			break
		}
		n := r.lenenc("payload field length")
		if n > uint64(r.remaining()) {
			r.fail("payload field")
			break
		}
		v, size := lenencInt(r.take(int(n), "payload field"))
		if size == 0 && typ <= 3 {
			return nil, nil, fmt.Errorf("payload field %d: bad packed integer", typ)
		}
		switch typ {
		case 1:
			e.PayloadSize = v
		case 2:
			e.Compression = v
		case 3:
			e.UncompressedSize = v
		}
	}
	if r.err != nil {
		return nil, nil, r.err
	}
	return e, r.rest(), nil
}
