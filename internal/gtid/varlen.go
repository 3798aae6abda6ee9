package gtid

import (
	"encoding/binary"
	"math/bits"
)

// MySQL 8.3 writes tags with its serialization library's variable-length
// integers (the tagged GTID-set layout, the tagged GTID event): the number
// of trailing one bits of the first byte, plus one, is the size (1 to 8
// bytes) and the little-endian value sits above those size bits; a first
// byte of 0xff is followed by the 8-byte value.

// maxTagLen is the longest tag MySQL accepts.
const maxTagLen = 32

// Varlen decodes a variable-length unsigned integer at the start of b and
// returns it with its size; size 0 means b is too short.
func Varlen(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	if b[0] == 0xff {
		if len(b) < 9 {
			return 0, 0
		}
		return binary.LittleEndian.Uint64(b[1:]), 9
	}
	n := bits.TrailingZeros8(^b[0]) + 1
	if len(b) < n {
		return 0, 0
	}
	var v uint64
	for i := n - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v >> n, n
}

// AppendVarlen appends v in the variable-length layout, as short as it fits.
func AppendVarlen(b []byte, v uint64) []byte {
	for n := 1; n <= 8; n++ {
		if v < 1<<(7*n) {
			x := v<<n | (1<<(n-1) - 1)
			for i := 0; i < n; i++ {
				b = append(b, byte(x>>(8*i)))
			}
			return b
		}
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xff), v)
}
