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

// PacketReader reads logical packets: it checks sequence ids and joins the
// fragments of payloads of 16 MiB and more.
//
// It reads the connection into slabs of slabSize bytes and hands out the
// payloads of small packets as slices of them: one read system call brings
// many packets, and neither a second copy (as through a bufio.Reader) nor an
// allocation per packet is needed. A returned payload's capacity ends where
// it does and the reader writes only past every payload it returned, so a
// caller may keep payloads as long as it likes (a slab stays alive as long
// as any payload in it). Payloads of ownBuffer bytes and more get a buffer
// of their own, filled straight from the connection.
type PacketReader struct {
	r   io.Reader
	seq uint8 // sequence id expected next
	max int
	// buf is the current slab: buf[off:end] has been read and not yet
	// returned, buf[end:] is free.
	buf      []byte
	off, end int
}

const (
	slabSize  = 64 << 10
	ownBuffer = slabSize / 4
)

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

// Buffered returns how many bytes were read from the connection and not yet
// returned in packets.
func (p *PacketReader) Buffered() int { return p.end - p.off }

// ReadPacket returns the next logical packet, which the caller may keep
// (see PacketReader). io.EOF means the peer closed between packets.
func (p *PacketReader) ReadPacket() ([]byte, error) {
	n, err := p.readHeader(true)
	if err != nil {
		return nil, err
	}
	if n > p.max {
		return nil, fmt.Errorf("packet of more than %d bytes exceeds the limit of %d", n, p.max)
	}
	if n < maxFragment {
		return p.payload(n)
	}
	// A payload of 16 MiB or more comes in fragments. Grow by what each
	// fragment announces only: a peer cannot make us allocate more than it
	// actually sends plus one fragment.
	var buf []byte
	for {
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if err := p.readFull(buf[start:]); err != nil {
			return nil, fmt.Errorf("read packet fragment of %d bytes: %w", n, err)
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

// payload returns the next n bytes: a slice of the slab, or a buffer of its
// own for a large payload not already in the slab.
func (p *PacketReader) payload(n int) ([]byte, error) {
	if p.end-p.off < n && n >= ownBuffer {
		b := make([]byte, n)
		if err := p.readFull(b); err != nil {
			return nil, fmt.Errorf("read packet of %d bytes: %w", n, err)
		}
		return b, nil
	}
	if err := p.fill(n); err != nil {
		return nil, fmt.Errorf("read packet of %d bytes: %w", n, err)
	}
	b := p.buf[p.off : p.off+n : p.off+n]
	p.off += n
	return b, nil
}

func (p *PacketReader) readHeader(first bool) (int, error) {
	if err := p.fill(4); err != nil {
		if first && err == io.EOF {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("read packet header: %w", unexpected(err))
	}
	hdr := p.buf[p.off : p.off+4]
	p.off += 4
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if hdr[3] != p.seq {
		return 0, fmt.Errorf("packet sequence id %d, expected %d: out of sync with the server", hdr[3], p.seq)
	}
	p.seq++ // wraps at 256, as the server's does
	return n, nil
}

// fill reads until k bytes (at most slabSize) are buffered, moving what is
// buffered to a new slab when the current one has no room for k. It returns
// io.EOF only when the connection ended with nothing buffered.
func (p *PacketReader) fill(k int) error {
	if p.end-p.off >= k {
		return nil
	}
	if len(p.buf)-p.off < k {
		slab := make([]byte, slabSize)
		p.end = copy(slab, p.buf[p.off:p.end])
		p.buf, p.off = slab, 0
	}
	for empty := 0; p.end-p.off < k; {
		m, err := p.r.Read(p.buf[p.end:])
		p.end += m
		switch {
		case p.end-p.off >= k:
			return nil
		case err == io.EOF && p.end > p.off:
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		case m == 0:
			if empty++; empty == 100 {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}

// readFull fills b with what is buffered, then straight from the connection.
func (p *PacketReader) readFull(b []byte) error {
	c := copy(b, p.buf[p.off:p.end])
	p.off += c
	if _, err := io.ReadFull(p.r, b[c:]); err != nil {
		return unexpected(err)
	}
	return nil
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
