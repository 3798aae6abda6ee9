package binlog

import (
	"encoding/binary"
	"fmt"
	"math"
)

// decodeValue decodes the value of column c at the start of b into v and
// returns its encoded size. It never reads past b.
func decodeValue(v *Value, c *Column, b []byte) (int, error) {
	switch c.Type {
	case TypeTiny:
		return decodeInt(v, c, b, 1)
	case TypeShort:
		return decodeInt(v, c, b, 2)
	case TypeInt24:
		return decodeInt(v, c, b, 3)
	case TypeLong:
		return decodeInt(v, c, b, 4)
	case TypeLongLong:
		return decodeInt(v, c, b, 8)
	case TypeFloat:
		if len(b) < 4 {
			return 0, errShort
		}
		*v = Value{Kind: KindFloat, N: int64(binary.LittleEndian.Uint32(b))}
		return 4, nil
	case TypeDouble:
		if len(b) < 8 {
			return 0, errShort
		}
		*v = Value{Kind: KindDouble, N: int64(binary.LittleEndian.Uint64(b))}
		return 8, nil
	case TypeNewDecimal:
		return decodeDecimalValue(v, c, b)
	case TypeYear:
		if len(b) < 1 {
			return 0, errShort
		}
		y := int64(b[0])
		if y != 0 {
			y += 1900
		}
		*v = Value{Kind: KindYear, N: y}
		return 1, nil
	case TypeDate, TypeNewDate:
		return decodeDate(v, b)
	case TypeTime:
		return decodeOldTime(v, b)
	case TypeDateTime:
		return decodeOldDateTime(v, b)
	case TypeTimestamp:
		if len(b) < 4 {
			return 0, errShort
		}
		*v = Value{Kind: KindTimestamp, N: int64(binary.LittleEndian.Uint32(b))}
		return 4, nil
	case TypeTimestamp2:
		return decodeTimestamp2(v, c, b)
	case TypeDateTime2:
		return decodeDateTime2(v, c, b)
	case TypeTime2:
		return decodeTime2(v, c, b)
	case TypeVarchar, TypeVarString:
		lenBytes := 1
		if c.Meta > 255 {
			lenBytes = 2
		}
		return decodeLengthPrefixed(v, KindString, b, lenBytes)
	case TypeString:
		return decodeFixedString(v, c, b)
	case TypeBlob, TypeTinyBlob, TypeMediumBlob, TypeLongBlob, TypeVector:
		return decodeLengthPrefixed(v, KindString, b, int(c.Meta))
	case TypeGeometry:
		return decodeLengthPrefixed(v, KindGeometry, b, int(c.Meta))
	case TypeJSON:
		return decodeLengthPrefixed(v, KindJSON, b, int(c.Meta))
	case TypeEnum:
		return decodeEnum(v, c, b)
	case TypeSet:
		return decodeSet(v, c, b)
	case TypeBit:
		return decodeBit(v, c, b)
	case TypeBlobCompressed, TypeVarcharCompressed:
		return 0, fmt.Errorf("compressed columns are not supported: remove the COMPRESSED attribute on the source")
	case TypeNull:
		*v = Value{Kind: KindNull}
		return 0, nil
	}
	return 0, fmt.Errorf("unsupported column type %d", byte(c.Type))
}

func decodeInt(v *Value, c *Column, b []byte, size int) (int, error) {
	if len(b) < size {
		return 0, errShort
	}
	var u uint64
	switch size {
	case 1:
		u = uint64(b[0])
	case 2:
		u = uint64(binary.LittleEndian.Uint16(b))
	case 3:
		u = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16
	case 4:
		u = uint64(binary.LittleEndian.Uint32(b))
	default:
		u = binary.LittleEndian.Uint64(b)
	}
	if c.Unsigned {
		*v = Value{Kind: KindUint, N: int64(u)}
		return size, nil
	}
	shift := uint(64 - 8*size)
	*v = Value{Kind: KindInt, N: int64(u<<shift) >> shift}
	return size, nil
}

func decodeLengthPrefixed(v *Value, kind Kind, b []byte, lenBytes int) (int, error) {
	if lenBytes < 1 || lenBytes > 4 {
		return 0, fmt.Errorf("length prefix of %d bytes", lenBytes)
	}
	if len(b) < lenBytes {
		return 0, errShort
	}
	var n int
	for i := lenBytes - 1; i >= 0; i-- {
		n = n<<8 | int(b[i])
	}
	end := lenBytes + n
	if n < 0 || end > len(b) {
		return 0, fmt.Errorf("value of %d bytes: %w", n, errShort)
	}
	*v = Value{Kind: kind, B: b[lenBytes:end:end]}
	return end, nil
}

// collationBinary is the id of the binary "collation" of BINARY, VARBINARY
// and BLOB columns (and of MariaDB's INET6, UUID and GEOMETRY).
const collationBinary = 63

// decodeFixedString reads CHAR and BINARY values. The server strips the
// trailing pad bytes of fixed-length strings before logging them: spaces of
// CHAR (SELECT strips them too, so the value is what SELECT shows) and 0x00
// of BINARY(n), which SELECT does show. BINARY values are padded back to the
// column length so that they compare equal to the stored value (a shorter
// BINARY literal does not match in a WHERE clause); the padded copy is the
// one allocation this costs, and only for values that lost bytes. Without
// charset metadata (Collation 0) a BINARY column cannot be told from a CHAR
// one and is returned as logged.
func decodeFixedString(v *Value, c *Column, b []byte) (int, error) {
	lenBytes := 1
	if c.Meta > 255 {
		lenBytes = 2
	}
	n, err := decodeLengthPrefixed(v, KindString, b, lenBytes)
	if err != nil || c.Collation != collationBinary || len(v.B) >= int(c.Meta) {
		return n, err
	}
	padded := make([]byte, c.Meta)
	copy(padded, v.B)
	v.B = padded
	return n, nil
}

func decodeEnum(v *Value, c *Column, b []byte) (int, error) {
	size := int(c.Meta)
	if size != 1 && size != 2 {
		return 0, fmt.Errorf("enum of %d bytes", size)
	}
	if len(b) < size {
		return 0, errShort
	}
	n := int64(b[0])
	if size == 2 {
		n = int64(binary.LittleEndian.Uint16(b))
	}
	*v = Value{Kind: KindEnum, N: n}
	return size, nil
}

func decodeSet(v *Value, c *Column, b []byte) (int, error) {
	size := int(c.Meta)
	if size < 1 || size > 8 {
		return 0, fmt.Errorf("set of %d bytes", size)
	}
	if len(b) < size {
		return 0, errShort
	}
	var n uint64
	for i := size - 1; i >= 0; i-- {
		n = n<<8 | uint64(b[i])
	}
	*v = Value{Kind: KindSet, N: int64(n)}
	return size, nil
}

func decodeBit(v *Value, c *Column, b []byte) (int, error) {
	width := int(c.Meta)
	size := (width + 7) / 8
	if size < 1 || size > 8 {
		return 0, fmt.Errorf("bit(%d)", width)
	}
	if len(b) < size {
		return 0, errShort
	}
	var n uint64
	for _, x := range b[:size] {
		n = n<<8 | uint64(x)
	}
	*v = Value{Kind: KindBit, N: int64(n), Prec: uint8(width)}
	return size, nil
}

// Temporal layouts; see the protocol notes for the bit positions.

func decodeDate(v *Value, b []byte) (int, error) {
	if len(b) < 3 {
		return 0, errShort
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	if err := checkDateTime(n>>9, n>>5&15, n&31, 0, 0, 0, 0); err != nil {
		return 0, err
	}
	*v = Value{Kind: KindDate, N: packTemporal(n>>9, n>>5&15, n&31, 0, 0, 0)}
	return 3, nil
}

func decodeOldTime(v *Value, b []byte) (int, error) {
	if len(b) < 3 {
		return 0, errShort
	}
	n := int32(uint32(b[0])|uint32(b[1])<<8|uint32(b[2])<<16) << 8 >> 8
	neg := n < 0
	if neg {
		n = -n
	}
	if err := checkTime(int(n/10000), int(n/100%100), int(n%100), 0); err != nil {
		return 0, err
	}
	*v = Value{Kind: KindTime, N: packTemporal(0, 0, 0, int(n/10000), int(n/100%100), int(n%100)), Neg: neg}
	return 3, nil
}

func decodeOldDateTime(v *Value, b []byte) (int, error) {
	if len(b) < 8 {
		return 0, errShort
	}
	n := binary.LittleEndian.Uint64(b)
	d, t := n/1000000, n%1000000
	if err := checkDateTime(int(d/10000), int(d/100%100), int(d%100), int(t/10000), int(t/100%100), int(t%100), 0); err != nil {
		return 0, err
	}
	*v = Value{Kind: KindDateTime, N: packTemporal(int(d/10000), int(d/100%100), int(d%100), int(t/10000), int(t/100%100), int(t%100))}
	return 8, nil
}

// fracSize is the byte count of a fractional-seconds part.
func fracSize(fsp int) int { return (fsp + 1) / 2 }

// readFrac reads a big-endian fraction of fsp digits as microseconds.
func readFrac(b []byte, fsp int) int {
	switch fracSize(fsp) {
	case 1:
		return int(b[0]) * 10000
	case 2:
		return int(binary.BigEndian.Uint16(b)) * 100
	case 3:
		return int(b[0])<<16 | int(b[1])<<8 | int(b[2])
	}
	return 0
}

// checkDateTime rejects parts no server writes (zero parts are legal: zero
// dates and '2020-00-15' exist under a relaxed sql_mode), so a corrupt image
// cannot turn into text that reads as another value.
func checkDateTime(year, month, day, hour, minute, second, micro int) error {
	if year > 9999 || month > 12 || day > 31 || hour > 23 || minute > 59 || second > 59 || micro > 999999 {
		return fmt.Errorf("date-time %04d-%02d-%02d %02d:%02d:%02d.%06d out of range", year, month, day, hour, minute, second, micro)
	}
	return nil
}

func checkTime(hour, minute, second, micro int) error {
	if hour > 838 || minute > 59 || second > 59 || micro > 999999 {
		return fmt.Errorf("time %02d:%02d:%02d.%06d out of range", hour, minute, second, micro)
	}
	return nil
}

func checkFsp(fsp int) error {
	if fsp < 0 || fsp > 6 {
		return fmt.Errorf("fractional precision %d out of range", fsp)
	}
	return nil
}

func decodeTimestamp2(v *Value, c *Column, b []byte) (int, error) {
	fsp := c.Fsp()
	if err := checkFsp(fsp); err != nil {
		return 0, err
	}
	size := 4 + fracSize(fsp)
	if len(b) < size {
		return 0, errShort
	}
	micro := readFrac(b[4:], fsp)
	if micro > 999999 {
		return 0, fmt.Errorf("timestamp fraction %d out of range", micro)
	}
	*v = Value{Kind: KindTimestamp, N: int64(binary.BigEndian.Uint32(b)), Micro: uint32(micro), Prec: uint8(fsp)}
	return size, nil
}

func decodeDateTime2(v *Value, c *Column, b []byte) (int, error) {
	fsp := c.Fsp()
	if err := checkFsp(fsp); err != nil {
		return 0, err
	}
	size := 5 + fracSize(fsp)
	if len(b) < size {
		return 0, errShort
	}
	raw := uint64(b[0])<<32 | uint64(binary.BigEndian.Uint32(b[1:]))
	n := int64(raw) - 0x8000000000
	if raw == 0 {
		n = 0 // an all-zero image is read as the zero datetime
	}
	if n < 0 {
		return 0, fmt.Errorf("negative datetime")
	}
	ymd, hms := n>>17, n&(1<<17-1)
	ym := ymd >> 5
	year, month, day := int(ym/13), int(ym%13), int(ymd&31)
	hour, minute, second := int(hms>>12), int(hms>>6&63), int(hms&63)
	micro := readFrac(b[5:], fsp)
	if err := checkDateTime(year, month, day, hour, minute, second, micro); err != nil {
		return 0, err
	}
	*v = Value{Kind: KindDateTime, Prec: uint8(fsp), Micro: uint32(micro),
		N: packTemporal(year, month, day, hour, minute, second)}
	return size, nil
}

func decodeTime2(v *Value, c *Column, b []byte) (int, error) {
	fsp := c.Fsp()
	if err := checkFsp(fsp); err != nil {
		return 0, err
	}
	size := 3 + fracSize(fsp)
	if len(b) < size {
		return 0, errShort
	}
	// The whole value (integer part and fraction) is one big-endian number
	// offset so that it sorts; work in microseconds to undo it exactly.
	var packed int64 // (intpart << 24) | micro, signed
	intpart := int64(uint32(b[0])<<16|uint32(b[1])<<8|uint32(b[2])) - 0x800000
	switch fracSize(fsp) {
	case 0:
		packed = intpart << 24
	case 1:
		frac := int64(b[3])
		if intpart < 0 && frac != 0 {
			intpart++
			frac -= 0x100
		}
		packed = intpart<<24 + frac*10000
	case 2:
		frac := int64(binary.BigEndian.Uint16(b[3:]))
		if intpart < 0 && frac != 0 {
			intpart++
			frac -= 0x10000
		}
		packed = intpart<<24 + frac*100
	case 3:
		all := int64(uint64(b[0])<<40|uint64(b[1])<<32|uint64(binary.BigEndian.Uint32(b[2:]))) - 0x800000000000
		packed = all
	}
	neg := packed < 0
	if neg {
		packed = -packed
	}
	hms := packed >> 24
	micro := packed & 0xffffff
	if hms >= 1<<22 {
		return 0, fmt.Errorf("time bits 0x%x out of range", hms)
	}
	if err := checkTime(int(hms>>12&0x3ff), int(hms>>6&63), int(hms&63), int(micro)); err != nil {
		return 0, err
	}
	*v = Value{Kind: KindTime, Neg: neg, Prec: uint8(fsp), Micro: uint32(micro),
		N: packTemporal(0, 0, 0, int(hms>>12&0x3ff), int(hms>>6&63), int(hms&63))}
	return size, nil
}

// float helpers used by tests and the applier.
func float32FromBits(n int64) float32 { return math.Float32frombits(uint32(n)) }
