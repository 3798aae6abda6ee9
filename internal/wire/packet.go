package wire

import (
	"fmt"
	"io"
	"net"
)

// maxFragment is the largest payload of one physical packet; a fragment of
// exactly this size means "more follows".
const maxFragment = 0xffffff

// DefaultMaxPacket bounds one reassembled packet: the server's own bound is
// max_allowed_packet (at most 1 GiB) plus the packet's status byte.
const DefaultMaxPacket = 1<<30 + 1<<16

// Reading: a connection reads its socket into a buffer of readSize bytes
// (one read system call brings in as much as is there, up to the room
// left), and a payload of at least sliceMin bytes is handed out as a slice
// of that buffer: no allocation and no copy of its own (a binlog stream's
// row events of a few KB were 17% of binlane's CPU on wide rows, allocated,
// zeroed and filled by a copy out of a read-ahead buffer). The buffer is
// never written again where a payload lies: a full one is replaced, not
// reused, and lives as long as a payload in it does. Smaller payloads are
// copied out, so that one kept for long (a greeting, a table map) does not
// keep a whole buffer alive; longer ones than readSize are read straight
// into their own allocation. The cost: a caller that keeps the payloads
// of a stretch of the stream keeps about that stretch's bytes, its small
// payloads a second time as their copies.
//
// A binlog dump lends its small payloads too (LendAll, set once the dump
// starts): its events are kept while their transaction is in flight and
// no longer (what the decoder keeps beyond one, a table map or the format
// description, it copies), and its small events are most of a stream of
// small transactions: their copies were 4% of binlane's CPU on order
// entry (2026-12-02), and a second copy of those bytes in memory.
const (
	readSize = 256 << 10
	sliceMin = 1 << 10
)

// PacketReader reads logical packets: it checks sequence ids and joins the
// fragments of payloads of 16 MiB and more.
type PacketReader struct {
	r   io.Reader
	seq uint8 // sequence id expected next
	max int
	// buf holds what was read from r: buf[pos:] is not returned yet, and
	// buf[len(buf):cap(buf)] is room for reads. Bytes before pos may be
	// payloads a caller keeps.
	buf []byte
	pos int
	// lent: a payload returned lies in buf, which must then never be
	// written again where it lies. Until then buf is reused as it is.
	lent bool
	// lendAll: payloads shorter than sliceMin are lent as well (LendAll).
	lendAll bool
}

// NewPacketReader reads packets from r, refusing any reassembled payload
// longer than max bytes (DefaultMaxPacket when max <= 0).
func NewPacketReader(r io.Reader, max int) *PacketReader {
	if max <= 0 {
		max = DefaultMaxPacket
	}
	return &PacketReader{r: r, max: max}
}

// SetSeq sets the sequence id expected on the next packet.
func (p *PacketReader) SetSeq(seq uint8) { p.seq = seq }

// Seq returns the sequence id expected on the next packet.
func (p *PacketReader) Seq() uint8 { return p.seq }

// LendAll makes every payload of readSize bytes or less a slice of the
// read buffer, short ones included: for a caller that keeps no payload
// much longer than those read after it (a binlog dump's consumer).
func (p *PacketReader) LendAll() { p.lendAll = true }

// Buffered is how many bytes were read from r and not returned yet.
func (p *PacketReader) Buffered() int { return len(p.buf) - p.pos }

// ReadPacket returns the next logical packet in a buffer the caller may
// keep, which nothing else writes to and which has no room past its end.
// io.EOF means the peer closed between packets.
func (p *PacketReader) ReadPacket() ([]byte, error) {
	n, err := p.readHeader(true)
	if err != nil {
		return nil, err
	}
	if n > p.max {
		return nil, fmt.Errorf("packet of more than %d bytes exceeds the limit of %d", n, p.max)
	}
	if n <= readSize { // < maxFragment: one fragment
		// The common case: read with others.
		if err := p.fill(n); err != nil {
			return nil, fmt.Errorf("read packet of %d bytes: %w", n, unexpected(err))
		}
		pkt := p.buf[p.pos : p.pos+n : p.pos+n]
		p.pos += n
		if n < sliceMin && !p.lendAll {
			return append(make([]byte, 0, n), pkt...), nil
		}
		p.lent = true
		return pkt, nil
	}
	// Long: its own allocation, grown by what each fragment announces
	// only, so a peer cannot make us allocate more than it actually sends
	// plus one fragment.
	buf := make([]byte, 0, n)
	for {
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if err := p.readFull(buf[start:]); err != nil {
			return nil, fmt.Errorf("read packet fragment of %d bytes: %w", n, unexpected(err))
		}
		if n < maxFragment {
			return buf, nil
		}
		if n, err = p.readHeader(false); err != nil {
			return nil, err
		}
		if len(buf)+n > p.max {
			return nil, fmt.Errorf("packet of more than %d bytes exceeds the limit of %d", len(buf)+n, p.max)
		}
	}
}

func (p *PacketReader) readHeader(first bool) (int, error) {
	partial := p.Buffered() > 0
	if err := p.fill(4); err != nil {
		if first && !partial && err == io.EOF {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("read packet header: %w", unexpected(err))
	}
	hdr := p.buf[p.pos : p.pos+4]
	p.pos += 4
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if hdr[3] != p.seq {
		return 0, fmt.Errorf("packet sequence id %d, expected %d: out of sync with the server", hdr[3], p.seq)
	}
	p.seq++ // wraps at 256, as the server's does
	return n, nil
}

// fill makes n bytes (at most readSize) available at buf[pos:], reading
// what r has, as much as fits. The bytes not returned yet move to the
// start of the buffer when no payload lies in it, else, without room for
// n, to a new buffer.
func (p *PacketReader) fill(n int) error {
	have := len(p.buf) - p.pos
	if have >= n {
		return nil
	}
	switch {
	case !p.lent && p.buf != nil:
		p.buf = p.buf[:copy(p.buf, p.buf[p.pos:])]
		p.pos = 0
	case cap(p.buf)-p.pos < n:
		nb := make([]byte, have, readSize)
		copy(nb, p.buf[p.pos:])
		p.buf, p.pos, p.lent = nb, 0, false
	}
	m, err := io.ReadAtLeast(p.r, p.buf[len(p.buf):cap(p.buf)], n-have)
	p.buf = p.buf[:len(p.buf)+m]
	return err
}

// readFull fills dst with the bytes buffered, then straight from r.
func (p *PacketReader) readFull(dst []byte) error {
	k := copy(dst, p.buf[p.pos:])
	p.pos += k
	if k == len(dst) {
		return nil
	}
	_, err := io.ReadFull(p.r, dst[k:])
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// unexpected turns an EOF in the middle of a packet into ErrUnexpectedEOF.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// packetWriter splits payloads into packets with sequence ids.
type packetWriter struct {
	w   io.Writer
	seq uint8
}

// writePacket sends one logical packet. A payload whose length is a multiple
// of 0xFFFFFF ends with an empty packet, so the reader knows it is complete.
func (p *packetWriter) writePacket(payload []byte) error {
	for {
		n := min(len(payload), maxFragment)
		hdr := []byte{byte(n), byte(n >> 8), byte(n >> 16), p.seq}
		bufs := net.Buffers{hdr, payload[:n]}
		if _, err := bufs.WriteTo(p.w); err != nil {
			return fmt.Errorf("write packet: %w", err)
		}
		p.seq++
		payload = payload[n:]
		if n < maxFragment {
			return nil
		}
	}
}
