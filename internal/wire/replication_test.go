package wire

import (
	"bytes"
	"context"
	"net"
	"testing"
	"unsafe"
)

// TestDumpLendsSmallEvents: once a binlog dump starts, its small events are
// slices of the connection's read buffer, one after the other, not copies
// (their allocations were 4% of binlane's CPU on order entry), and each
// still ends at its last byte (no room for an append into the next).
func TestDumpLendsSmallEvents(t *testing.T) {
	client, server := net.Pipe()
	defer client.Close()
	c := &Conn{}
	c.setTransport(client, 0)
	events := [][]byte{bytes.Repeat([]byte{1}, 19), bytes.Repeat([]byte{2}, 120), bytes.Repeat([]byte{3}, 700)}
	go func() {
		defer server.Close()
		r := NewPacketReader(server, 0)
		if _, err := r.ReadPacket(); err != nil { // COM_BINLOG_DUMP
			t.Error(err)
			return
		}
		var stream bytes.Buffer
		w := packetWriter{w: &stream, seq: r.Seq()}
		for _, ev := range events {
			if err := w.writePacket(append([]byte{0x00}, ev...)); err != nil {
				t.Error(err)
				return
			}
		}
		server.Write(stream.Bytes()) // one write: one read takes them all
	}()
	if err := c.StartBinlogDump(context.Background(), BinlogDump{ServerID: 7, File: "b.000001", Pos: 4}); err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for range events {
		ev, err := c.ReadEvent()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	for i, ev := range got {
		if !bytes.Equal(ev, events[i]) || cap(ev) != len(ev) {
			t.Fatalf("event %d: %d bytes (capacity %d), want %d", i, len(ev), cap(ev), len(events[i]))
		}
		if i == 0 {
			continue
		}
		// The previous event, then the next one's header and status byte.
		prev := unsafe.Pointer(unsafe.SliceData(got[i-1]))
		if want := unsafe.Add(prev, len(got[i-1])+5); unsafe.Pointer(unsafe.SliceData(ev)) != want {
			t.Errorf("event %d (%d bytes) is not in the read buffer right after event %d: a copy", i, len(ev), i-1)
		}
	}
}
