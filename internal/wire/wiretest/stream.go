package wiretest

import "net"

// Stream writes a binlog dump's packets to the client.
type Stream struct{ p *peer }

// Event sends one event (0x00 + its bytes).
func (s *Stream) Event(ev []byte) error { return s.p.write(append([]byte{0}, ev...)) }

// Error ends the dump with an ERR packet.
func (s *Stream) Error(code uint16, msg string) error { return s.p.err(code, "HY000", msg) }

// EOF ends a non-blocking dump.
func (s *Stream) EOF() error { return s.p.write([]byte{0xfe, 0, 0, 0, 0}) }

// Conn is the underlying connection (to close it abruptly, or to wait for
// the client to go away).
func (s *Stream) Conn() net.Conn { return s.p.c }

// Seq returns the next sequence id (for tests of wrap-around).
func (s *Stream) Seq() byte { return s.p.seq }
