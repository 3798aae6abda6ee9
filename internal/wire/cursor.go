package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// errTruncated reports a packet shorter than its fields say.
var errTruncated = errors.New("truncated packet")

// cursor is a bounds-checked reader over one packet payload. The first
// failed read sets err and every later read returns zero values, so parsers
// read all fields and check err once.
type cursor struct {
	b   []byte
	off int
	err error
}

func (c *cursor) fail(what string) {
	if c.err == nil {
		c.err = fmt.Errorf("%s at offset %d of %d: %w", what, c.off, len(c.b), errTruncated)
	}
}

func (c *cursor) remaining() int { return len(c.b) - c.off }

func (c *cursor) take(n int, what string) []byte {
	if c.err != nil {
		return nil
	}
	if n < 0 || n > len(c.b)-c.off {
		c.fail(what)
		return nil
	}
	s := c.b[c.off : c.off+n : c.off+n]
	c.off += n
	return s
}

func (c *cursor) u8(what string) byte {
	if s := c.take(1, what); s != nil {
		return s[0]
	}
	return 0
}

func (c *cursor) u16(what string) uint16 {
	if s := c.take(2, what); s != nil {
		return binary.LittleEndian.Uint16(s)
	}
	return 0
}

func (c *cursor) u32(what string) uint32 {
	if s := c.take(4, what); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

// lenenc reads a length-encoded integer; null reports the 0xFB marker that
// stands for NULL in text rows.
func (c *cursor) lenenc(what string) (v uint64, null bool) {
	first := c.u8(what)
	switch {
	case c.err != nil:
		return 0, false
	case first < 0xfb:
		return uint64(first), false
	case first == 0xfb:
		return 0, true
	case first == 0xfc:
		return uint64(c.u16(what)), false
	case first == 0xfd:
		s := c.take(3, what)
		if s == nil {
			return 0, false
		}
		return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16, false
	case first == 0xfe:
		if s := c.take(8, what); s != nil {
			return binary.LittleEndian.Uint64(s), false
		}
		return 0, false
	}
	c.err = fmt.Errorf("%s: invalid length-encoded integer prefix 0xff at offset %d", what, c.off-1)
	return 0, false
}

// lenencBytes reads a length-encoded string; null reports SQL NULL.
func (c *cursor) lenencBytes(what string) (b []byte, null bool) {
	n, null := c.lenenc(what)
	if null || c.err != nil {
		return nil, null
	}
	if n > uint64(c.remaining()) {
		c.fail(what)
		return nil, false
	}
	return c.take(int(n), what), false
}

// cstring reads a NUL-terminated string; a missing terminator takes the
// rest of the packet (some old servers omit it on the last field).
func (c *cursor) cstring(what string) []byte {
	if c.err != nil {
		return nil
	}
	rest := c.b[c.off:]
	end := bytes.IndexByte(rest, 0)
	if end < 0 {
		c.off = len(c.b)
		return rest
	}
	c.off += end + 1
	return rest[:end]
}

// rest returns everything not read yet.
func (c *cursor) rest() []byte {
	if c.err != nil {
		return nil
	}
	s := c.b[c.off:]
	c.off = len(c.b)
	return s
}

// appendLenenc appends a length-encoded integer.
func appendLenenc(dst []byte, v uint64) []byte {
	switch {
	case v < 0xfb:
		return append(dst, byte(v))
	case v <= 0xffff:
		return append(dst, 0xfc, byte(v), byte(v>>8))
	case v <= 0xffffff:
		return append(dst, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(dst, 0xfe), v)
}
