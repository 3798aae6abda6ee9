package wire

import (
	"bufio"
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
type PacketReader struct {
	r   io.Reader
	seq uint8 // sequence id expected next
	max int
	// hdr is read into here: a local array passed to io.ReadFull would
	// be allocated for every packet.
	hdr [4]byte
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

// ReadPacket returns the next logical packet in a freshly allocated buffer
// the caller may keep. io.EOF means the peer closed between packets.
func (p *PacketReader) ReadPacket() ([]byte, error) {
	var buf []byte
	for first := true; ; first = false {
		n, err := p.readHeader(first)
		if err != nil {
			return nil, err
		}
		if len(buf)+n > p.max {
			return nil, fmt.Errorf("packet of more than %d bytes exceeds the limit of %d", len(buf)+n, p.max)
		}
		if first && n < maxFragment {
			// The common case: one fragment, one exact allocation.
			buf = make([]byte, n)
			if _, err := io.ReadFull(p.r, buf); err != nil {
				return nil, fmt.Errorf("read packet of %d bytes: %w", n, unexpected(err))
			}
			return buf, nil
		}
		// Grow by what this fragment announces only: a peer cannot make us
		// allocate more than it actually sends plus one fragment.
		start := len(buf)
		buf = append(buf, make([]byte, n)...)
		if _, err := io.ReadFull(p.r, buf[start:]); err != nil {
			return nil, fmt.Errorf("read packet fragment of %d bytes: %w", n, unexpected(err))
		}
		if n < maxFragment {
			return buf, nil
		}
	}
}

func (p *PacketReader) readHeader(first bool) (int, error) {
	hdr := p.hdr[:]
	if _, err := io.ReadFull(p.r, hdr); err != nil {
		if first && err == io.EOF {
			return 0, io.EOF
		}
		return 0, fmt.Errorf("read packet header: %w", unexpected(err))
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if hdr[3] != p.seq {
		return 0, fmt.Errorf("packet sequence id %d, expected %d: out of sync with the server", hdr[3], p.seq)
	}
	p.seq++ // wraps at 256, as the server's does
	return n, nil
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

// newBufferedReader wraps a connection for packet reads.
func newBufferedReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }
