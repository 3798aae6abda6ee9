package binlog

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// A reference encoder for MySQL's binary JSON, written from the layout
// (MySQL sql-common/json_binary.cc as summarised in the protocol notes):
// used to build fixtures, since no MySQL server is available here.

type (
	jsonKV      struct{ k, v any }
	jsonObj     []jsonKV
	jsonLarge   struct{ v any } // the container in its large (4-byte) form
	jsonU16     uint16
	jsonU32     uint32
	jsonOpaqueV struct {
		typ  ColumnType
		data []byte
	}
)

func encodeJSONDoc(v any) []byte {
	typ, body := encJSON(v)
	return append([]byte{typ}, body...)
}

func appendJSONVarLen(b []byte, n int) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

func encJSON(v any) (byte, []byte) {
	switch x := v.(type) {
	case nil:
		return jsonLiteral, []byte{0}
	case bool:
		if x {
			return jsonLiteral, []byte{1}
		}
		return jsonLiteral, []byte{2}
	case int64:
		switch {
		case x >= math.MinInt16 && x <= math.MaxInt16:
			return jsonInt16, binary.LittleEndian.AppendUint16(nil, uint16(x))
		case x >= math.MinInt32 && x <= math.MaxInt32:
			return jsonInt32, binary.LittleEndian.AppendUint32(nil, uint32(x))
		}
		return jsonInt64, binary.LittleEndian.AppendUint64(nil, uint64(x))
	case jsonU16:
		return jsonUint16, binary.LittleEndian.AppendUint16(nil, uint16(x))
	case jsonU32:
		return jsonUint32, binary.LittleEndian.AppendUint32(nil, uint32(x))
	case uint64:
		return jsonUint64, binary.LittleEndian.AppendUint64(nil, x)
	case float64:
		return jsonDouble, binary.LittleEndian.AppendUint64(nil, math.Float64bits(x))
	case string:
		return jsonString, append(appendJSONVarLen(nil, len(x)), x...)
	case jsonOpaqueV:
		return jsonOpaque, append(appendJSONVarLen([]byte{byte(x.typ)}, len(x.data)), x.data...)
	case jsonObj:
		return encContainer(x, true, false)
	case []any:
		return encContainer(x, false, false)
	case jsonLarge:
		switch y := x.v.(type) {
		case jsonObj:
			return encContainer(y, true, true)
		case []any:
			return encContainer(y, false, true)
		}
	}
	panic("encJSON: unsupported value")
}

func encContainer(v any, object, large bool) (byte, []byte) {
	var keys []string
	var vals []any
	if object {
		for _, kv := range v.(jsonObj) {
			keys = append(keys, kv.k.(string))
			vals = append(vals, kv.v)
		}
	} else {
		vals = v.([]any)
	}
	w, typ := 2, byte(jsonSmallArray)
	if large {
		w, typ = 4, jsonLargeArray
	}
	if object {
		typ -= 2
	}
	put := func(b []byte, n int) []byte {
		if w == 2 {
			return binary.LittleEndian.AppendUint16(b, uint16(n))
		}
		return binary.LittleEndian.AppendUint32(b, uint32(n))
	}
	n := len(vals)
	hdr := 2*w + n*(1+w)
	if object {
		hdr += n * (w + 2)
	}
	var keyEntries, valEntries, tail []byte
	off := hdr
	for _, k := range keys {
		keyEntries = binary.LittleEndian.AppendUint16(put(keyEntries, off), uint16(len(k)))
		tail = append(tail, k...)
		off += len(k)
	}
	for _, x := range vals {
		t, data := encJSON(x)
		valEntries = append(valEntries, t)
		inline := t == jsonLiteral || t == jsonInt16 || t == jsonUint16 || large && (t == jsonInt32 || t == jsonUint32)
		if inline {
			slot := make([]byte, w)
			copy(slot, data)
			valEntries = append(valEntries, slot...)
			continue
		}
		valEntries = put(valEntries, off)
		tail = append(tail, data...)
		off += len(data)
	}
	body := put(put(nil, n), off)
	body = append(append(append(body, keyEntries...), valEntries...), tail...)
	return typ, body
}

// packedDateTime is MySQL's packed temporal: the DATETIME2 bit layout
// shifted left 24 bits, plus microseconds; negative for negative TIMEs.
func packedDateTime(y, mo, d, h, mi, s, us int64) int64 {
	ymd := (y*13+mo)<<5 | d
	hms := h<<12 | mi<<6 | s
	return (ymd<<17|hms)<<24 + us
}

func opaqueInt64(typ ColumnType, v int64) jsonOpaqueV {
	return jsonOpaqueV{typ, binary.LittleEndian.AppendUint64(nil, uint64(v))}
}

func jsonCases() []struct {
	name string
	v    any
	want string
} {
	long := strings.Repeat("é", 100) // 200 bytes: a 2-byte length
	dec := append([]byte{5, 3}, encodeDecimal("-12.345", 5, 3)...)
	return []struct {
		name string
		v    any
		want string
	}{
		{"null", nil, `null`},
		{"true", true, `true`},
		{"int16", int64(-5), `-5`},
		{"int32", int64(-100000), `-100000`},
		{"int64", int64(math.MinInt64), `-9223372036854775808`},
		{"uint16", jsonU16(65535), `65535`},
		{"uint32", jsonU32(4294967295), `4294967295`},
		{"uint64", uint64(math.MaxUint64), `18446744073709551615`},
		{"double", 1.5, `1.5`},
		{"string with escapes", "q\"b\\n\n\t\x01é", `"q\"b\\n\n\t\u0001é"`},
		{"long string", long, `"` + long + `"`},
		{"small object inlined", jsonObj{{"a", int64(1)}, {"b", true}, {"c", nil}}, `{"a": 1, "b": true, "c": null}`},
		{"small object, int32 out of line", jsonObj{{"n", int64(100000)}, {"u", jsonU32(7)}}, `{"n": 100000, "u": 7}`},
		{"large object, int32 inlined", jsonLarge{jsonObj{{"n", int64(100000)}, {"u", jsonU32(7)}, {"s", "x"}}}, `{"n": 100000, "u": 7, "s": "x"}`},
		{"large array", jsonLarge{[]any{int64(1), "two", []any{}, jsonObj{}}}, `[1, "two", [], {}]`},
		{"nested", jsonObj{{"k", []any{int64(1), true, nil, "s", 3.5, jsonObj{{"x", []any{[]any{}}}}}}}, `{"k": [1, true, null, "s", 3.5, {"x": [[]]}]}`},
		{"opaque decimal", dec, ``}, // replaced below
		{"opaque datetime", opaqueInt64(TypeDateTime, packedDateTime(2024, 2, 29, 12, 34, 56, 789012)), `"2024-02-29 12:34:56.789012"`},
		{"opaque timestamp", opaqueInt64(TypeTimestamp, packedDateTime(1970, 1, 1, 0, 0, 1, 0)), `"1970-01-01 00:00:01.000000"`},
		{"opaque date", opaqueInt64(TypeDate, packedDateTime(2024, 2, 29, 0, 0, 0, 0)), `"2024-02-29"`},
		{"opaque negative time", opaqueInt64(TypeTime, -((12<<12|34<<6|56)<<24 + 500000)), `"-12:34:56.500000"`},
		{"opaque blob", jsonOpaqueV{TypeBlob, []byte{1, 2}}, `"base64:type252:AQI="`},
	}
}

func TestJSONDecoding(t *testing.T) {
	for _, tt := range jsonCases() {
		v := tt.v
		want := tt.want
		if b, ok := v.([]byte); ok {
			v, want = jsonOpaqueV{TypeNewDecimal, b}, `-12.345`
		}
		doc := encodeJSONDoc(v)
		got, err := AppendJSON(nil, doc)
		if err != nil || string(got) != want {
			t.Errorf("%s: got %s, %v; want %s", tt.name, got, err, want)
			continue
		}
		if !strings.Contains(tt.name, "opaque") && !json.Valid(got) {
			t.Errorf("%s: %s is not valid JSON", tt.name, got)
		}
	}
}

func TestJSONEmptyDocumentIsNull(t *testing.T) {
	if got, err := AppendJSON(nil, nil); err != nil || string(got) != "null" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestJSONDepthLimit(t *testing.T) {
	nest := func(n int, inner any) any {
		v := inner
		for i := 0; i < n; i++ {
			v = []any{v}
		}
		return v
	}
	// MySQL refuses documents deeper than 100 (JSON_DEPTH('[]') = 1).
	if _, err := AppendJSON(nil, encodeJSONDoc(nest(99, []any{}))); err != nil {
		t.Fatalf("depth 100: %v", err)
	}
	if _, err := AppendJSON(nil, encodeJSONDoc(nest(100, []any{}))); err == nil {
		t.Fatal("depth 101 accepted")
	}
	if _, err := AppendJSON(nil, encodeJSONDoc(nest(100, int64(1)))); err == nil {
		t.Fatal("scalar at depth 101 accepted")
	}
}

func TestJSONMalformed(t *testing.T) {
	good := encodeJSONDoc(jsonObj{{"key", "value"}, {"n", int64(100000)}})
	for i := 1; i < len(good); i++ {
		if _, err := AppendJSON(nil, good[:i]); err == nil {
			t.Errorf("truncated to %d bytes: accepted", i)
		}
	}
	for _, b := range [][]byte{{99}, {jsonLiteral, 3}, {jsonString, 0x80, 0x80, 0x80, 0x80, 0x80}, {jsonDouble, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f}} {
		if out, err := AppendJSON(nil, b); err == nil {
			t.Errorf("%x: accepted as %s", b, out)
		}
	}
}

func FuzzJSON(f *testing.F) {
	for _, tt := range jsonCases() {
		if _, ok := tt.v.([]byte); !ok {
			f.Add(encodeJSONDoc(tt.v))
		}
	}
	// Entries sharing offsets: exponential text unless bounded.
	f.Add(sharedOffsetsDoc(6, 10))
	f.Add(sharedStringDoc(10, 100))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := AppendJSON(nil, b)
		if limit := max(jsonMinText, jsonExpansion*len(b)) + 6*len(b) + 16; len(out) > limit {
			t.Fatalf("%d-byte document: %d bytes of text (error %v), bound %d", len(b), len(out), err, limit)
		}
		if err != nil {
			return
		}
		// Whatever the decoder accepts must be JSON text (opaque values
		// print as numbers or strings).
		if !json.Valid(out) {
			t.Fatalf("%x decoded to invalid JSON %q", b, out)
		}
	})
}
