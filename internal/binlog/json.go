package binlog

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// MySQL binary JSON value types.
const (
	jsonSmallObject = 0
	jsonLargeObject = 1
	jsonSmallArray  = 2
	jsonLargeArray  = 3
	jsonLiteral     = 4
	jsonInt16       = 5
	jsonUint16      = 6
	jsonInt32       = 7
	jsonUint32      = 8
	jsonInt64       = 9
	jsonUint64      = 10
	jsonDouble      = 11
	jsonString      = 12
	jsonOpaque      = 15
)

const maxJSONDepth = 100

// Bounds on the work of one document. Entries of objects and arrays point
// at their values by offset, and nothing in the format forbids two entries
// pointing at the same value: a crafted 225-byte document whose entries
// share offsets decodes to 25 MB, and a few more bytes to gigabytes. MySQL
// itself never shares values, so a legitimate document visits each value
// once: every value but the root has an entry of at least 3 bytes, hence
// at most len+1 values. Its text is at most about 6 times its size: the
// worst cases are control characters in strings (1 byte → \u00XX),
// doubles (8 bytes + a 3-byte entry → 24 digits and a separator), opaque
// values (5 bytes → "base64:type15:") and literals (a 3-byte entry →
// "false, "). The text bound adds a margin (8×) and a floor so that tiny
// documents, whose constant overheads dominate, are never refused.
const (
	jsonExpansion = 8
	jsonMinText   = 64 << 10
)

var errJSON = errors.New("malformed binary JSON")

// jsonDecoder holds the bounds of one AppendJSON call.
type jsonDecoder struct {
	size     int // bytes of the binary document
	start    int // len(dst) when decoding began
	nodes    int // values visited so far
	maxNodes int
	maxText  int
}

// AppendJSON converts a MySQL binary JSON document to JSON text. An empty
// document is JSON null, as the server treats it. A document whose text
// or number of values goes beyond what its size allows (see jsonExpansion)
// is refused: it can only have been crafted or corrupted.
func AppendJSON(dst, b []byte) ([]byte, error) {
	if len(b) == 0 {
		return append(dst, "null"...), nil
	}
	d := &jsonDecoder{size: len(b), start: len(dst), maxNodes: len(b) + 1,
		maxText: max(jsonMinText, jsonExpansion*len(b))}
	return d.appendValue(dst, b[0], b[1:], 0)
}

// visit counts one value and checks both bounds before it is formatted;
// dst is the text so far.
func (d *jsonDecoder) visit(dst []byte) error {
	d.nodes++
	if d.nodes > d.maxNodes {
		return fmt.Errorf("%w: a %d-byte document expands beyond %d values (entries share offsets)",
			errJSON, d.size, d.maxNodes)
	}
	return d.checkText(dst)
}

func (d *jsonDecoder) checkText(dst []byte) error {
	if len(dst)-d.start > d.maxText {
		return fmt.Errorf("%w: a %d-byte document expands beyond %d bytes of text", errJSON, d.size, d.maxText)
	}
	return nil
}

func (d *jsonDecoder) appendValue(dst []byte, typ byte, b []byte, depth int) ([]byte, error) {
	// depth counts like JSON_DEPTH minus one: MySQL refuses documents
	// deeper than 100, so a value at depth 100 cannot be legitimate.
	if depth >= maxJSONDepth {
		return dst, fmt.Errorf("%w: nested deeper than %d", errJSON, maxJSONDepth)
	}
	if err := d.visit(dst); err != nil {
		return dst, err
	}
	switch typ {
	case jsonSmallObject, jsonLargeObject:
		return d.appendContainer(dst, b, typ == jsonLargeObject, true, depth)
	case jsonSmallArray, jsonLargeArray:
		return d.appendContainer(dst, b, typ == jsonLargeArray, false, depth)
	case jsonLiteral:
		if len(b) < 1 {
			return dst, errJSON
		}
		switch b[0] {
		case 0:
			return append(dst, "null"...), nil
		case 1:
			return append(dst, "true"...), nil
		case 2:
			return append(dst, "false"...), nil
		}
		return dst, fmt.Errorf("%w: literal %d", errJSON, b[0])
	case jsonInt16, jsonUint16, jsonInt32, jsonUint32, jsonInt64, jsonUint64:
		return appendJSONInt(dst, typ, b)
	case jsonDouble:
		if len(b) < 8 {
			return dst, errJSON
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(b))
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return dst, fmt.Errorf("%w: non-finite double", errJSON)
		}
		return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
	case jsonString:
		n, size, err := jsonVarLen(b)
		if err != nil || n > len(b)-size {
			return dst, errJSON
		}
		return appendJSONString(dst, b[size:size+n]), nil
	case jsonOpaque:
		return appendJSONOpaque(dst, b)
	}
	return dst, fmt.Errorf("%w: value type %d", errJSON, typ)
}

func appendJSONInt(dst []byte, typ byte, b []byte) ([]byte, error) {
	n := 8
	switch typ {
	case jsonInt16, jsonUint16:
		n = 2
	case jsonInt32, jsonUint32:
		n = 4
	}
	if len(b) < n {
		return dst, errJSON
	}
	switch typ {
	case jsonInt16:
		return strconv.AppendInt(dst, int64(int16(binary.LittleEndian.Uint16(b))), 10), nil
	case jsonUint16:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint16(b)), 10), nil
	case jsonInt32:
		return strconv.AppendInt(dst, int64(int32(binary.LittleEndian.Uint32(b))), 10), nil
	case jsonUint32:
		return strconv.AppendUint(dst, uint64(binary.LittleEndian.Uint32(b)), 10), nil
	case jsonInt64:
		return strconv.AppendInt(dst, int64(binary.LittleEndian.Uint64(b)), 10), nil
	}
	return strconv.AppendUint(dst, binary.LittleEndian.Uint64(b), 10), nil
}

// appendContainer formats an object or array whose header (count, size)
// starts b; offsets inside are relative to b.
func (d *jsonDecoder) appendContainer(dst, b []byte, large, object bool, depth int) ([]byte, error) {
	w := 2
	if large {
		w = 4
	}
	if len(b) < 2*w {
		return dst, errJSON
	}
	count, size := readJSONSize(b, w), readJSONSize(b[w:], w)
	if size > len(b) || count < 0 {
		return dst, fmt.Errorf("%w: container of %d bytes in %d", errJSON, size, len(b))
	}
	b = b[:size]
	keyEntry, valEntry := 0, 1+w
	if object {
		keyEntry = w + 2
	}
	hdr := 2*w + count*(keyEntry+valEntry)
	if count > size || hdr > size {
		return dst, fmt.Errorf("%w: %d entries do not fit", errJSON, count)
	}
	open, close := byte('['), byte(']')
	if object {
		open, close = '{', '}'
	}
	dst = append(dst, open)
	for i := 0; i < count; i++ {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		if object {
			ke := b[2*w+i*keyEntry:]
			off, klen := readJSONSize(ke, w), int(binary.LittleEndian.Uint16(ke[w:]))
			if off < hdr || off+klen > size {
				return dst, fmt.Errorf("%w: key out of bounds", errJSON)
			}
			dst = appendJSONString(dst, b[off:off+klen])
			dst = append(dst, ": "...)
		}
		ve := b[2*w+count*keyEntry+i*valEntry:]
		var err error
		if dst, err = d.appendEntry(dst, b, ve, w, large, depth); err != nil {
			return dst, err
		}
		// A value's own text is checked when the next one starts; the
		// last one of a long array of shared containers is checked here.
		if err := d.checkText(dst); err != nil {
			return dst, err
		}
	}
	return append(dst, close), nil
}

// appendEntry formats one value entry: inlined small scalars, or an
// offset into the container.
func (d *jsonDecoder) appendEntry(dst, container, entry []byte, w int, large bool, depth int) ([]byte, error) {
	typ := entry[0]
	switch {
	case typ == jsonLiteral || typ == jsonInt16 || typ == jsonUint16 || large && (typ == jsonInt32 || typ == jsonUint32):
		return d.appendValue(dst, typ, entry[1:1+w], depth+1)
	}
	off := readJSONSize(entry[1:], w)
	if off >= len(container) {
		return dst, fmt.Errorf("%w: value offset %d out of %d", errJSON, off, len(container))
	}
	return d.appendValue(dst, typ, container[off:], depth+1)
}

func readJSONSize(b []byte, w int) int {
	if w == 2 {
		return int(binary.LittleEndian.Uint16(b))
	}
	return int(binary.LittleEndian.Uint32(b))
}

// jsonVarLen reads the 7-bits-per-byte length of strings and opaque values.
func jsonVarLen(b []byte) (n, size int, err error) {
	for i := 0; i < 5 && i < len(b); i++ {
		n |= int(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return n, i + 1, nil
		}
	}
	return 0, 0, errJSON
}

const hexDigits = "0123456789abcdef"

func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	for len(s) > 0 {
		r, size := utf8.DecodeRune(s)
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[r>>4], hexDigits[r&15])
		default:
			dst = append(dst, s[:size]...)
		}
		s = s[size:]
	}
	return append(dst, '"')
}

// appendJSONOpaque formats opaque values: decimals as numbers, temporals as
// quoted strings, anything else as MySQL's base64 form.
func appendJSONOpaque(dst, b []byte) ([]byte, error) {
	if len(b) < 1 {
		return dst, errJSON
	}
	mtype := ColumnType(b[0])
	n, size, err := jsonVarLen(b[1:])
	if err != nil || n > len(b)-1-size {
		return dst, errJSON
	}
	data := b[1+size : 1+size+n]
	switch mtype {
	case TypeNewDecimal:
		if len(data) < 2 {
			return dst, errJSON
		}
		return AppendDecimal(dst, data[2:], int(data[0]), int(data[1]))
	case TypeDate, TypeDateTime, TypeTimestamp, TypeTime:
		if len(data) < 8 {
			return dst, errJSON
		}
		return appendJSONTemporal(dst, mtype, int64(binary.LittleEndian.Uint64(data))), nil
	}
	dst = append(dst, `"base64:type`...)
	dst = strconv.AppendInt(dst, int64(mtype), 10)
	dst = append(dst, ':')
	dst = base64.StdEncoding.AppendEncode(dst, data)
	return append(dst, '"'), nil
}

// appendJSONTemporal formats MySQL's packed temporal (int part << 24 | µs).
func appendJSONTemporal(dst []byte, t ColumnType, packed int64) []byte {
	neg := packed < 0
	if neg {
		packed = -packed
	}
	v := Value{Micro: uint32(packed % (1 << 24)), Prec: 6, Neg: neg}
	ip := packed >> 24
	if t == TypeTime {
		v.Kind = KindTime
		v.N = packTemporal(0, 0, 0, int(ip>>12&0x3ff), int(ip>>6&63), int(ip&63))
	} else {
		ymd, hms := ip>>17, ip&(1<<17-1)
		ym := ymd >> 5
		v.Kind = KindDateTime
		if t == TypeDate {
			v.Kind, v.Prec = KindDate, 0
		}
		v.N = packTemporal(int(ym/13), int(ym%13), int(ymd&31), int(hms>>12), int(hms>>6&63), int(hms&63))
	}
	dst = append(dst, '"')
	dst = v.appendTemporal(dst)
	return append(dst, '"')
}
