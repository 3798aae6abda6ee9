package wire

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
)

func TestPacketRoundTripSizes(t *testing.T) {
	// Exact multiples of 0xFFFFFF need a trailing empty packet; check the
	// boundaries on both sides of one and two fragments.
	for _, n := range []int{0, 1, 250, maxFragment - 1, maxFragment, maxFragment + 1, 2 * maxFragment, 2*maxFragment + 7} {
		payload := make([]byte, n)
		for i := range payload {
			payload[i] = byte(i * 7)
		}
		var buf bytes.Buffer
		w := packetWriter{w: &buf, seq: 3}
		if err := w.writePacket(payload); err != nil {
			t.Fatal(err)
		}
		wantPackets := n/maxFragment + 1
		if got := buf.Len() - n; got != 4*wantPackets {
			t.Fatalf("n=%d: %d header bytes, want %d", n, got, 4*wantPackets)
		}
		r := NewPacketReader(&buf, 0)
		r.SetSeq(3)
		got, err := r.ReadPacket()
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !bytes.Equal(got, payload) {
			t.Fatalf("n=%d: payload differs (got %d bytes)", n, len(got))
		}
		if r.Seq() != byte(3+wantPackets) || w.seq != r.Seq() {
			t.Fatalf("n=%d: sequence reader %d writer %d", n, r.Seq(), w.seq)
		}
		if _, err := r.ReadPacket(); err != io.EOF {
			t.Fatalf("n=%d: after the packet: %v, want io.EOF", n, err)
		}
	}
}

func TestPacketSequenceWrapsAndIsChecked(t *testing.T) {
	var buf bytes.Buffer
	w := packetWriter{w: &buf}
	for i := 0; i < 300; i++ {
		w.writePacket([]byte{byte(i)})
	}
	r := NewPacketReader(&buf, 0)
	for i := 0; i < 300; i++ {
		p, err := r.ReadPacket()
		if err != nil || len(p) != 1 || p[0] != byte(i) {
			t.Fatalf("packet %d: %v %v", i, p, err)
		}
	}
	bad := []byte{1, 0, 0, 5, 'x'}
	r = NewPacketReader(bytes.NewReader(bad), 0)
	if _, err := r.ReadPacket(); err == nil || !strings.Contains(err.Error(), "sequence id 5, expected 0") {
		t.Fatalf("out-of-order packet: %v", err)
	}
}

func TestPacketTruncatedAndOversized(t *testing.T) {
	cases := map[string][]byte{
		"header":   {5, 0},
		"payload":  {5, 0, 0, 0, 'a', 'b'},
		"fragment": append(append([]byte{0xff, 0xff, 0xff, 0}, make([]byte, maxFragment)...), 1, 0),
	}
	for name, in := range cases {
		_, err := NewPacketReader(bytes.NewReader(in), 0).ReadPacket()
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %v, want ErrUnexpectedEOF", name, err)
		}
	}
	_, err := NewPacketReader(bytes.NewReader([]byte{10, 0, 0, 0}), 5).ReadPacket()
	if err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
		t.Errorf("oversized packet: %v", err)
	}
}

// FuzzReadPacket feeds arbitrary bytes to the packet reader: it must never
// panic, never return more payload than it was given, and keep sequence ids
// in step with what it accepted.
func FuzzReadPacket(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{3, 0, 0, 0, 'a', 'b', 'c', 1, 0, 0, 1, 'd'})
	f.Add([]byte{0xff, 0xff, 0xff, 0, 1, 2, 3})
	f.Add([]byte{2, 0, 0, 7, 1, 2})
	f.Add([]byte{0xfe, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := NewPacketReader(bytes.NewReader(in), 1<<20)
		total := 0
		for i := 0; i < 1000; i++ {
			p, err := r.ReadPacket()
			if err != nil {
				return
			}
			total += len(p) + 4
			if total > len(in) {
				t.Fatalf("returned %d bytes from %d of input", total, len(in))
			}
			// What the decoders above the framing see must not panic either.
			parseHandshake(p)
			parseOK(p)
			parseError(p)
			parseTextRow(p, 3)
			columnName(p)
			eofStatus(p)
		}
	})
}

// chunkReader returns what it holds in reads of the sizes it cycles
// through, as a socket would.
type chunkReader struct {
	b     []byte
	sizes []int
	i     int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(c.b), c.sizes[c.i%len(c.sizes)])
	c.i++
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

// TestPacketsKeptWhileReading keeps every payload while the reader goes on
// through small, buffer-straddling and large packets delivered in odd chunks:
// no payload may change, and none may have room past its end (an append by
// the caller must not write into the next packet).
func TestPacketsKeptWhileReading(t *testing.T) {
	sizes := []int{0, 1, 100, 3000, 16383, 16384, 40000, 65532, 65536, 70000, 7, 9000,
		sliceMin - 1, sliceMin, readSize - 4, readSize, readSize + 1, 2*readSize + 5, 11000}
	var want [][]byte
	var buf bytes.Buffer
	w := packetWriter{w: &buf}
	for i := 0; i < 300; i++ {
		p := make([]byte, sizes[i%len(sizes)])
		for j := range p {
			p[j] = byte(i + j*3)
		}
		want = append(want, p)
		if err := w.writePacket(p); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		chunks  []int
		lendAll bool
	}{{[]int{1 << 30}, false}, {[]int{1}, false}, {[]int{3, 5000, 17, 65536, 100000}, false}, {[]int{readSize - 1, 5, readSize + 3}, false},
		{[]int{1 << 30}, true}, {[]int{1}, true}, {[]int{3, 5000, 17, 65536, 100000}, true}, {[]int{readSize - 1, 5, readSize + 3}, true}} {
		chunks := c.chunks
		src := &chunkReader{b: buf.Bytes(), sizes: chunks}
		r := NewPacketReader(src, 0)
		if c.lendAll {
			r.LendAll()
		}
		var got [][]byte
		for range want {
			p, err := r.ReadPacket()
			if err != nil {
				t.Fatalf("chunks %v, packet %d: %v", chunks, len(got), err)
			}
			if cap(p) != len(p) {
				t.Fatalf("chunks %v, lend all %v, packet %d: capacity %d past its %d bytes", chunks, c.lendAll, len(got), cap(p), len(p))
			}
			got = append(got, p)
		}
		if _, err := r.ReadPacket(); err != io.EOF {
			t.Fatalf("chunks %v: after the last packet: %v, want io.EOF", chunks, err)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("chunks %v, lend all %v: packet %d (%d bytes) changed", chunks, c.lendAll, i, len(want[i]))
			}
		}
	}
}

// TestLongPayloadsShareTheReadBuffer: a payload of sliceMin bytes or more
// is a slice of the buffer the socket is read into, not an allocation of
// its own (one per packet before: 17% of binlane's CPU on wide rows); a
// shorter one is copied out, so that one kept for long keeps no buffer
// alive, but for a reader that lends all (a binlog dump's: its small
// events' copies were 4% of binlane's CPU on order entry).
func TestLongPayloadsShareTheReadBuffer(t *testing.T) {
	for _, c := range []struct {
		size      int
		lendAll   bool
		maxAllocs float64 // per packet
	}{{11000, false, 0.1}, {sliceMin, false, 0.1}, {sliceMin - 1, false, 1},
		{11000, true, 0.1}, {sliceMin - 1, true, 0.1}, {120, true, 0.1}, {0, true, 0.1}} {
		var buf bytes.Buffer
		w := packetWriter{w: &buf}
		for range 2000 {
			if err := w.writePacket(make([]byte, c.size)); err != nil {
				t.Fatal(err)
			}
		}
		r := NewPacketReader(bytes.NewReader(buf.Bytes()), 0)
		if c.lendAll {
			r.LendAll()
		}
		allocs := testing.AllocsPerRun(1000, func() {
			if p, err := r.ReadPacket(); err != nil || len(p) != c.size {
				t.Fatalf("%d bytes: %d, %v", c.size, len(p), err)
			}
		})
		if allocs > c.maxAllocs {
			t.Errorf("%d-byte packets, lend all %v: %.2f allocations each, want at most %.2f", c.size, c.lendAll, allocs, c.maxAllocs)
		}
	}
}

// BenchmarkReadPacket reads packets of the documents benchmark's sizes
// (2-20 KB row events) and small ones through the connection's read-ahead
// buffer, as a binlog stream does.
func BenchmarkReadPacket(b *testing.B) {
	for _, size := range []int{120, 11000} {
		b.Run(strconv.Itoa(size), func(b *testing.B) {
			var buf bytes.Buffer
			w := packetWriter{w: &buf}
			for buf.Len() < 4<<20 {
				if err := w.writePacket(make([]byte, size)); err != nil {
					b.Fatal(err)
				}
			}
			stream, n := buf.Bytes(), buf.Len()/(size+4)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i += n {
				r := NewPacketReader(bytes.NewReader(stream), 0)
				for j := 0; j < n && i+j < b.N; j++ {
					if _, err := r.ReadPacket(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
