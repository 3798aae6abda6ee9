package binlog

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// errShort reports an event body shorter than its fields say.
var errShort = errors.New("truncated")

// reader is a bounds-checked cursor over an event body. The first failed
// read sets err and every later read returns zero values, so decoders read
// all fields and check err once.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%s at offset %d of %d: %w", what, r.off, len(r.b), errShort)
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.fail(what)
		return nil
	}
	s := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return s
}

func (r *reader) skip(n int, what string) { r.take(n, what) }

func (r *reader) u8(what string) byte {
	s := r.take(1, what)
	if s == nil {
		return 0
	}
	return s[0]
}

func (r *reader) u16(what string) uint16 {
	s := r.take(2, what)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint16(s)
}

func (r *reader) u24(what string) uint32 {
	s := r.take(3, what)
	if s == nil {
		return 0
	}
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16
}

func (r *reader) u32(what string) uint32 {
	s := r.take(4, what)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(s)
}

func (r *reader) u48(what string) uint64 {
	s := r.take(6, what)
	if s == nil {
		return 0
	}
	return uint64(binary.LittleEndian.Uint32(s)) | uint64(binary.LittleEndian.Uint16(s[4:]))<<32
}

func (r *reader) u64(what string) uint64 {
	s := r.take(8, what)
	if s == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(s)
}

// uintN reads an n-byte little-endian unsigned integer (n <= 8).
func (r *reader) uintN(n int, what string) uint64 {
	s := r.take(n, what)
	var v uint64
	for i := len(s) - 1; i >= 0; i-- {
		v = v<<8 | uint64(s[i])
	}
	return v
}

// lenenc reads a length-encoded (packed) integer.
func (r *reader) lenenc(what string) uint64 {
	first := r.u8(what)
	switch {
	case first < 0xfb:
		return uint64(first)
	case first == 0xfc:
		return uint64(r.u16(what))
	case first == 0xfd:
		return uint64(r.u24(what))
	case first == 0xfe:
		return r.u64(what)
	}
	if r.err == nil {
		r.err = fmt.Errorf("%s: invalid length-encoded integer prefix 0x%02x at offset %d", what, first, r.off-1)
	}
	return 0
}

// lenencBytes reads a length-encoded byte string.
func (r *reader) lenencBytes(what string) []byte {
	n := r.lenenc(what)
	if n > uint64(r.remaining()) {
		r.fail(what)
		return nil
	}
	return r.take(int(n), what)
}

// rest returns everything not yet read.
func (r *reader) rest() []byte {
	if r.err != nil {
		return nil
	}
	s := r.b[r.off:]
	r.off = len(r.b)
	return s
}

// lenencInt decodes a length-encoded integer at the start of b, returning
// the value and its size; size 0 means b is too short or the prefix invalid.
func lenencInt(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	switch first := b[0]; {
	case first < 0xfb:
		return uint64(first), 1
	case first == 0xfc && len(b) >= 3:
		return uint64(binary.LittleEndian.Uint16(b[1:])), 3
	case first == 0xfd && len(b) >= 4:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4
	case first == 0xfe && len(b) >= 9:
		return binary.LittleEndian.Uint64(b[1:]), 9
	}
	return 0, 0
}
