package binlog

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
)

// taggedGTIDBody is the body of the GTID_TAGGED_LOG_EVENT MySQL 9.6 wrote
// for 55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3 (the shared binlog
// binlog_transaction_with_GTID_TAG.000001, at 245).
const taggedGTIDBody = "027800000002aaee25020804650222c503c502e1029cc10311035502dead03040c060a6d7974616708000a040c" +
	"7f1cf3b814244a0610a10412430f0b"

func TestTaggedGTIDEvent(t *testing.T) {
	body, _ := hex.DecodeString(taggedGTIDBody)
	d, b := mysqlDecoder(t, false)
	ev, err := d.Decode(b.event(EventGTIDTagged, 0, body))
	if err != nil {
		t.Fatal(err)
	}
	got := *ev.Data.(*MySQLGTIDEvent)
	sid, _ := gtid.ParseUUID("55778904-0299-11f1-b1b8-4ef0c4956feb")
	want := MySQLGTIDEvent{GTID: gtid.GTID{Flavor: gtid.MySQL, SID: sid, Tag: "mytag", Seq: 3}, LastCommitted: 0, SequenceNumber: 1,
		ImmediateCommitTS: 1770368687207196, OriginalCommitTS: 1770368687207196, TransactionLength: 296,
		ImmediateServerVersion: 90600, OriginalServerVersion: 90600}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	if s := got.GTID.String(); s != "55778904-0299-11f1-b1b8-4ef0c4956feb:mytag:3" {
		t.Errorf("prints as %s", s)
	}
}

// TestTaggedGTIDEventRefusals: a malformed tagged GTID event is an error
// naming the event, never a panic or a made-up transaction.
func TestTaggedGTIDEventRefusals(t *testing.T) {
	good, _ := hex.DecodeString(taggedGTIDBody)
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name, want string
		body       []byte
	}{
		{"empty", "truncated", nil},
		{"version 2", "serialization format version 2", edit(func(b []byte) []byte { b[0] = 4; return b })},
		{"size mismatch", "payload size field says 60 bytes, event holds 59", edit(func(b []byte) []byte { return b[:len(b)-1] })},
		{"cut in a field", "truncated", edit(func(b []byte) []byte { b[1] = 2 * 10; return b[:10] })},
		{"gno 0", "transaction number 0", edit(func(b []byte) []byte { b[32] = 0; return b })},
		{"no tag", "without a tag", edit(func(b []byte) []byte { b[1] = 2 * 33; return b[:33] })},
		{"bad tag", "is not a tag", edit(func(b []byte) []byte { b[35] = '-'; return b })},
		// Offsets: version, size, last needed field id, flags (id 0), sid
		// (id 1, 25 bytes from 6), gno (id 2) at 32, tag (id 3) at 34.
		{"unknown needed field", "field 12, which the source marks as needed", edit(func(b []byte) []byte {
			b[2] = 2 * 12
			b[1] += 2 * 2
			return append(b, 2*12, 0)
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, b := mysqlDecoder(t, false)
			_, err := d.Decode(b.event(EventGTIDTagged, 0, c.body))
			var de *DecodeError
			if !errors.As(err, &de) || de.Type != EventGTIDTagged || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error of the Gtid_tagged event saying %q", err, c.want)
			}
		})
	}
	// A later server's field that readers may ignore ends the event.
	ignorable := edit(func(b []byte) []byte { b[1] += 2 * 2; return append(b, 2*12, 0) })
	d, b := mysqlDecoder(t, false)
	if _, err := d.Decode(b.event(EventGTIDTagged, 0, ignorable)); err != nil {
		t.Errorf("ignorable unknown field: %v", err)
	}
}
