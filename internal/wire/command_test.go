package wire

import (
	"bytes"
	"net"
	"testing"
)

// TestWriteQueryFraming: a query of prefix and text is framed as one
// COM_QUERY whatever its size: packets of 16 MiB with sequence ids from 0,
// the last one shorter (empty when the payload fills the ones before), and
// the answer expected with the id after the last packet.
func TestWriteQueryFraming(t *testing.T) {
	for _, tc := range []struct {
		name         string
		prefix, text int
	}{
		{"small", 10, 100},
		{"no prefix", 0, 1000},
		{"exactly one packet's payload", 5, maxFragment - 1 - 5},
		{"two packets", 100, maxFragment + 10},
		{"prefix across the first packet", maxFragment + 3, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := bytes.Repeat([]byte{'p'}, tc.prefix)
			text := bytes.Repeat([]byte{'t'}, tc.text)
			client, server := net.Pipe()
			defer client.Close()
			c := &Conn{nc: client}
			got := make(chan []byte, 1)
			seqAfter := make(chan uint8, 1)
			go func() {
				r := NewPacketReader(server, 0)
				pkt, err := r.ReadPacket()
				if err != nil {
					t.Error(err)
				}
				got <- pkt
				seqAfter <- r.Seq()
				server.Close()
			}()
			if err := c.SendQuery(prefix, text); err != nil {
				t.Fatal(err)
			}
			pkt := <-got
			want := append(append([]byte{comQuery}, prefix...), text...)
			if !bytes.Equal(pkt, want) {
				t.Fatalf("payload of %d bytes, want %d", len(pkt), len(want))
			}
			if seq := <-seqAfter; c.pending[0] != seq {
				t.Fatalf("answer expected at sequence id %d, the packets ended before %d", c.pending[0], seq)
			}
		})
	}
}
