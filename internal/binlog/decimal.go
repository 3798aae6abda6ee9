package binlog

import (
	"encoding/binary"
	"fmt"
)

// Binary DECIMAL layout: the integer and fraction digits are each split in
// groups of 9 digits stored as 4 big-endian bytes, plus a leftover group
// stored in as few bytes as hold it. The sign is the top bit of the first
// byte, set for non-negative values; negative values have every byte
// inverted.

var digitBytes = [10]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}

const digitsPerGroup = 9

// DecimalSize is the encoded size of a DECIMAL(prec, scale).
func DecimalSize(prec, scale int) int {
	intg := prec - scale
	return intg/digitsPerGroup*4 + digitBytes[intg%digitsPerGroup] + scale/digitsPerGroup*4 + digitBytes[scale%digitsPerGroup]
}

func decodeDecimalValue(v *Value, c *Column, b []byte) (int, error) {
	prec, scale := c.Precision(), c.Scale()
	if prec < 1 || prec > 65 || scale > prec || scale > 38 {
		return 0, fmt.Errorf("decimal(%d,%d) out of range", prec, scale)
	}
	size := DecimalSize(prec, scale)
	if len(b) < size {
		return 0, errShort
	}
	*v = Value{Kind: KindDecimal, B: b[:size:size], Prec: uint8(prec), Scale: uint8(scale)}
	return size, nil
}

// readGroup reads a big-endian group of n bytes from b (already sign-
// adjusted by xor).
func readGroup(b []byte, xor byte) uint32 {
	var v uint32
	for _, c := range b {
		v = v<<8 | uint32(c^xor)
	}
	return v
}

// AppendDecimal formats a binary DECIMAL(prec, scale) exactly, as SELECT
// shows it: a leading "-" for negatives, "0" for a zero integer part, and
// exactly scale fraction digits.
func AppendDecimal(dst, b []byte, prec, scale int) ([]byte, error) {
	if prec < 1 || prec > 65 || scale < 0 || scale > prec {
		return dst, fmt.Errorf("decimal(%d,%d) out of range", prec, scale)
	}
	size := DecimalSize(prec, scale)
	if len(b) < size {
		return dst, errShort
	}
	intg := prec - scale
	var xor byte
	if b[0]&0x80 == 0 {
		xor = 0xff
	}
	// A scratch copy with the sign bit flipped back, so groups read plainly.
	var scratch [32]byte
	buf := scratch[:size]
	copy(buf, b[:size])
	buf[0] ^= 0x80
	if xor != 0 {
		dst = append(dst, '-')
	}
	start := len(dst)
	pos := 0
	// Integer part: leftover group first, then full groups.
	wrote := false
	if lead := digitBytes[intg%digitsPerGroup]; lead > 0 {
		g := readGroup(buf[pos:pos+lead], xor)
		pos += lead
		if g >= pow10(intg%digitsPerGroup) {
			return dst[:start], fmt.Errorf("decimal digit group %d exceeds %d digits", g, intg%digitsPerGroup)
		}
		if g != 0 {
			dst = appendUint(dst, uint64(g))
			wrote = true
		}
	}
	for i := 0; i < intg/digitsPerGroup; i++ {
		g := binary.BigEndian.Uint32(buf[pos:]) ^ uint32(xor)*0x01010101
		pos += 4
		if g > 999999999 {
			return dst[:start], fmt.Errorf("decimal digit group %d exceeds 9 digits", g)
		}
		if wrote {
			dst = appendZeroPadded(dst, uint64(g), digitsPerGroup)
		} else if g != 0 {
			dst = appendUint(dst, uint64(g))
			wrote = true
		}
	}
	if !wrote {
		dst = append(dst, '0')
	}
	if scale == 0 {
		return dst, nil
	}
	dst = append(dst, '.')
	for i := 0; i < scale/digitsPerGroup; i++ {
		g := binary.BigEndian.Uint32(buf[pos:]) ^ uint32(xor)*0x01010101
		pos += 4
		if g > 999999999 {
			return dst[:start], fmt.Errorf("decimal digit group %d exceeds 9 digits", g)
		}
		dst = appendZeroPadded(dst, uint64(g), digitsPerGroup)
	}
	if rest := scale % digitsPerGroup; rest > 0 {
		n := digitBytes[rest]
		g := readGroup(buf[pos:pos+n], xor)
		if g >= pow10(rest) {
			return dst[:start], fmt.Errorf("decimal digit group %d exceeds %d digits", g, rest)
		}
		dst = appendZeroPadded(dst, uint64(g), rest)
	}
	return dst, nil
}

func pow10(n int) uint32 {
	p := uint32(1)
	for ; n > 0; n-- {
		p *= 10
	}
	return p
}

func appendUint(dst []byte, v uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(dst, buf[i:]...)
}

func appendZeroPadded(dst []byte, v uint64, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for n := 0; n < width || v != 0; n++ {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
	}
	return append(dst, buf[i:]...)
}
