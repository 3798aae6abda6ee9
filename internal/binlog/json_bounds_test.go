package binlog

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

// sharedOffsetsDoc builds a document no MySQL server writes: depth levels of
// small arrays whose fanout entries all point at the same child array, so
// the text has fanout^depth empty arrays. With fanout 6 and depth 10 it is
// 225 bytes and would decode to about 240 MB (60 million "[]").
func sharedOffsetsDoc(fanout, depth int) []byte {
	body := []byte{0, 0, 4, 0} // the innermost empty array: count 0, size 4
	for range depth {
		hdr := 4 + 3*fanout
		lvl := binary.LittleEndian.AppendUint16(nil, uint16(fanout))
		lvl = binary.LittleEndian.AppendUint16(lvl, uint16(hdr+len(body)))
		for range fanout {
			lvl = append(lvl, jsonSmallArray)
			lvl = binary.LittleEndian.AppendUint16(lvl, uint16(hdr)) // every entry: the same child
		}
		body = append(lvl, body...)
	}
	return append([]byte{jsonSmallArray}, body...)
}

// sharedStringDoc is an array of n entries all pointing at one string of
// size bytes: few values, but n×size bytes of text.
func sharedStringDoc(n, size int) []byte {
	hdr := 8 + 5*n
	str := appendJSONVarLen(nil, size)
	str = append(str, strings.Repeat("x", size)...)
	b := binary.LittleEndian.AppendUint32([]byte{jsonLargeArray}, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(hdr+len(str)))
	for range n {
		b = append(b, jsonString)
		b = binary.LittleEndian.AppendUint32(b, uint32(hdr))
	}
	return append(b, str...)
}

func TestJSONExpansionBounded(t *testing.T) {
	crafted := sharedOffsetsDoc(6, 10)
	if len(crafted) != 225 {
		t.Fatalf("crafted document is %d bytes, want 225", len(crafted))
	}
	// The same construction small enough to be legal text shows the
	// document is well-formed apart from the sharing.
	if out, err := AppendJSON(nil, sharedOffsetsDoc(1, 3)); err != nil || string(out) != "[[[[]]]]" {
		t.Fatalf("unshared nesting: %s, %v", out, err)
	}
	cases := []struct {
		name string
		doc  []byte
		want string
	}{
		{"entries share containers", crafted, "a 225-byte document expands beyond 226 values"},
		{"entries share a large string", sharedStringDoc(1000, 60000), "a 65012-byte document expands beyond 520096 bytes of text"},
		{"wide sharing, shallow", sharedOffsetsDoc(1000, 2), "expands beyond"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			out, err := AppendJSON(nil, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			// Refused after bounded work: the text produced before the
			// error stays within the bound plus one value.
			if limit := max(jsonMinText, jsonExpansion*len(c.doc)) + 6*len(c.doc) + 16; len(out) > limit {
				t.Errorf("%d bytes of text before the error, bound %d", len(out), limit)
			}
			t.Logf("%s: refused in %v: %v", c.name, time.Since(start), err)
		})
	}
}

// TestJSONLegitimateExpansion decodes documents built like MySQL builds
// them whose text is as large as possible relative to their size: each
// must be accepted, with a margin under the bound.
func TestJSONLegitimateExpansion(t *testing.T) {
	repeat := func(n int, v any) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	keys := jsonObj{}
	for i := range 3000 {
		keys = append(keys, jsonKV{string(rune(i%31 + 1)), nil}) // control-character keys
	}
	cases := []struct {
		name string
		v    any
	}{
		{"control characters", strings.Repeat("\x01", 60000)},
		{"quotes and backslashes", strings.Repeat(`"\`, 30000)},
		{"doubles", repeat(2000, -2.2250738585072014e-308)},
		{"int16 inlined", repeat(5000, int64(math.MinInt16))},
		{"false inlined", repeat(5000, false)},
		{"int64", repeat(2000, int64(math.MinInt64))},
		{"empty opaque", repeat(3000, jsonOpaqueV{TypeVarString, nil})},
		{"temporal opaque", repeat(2000, opaqueInt64(TypeDateTime, packedDateTime(2024, 2, 29, 12, 34, 56, 789012)))},
		{"empty strings", repeat(5000, "")},
		{"empty arrays", repeat(5000, []any{})},
		{"control-character keys", keys},
		{"large array of false", jsonLarge{repeat(20000, false)}},
		{"tiny opaque", jsonOpaqueV{TypeVarString, nil}},
		{"deep nesting", func() any {
			var v any = []any{}
			for range 99 {
				v = []any{v}
			}
			return v
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc := encodeJSONDoc(c.v)
			out, err := AppendJSON(nil, doc)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if !strings.Contains(c.name, "opaque") && !json.Valid(out) {
				t.Fatalf("invalid JSON %q", out)
			}
			ratio := float64(len(out)) / float64(len(doc))
			if len(doc) > 1000 && ratio > jsonExpansion*0.8 {
				t.Errorf("%d bytes → %d (%.1f×): too close to the %d× bound", len(doc), len(out), ratio, jsonExpansion)
			}
			t.Logf("%d bytes → %d (%.2f×)", len(doc), len(out), ratio)
		})
	}
}
