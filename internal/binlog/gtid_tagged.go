package binlog

import (
	"errors"
	"fmt"

	"github.com/binlane/binlane/internal/gtid"
)

// MySQL 8.3+ writes a transaction with a tagged GTID (uuid:tag:N) as a
// GTID_TAGGED_LOG_EVENT in its serialization library's format instead of
// the fixed layout of GTID_LOG_EVENT: a format version, the size of the
// whole body, the last field id a reader must understand, then (field id,
// value) pairs in id order, every integer variable-length (gtid.Varlen),
// signed ones zigzag-encoded.

// Field ids of the tagged GTID event.
const (
	tgFlags = iota
	tgSID
	tgGNO
	tgTag
	tgLastCommitted
	tgSequenceNumber
	tgImmediateCommitTS
	tgOriginalCommitTS
	tgTransactionLength
	tgImmediateServerVersion
	tgOriginalServerVersion
	tgCommitGroupTicket
)

// varlenReader reads serialization-library integers off a reader.
type varlenReader struct{ *reader }

// unsigned reads an unsigned integer.
func (r varlenReader) unsigned(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := gtid.Varlen(r.b[r.off:])
	if n == 0 {
		r.fail(what)
		return 0
	}
	r.off += n
	return v
}

// signed reads a zigzag-encoded signed integer.
func (r varlenReader) signed(what string) int64 {
	u := r.unsigned(what)
	return int64(u>>1) ^ -int64(u&1)
}

func decodeTaggedGTID(body []byte, g *MySQLGTIDEvent) (*MySQLGTIDEvent, error) {
	r := varlenReader{&reader{b: body}}
	if v := r.unsigned("serialization format version"); r.err == nil && v != 1 {
		return nil, fmt.Errorf("serialization format version %d is not supported (need 1)", v)
	}
	size := r.unsigned("payload size")
	lastNeeded := r.unsigned("last non-ignorable field id")
	if r.err != nil {
		return nil, r.err
	}
	if size != uint64(len(body)) {
		return nil, fmt.Errorf("payload size field says %d bytes, event holds %d", size, len(body))
	}
	*g = MySQLGTIDEvent{}
	var sid gtid.UUID
	var gno int64
	var tag []byte
	hasOrigTS, hasOrigVersion := false, false
	for r.err == nil && r.remaining() > 0 {
		id := r.unsigned("field id")
		switch id {
		case tgFlags:
			g.Flags = byte(r.unsigned("flags"))
		case tgSID:
			for i := range sid {
				b := r.unsigned("sid")
				if b > 0xff {
					return nil, fmt.Errorf("sid byte %d is %d", i, b)
				}
				sid[i] = byte(b)
			}
		case tgGNO:
			gno = r.signed("gno")
		case tgTag:
			n := r.unsigned("tag length")
			if n > 32 {
				return nil, fmt.Errorf("tag of %d bytes (at most 32)", n)
			}
			tag = r.take(int(n), "tag")
		case tgLastCommitted:
			g.LastCommitted = r.signed("last committed")
		case tgSequenceNumber:
			g.SequenceNumber = r.signed("sequence number")
		case tgImmediateCommitTS:
			g.ImmediateCommitTS = r.unsigned("immediate commit timestamp")
		case tgOriginalCommitTS:
			g.OriginalCommitTS, hasOrigTS = r.unsigned("original commit timestamp"), true
		case tgTransactionLength:
			g.TransactionLength = r.unsigned("transaction length")
		case tgImmediateServerVersion:
			g.ImmediateServerVersion = uint32(r.unsigned("immediate server version"))
		case tgOriginalServerVersion:
			g.OriginalServerVersion, hasOrigVersion = uint32(r.unsigned("original server version")), true
		case tgCommitGroupTicket:
			r.unsigned("commit group ticket")
		default:
			if id <= lastNeeded {
				return nil, fmt.Errorf("field %d, which the source marks as needed, is unknown", id)
			}
			// A field of a later server that readers may ignore: its
			// size is unknown, and only such fields can follow it.
			r.off = len(r.b)
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if gno <= 0 {
		return nil, fmt.Errorf("transaction number %d out of range", gno)
	}
	if len(tag) > 0 && !validTag(tag) {
		return nil, fmt.Errorf("%q is not a tag", tag)
	}
	if tag == nil {
		return nil, errors.New("tagged GTID event without a tag")
	}
	// As in the fixed layout, absent originals equal the immediate values.
	if !hasOrigTS {
		g.OriginalCommitTS = g.ImmediateCommitTS
	}
	if !hasOrigVersion {
		g.OriginalServerVersion = g.ImmediateServerVersion
	}
	g.GTID = gtid.GTID{Flavor: gtid.MySQL, SID: sid, Seq: uint64(gno), Tag: string(tag)}
	return g, nil
}

// validTag reports whether b is a MySQL tag: a letter or _ first, then
// letters, digits and _ (ASCII; tags are case-insensitive and the server
// writes them lowercased).
func validTag(b []byte) bool {
	for i, c := range b {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return len(b) > 0
}
