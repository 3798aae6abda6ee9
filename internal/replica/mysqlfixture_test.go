package replica

// MySQL 8.0 event fixtures, built byte by byte from the documented layouts
// (MySQL source docs: Binary Log Event, Gtid_event, Table_map_event, rows
// events). No MySQL server can run here, so these and the fake peer of
// package wiretest are how the MySQL code paths are tested; they are
// unverified against a real MySQL server.

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/binlane/binlane/internal/gtid"
)

const (
	typeQuery         = 2
	typeRotate        = 4
	typeFDE           = 15
	typeXID           = 16
	typeTableMap      = 19
	typeHeartbeat     = 27
	typeWriteRowsV2   = 30
	typeGTID          = 33
	typePreviousGTIDs = 35
)

// mysqlPostHeaderLens is MySQL 8.0's post-header length per event type 1..41.
var mysqlPostHeaderLens = []byte{
	56, 13, 0, 8, 0, 0, 0, 0, 4, 0, 4, 0, 0, 0, 98, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
	10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 40, 0,
}

// binlogFile lays events out at increasing offsets, like a binlog file.
type binlogFile struct {
	name     string
	serverID uint32
	crc      bool
	pos      uint32
	groups   []fixtureGroup
	header   [][]byte // FDE and PREVIOUS_GTIDS
}

// fixtureGroup is one transaction's events.
type fixtureGroup struct {
	gtid   gtid.GTID
	events [][]byte
}

func newBinlogFile(name string, crc bool) *binlogFile {
	f := &binlogFile{name: name, serverID: 1, crc: crc, pos: 4}
	body := binary.LittleEndian.AppendUint16(nil, 4)
	version := make([]byte, 50)
	copy(version, "8.0.36")
	body = append(body, version...)
	body = binary.LittleEndian.AppendUint32(body, 1700000000)
	body = append(body, 19)
	body = append(body, mysqlPostHeaderLens...)
	alg := byte(0)
	if crc {
		alg = 1
	}
	body = append(body, alg)
	if !crc {
		body = append(body, 0, 0, 0, 0) // checksum-aware servers always leave room
	}
	f.header = append(f.header, f.event(typeFDE, 0, body))
	f.header = append(f.header, f.event(typePreviousGTIDs, 0, gtid.Set{}.EncodeMySQL()))
	return f
}

// event frames a body at the file's current offset.
func (f *binlogFile) event(typ byte, flags uint16, body []byte) []byte {
	size := 19 + len(body)
	if f.crc {
		size += 4
	}
	f.pos += uint32(size)
	return frame(1700000001, typ, f.serverID, f.pos, flags, body, f.crc)
}

func frame(ts uint32, typ byte, serverID, logPos uint32, flags uint16, body []byte, crc bool) []byte {
	size := 19 + len(body)
	if crc {
		size += 4
	}
	b := binary.LittleEndian.AppendUint32(nil, ts)
	b = append(b, typ)
	b = binary.LittleEndian.AppendUint32(b, serverID)
	b = binary.LittleEndian.AppendUint32(b, uint32(size))
	b = binary.LittleEndian.AppendUint32(b, logPos)
	b = binary.LittleEndian.AppendUint16(b, flags)
	b = append(b, body...)
	if crc {
		b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	}
	return b
}

// fakeRotate is the artificial first event of a dump (no CRC: we asked for
// @source_binlog_checksum='NONE').
func fakeRotate(file string, pos uint64) []byte {
	body := binary.LittleEndian.AppendUint64(nil, pos)
	return frame(0, typeRotate, 1, 0, 0x20, append(body, file...), false)
}

func (f *binlogFile) heartbeat() []byte {
	return frame(0, typeHeartbeat, f.serverID, f.pos, 0, []byte(f.name), f.crc)
}

// addInsert appends a transaction inserting (id, name) into d.t.
func (f *binlogFile) addInsert(g gtid.GTID, id int32, name string) {
	var evs [][]byte
	gb := []byte{1}
	gb = append(gb, g.SID[:]...)
	gb = binary.LittleEndian.AppendUint64(gb, g.Seq)
	gb = append(gb, 2)
	gb = binary.LittleEndian.AppendUint64(gb, g.Seq-1) // last committed
	gb = binary.LittleEndian.AppendUint64(gb, g.Seq)   // sequence number
	evs = append(evs, f.event(typeGTID, 0, gb))
	evs = append(evs, f.event(typeQuery, 0x08, queryBody("d", "BEGIN")))
	evs = append(evs, f.event(typeTableMap, 0, tableMapBody()))
	evs = append(evs, f.event(typeWriteRowsV2, 0, writeRowsBody(id, name)))
	evs = append(evs, f.event(typeXID, 0, binary.LittleEndian.AppendUint64(nil, uint64(id))))
	f.groups = append(f.groups, fixtureGroup{gtid: g, events: evs})
}

func queryBody(db, q string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 7) // thread id
	b = binary.LittleEndian.AppendUint32(b, 0)    // exec time
	b = append(b, byte(len(db)))
	b = binary.LittleEndian.AppendUint16(b, 0) // error code
	b = binary.LittleEndian.AppendUint16(b, 0) // status vars length
	b = append(append(b, db...), 0)
	return append(b, q...)
}

const fixtureTableID = 91

// tableMapBody maps d.t (id INT NOT NULL, name VARCHAR(20) utf8mb4 NULL)
// with FULL metadata: signedness, column names, charset.
func tableMapBody() []byte {
	b := make([]byte, 6)
	binary.LittleEndian.PutUint32(b, fixtureTableID)
	b = binary.LittleEndian.AppendUint16(b, 1)
	b = append(b, 1, 'd', 0, 1, 't', 0)
	b = append(b, 2, 3, 15)                                 // two columns: LONG, VARCHAR
	b = append(b, 2, 80, 0)                                 // metadata: VARCHAR max 80 bytes
	b = append(b, 0b10)                                     // name is nullable
	b = append(b, 1, 1, 0)                                  // signedness: id signed
	b = append(b, 2, 1, 45)                                 // default charset utf8mb4_general_ci
	b = append(b, 4, 8, 2, 'i', 'd', 4, 'n', 'a', 'm', 'e') // column names
	return b
}

func writeRowsBody(id int32, name string) []byte {
	b := make([]byte, 6)
	binary.LittleEndian.PutUint32(b, fixtureTableID)
	b = binary.LittleEndian.AppendUint16(b, 1) // STMT_END
	b = binary.LittleEndian.AppendUint16(b, 2) // no extra data
	b = append(b, 2, 0b11, 0)                  // 2 columns, both present; null bitmap
	b = binary.LittleEndian.AppendUint32(b, uint32(id))
	return append(append(b, byte(len(name))), name...)
}
