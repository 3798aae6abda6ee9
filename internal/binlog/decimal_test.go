package binlog

import (
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// encodeDecimal is the reference encoder for the binary DECIMAL layout,
// written from the rules (not from the decoder): digits in groups of 9 as
// 4 big-endian bytes, leftover groups in digitBytes bytes (the integer
// part's leftover first, the fraction's last), the top bit of the first
// byte set for non-negative values, every byte inverted for negative ones.
// s is "[-]int[.frac]" with at most prec-scale integer digits and exactly
// scale fraction digits.
func encodeDecimal(s string, prec, scale int) []byte {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	ip, fp, _ := strings.Cut(s, ".")
	ip = strings.TrimLeft(ip, "0")
	intg := prec - scale
	ip = strings.Repeat("0", intg-len(ip)) + ip
	fp += strings.Repeat("0", scale-len(fp))
	var out []byte
	group := func(digits string, nbytes int) {
		v, _ := strconv.ParseUint(digits, 10, 64)
		var buf [8]byte
		binary.BigEndian.PutUint64(buf[:], v)
		out = append(out, buf[8-nbytes:]...)
	}
	lead := intg % digitsPerGroup
	if lead > 0 {
		group(ip[:lead], digitBytes[lead])
	}
	for i := lead; i < intg; i += digitsPerGroup {
		group(ip[i:i+digitsPerGroup], 4)
	}
	for i := 0; i+digitsPerGroup <= scale; i += digitsPerGroup {
		group(fp[i:i+digitsPerGroup], 4)
	}
	if rest := scale % digitsPerGroup; rest > 0 {
		group(fp[scale-rest:], digitBytes[rest])
	}
	if neg {
		for i := range out {
			out[i] ^= 0xff
		}
	}
	out[0] ^= 0x80
	return out
}

func TestDecimalFormatting(t *testing.T) {
	tests := []struct {
		in          string
		prec, scale int
		want        string
	}{
		{"0", 1, 0, "0"},
		{"9", 1, 0, "9"},
		{"-9", 1, 0, "-9"},
		{"99999999.99", 10, 2, "99999999.99"},
		{"-0.5", 10, 2, "-0.50"},
		{"0.01", 10, 2, "0.01"},
		{"-999999999.999999999", 18, 9, "-999999999.999999999"},
		{"0.000000001", 18, 9, "0.000000001"},
		{"-0.000000001", 18, 9, "-0.000000001"},
		{"1", 27, 9, "1.000000000"},
		{"123456789012345678.123456789", 27, 9, "123456789012345678.123456789"},
		{"0.12345678901234567890123456789012345678", 38, 38, "0.12345678901234567890123456789012345678"},
		{"-0.00000000000000000000000000000000000001", 38, 38, "-0.00000000000000000000000000000000000001"},
		{strings.Repeat("9", 65), 65, 0, strings.Repeat("9", 65)},
		{"-" + strings.Repeat("9", 35) + "." + strings.Repeat("9", 30), 65, 30, "-" + strings.Repeat("9", 35) + "." + strings.Repeat("9", 30)},
		{"1000000000", 10, 0, "1000000000"},
		{"100000000.1", 10, 1, "100000000.1"},
		{"-123456789.000000001", 65, 38, "-123456789.00000000100000000000000000000000000000"},
		{"0", 9, 9, "0.000000000"},
	}
	for _, tt := range tests {
		b := encodeDecimal(tt.in, tt.prec, tt.scale)
		if len(b) != DecimalSize(tt.prec, tt.scale) {
			t.Fatalf("%s (%d,%d): reference encoder wrote %d bytes, DecimalSize %d", tt.in, tt.prec, tt.scale, len(b), DecimalSize(tt.prec, tt.scale))
		}
		got, err := AppendDecimal(nil, b, tt.prec, tt.scale)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s (%d,%d): got %q, %v; want %q", tt.in, tt.prec, tt.scale, got, err, tt.want)
		}
	}
}

// randomDecimal returns a canonical decimal text of at most prec-scale
// integer digits and exactly scale fraction digits.
func randomDecimal(r *rand.Rand, prec, scale int) string {
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteByte('-')
	}
	n := r.IntN(prec - scale + 1)
	if n == 0 {
		b.WriteByte('0')
	}
	for i := 0; i < n; i++ {
		d := r.IntN(10)
		if i == 0 && d == 0 {
			d = 1
		}
		b.WriteByte(byte('0' + d))
	}
	if scale > 0 {
		b.WriteByte('.')
		for i := 0; i < scale; i++ {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
	}
	s := b.String()
	if strings.Trim(s, "-0.") == "" {
		s = strings.TrimPrefix(s, "-") // no negative zero in canonical text
	}
	return s
}

func TestDecimalRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for prec := 1; prec <= 65; prec++ {
		for scale := 0; scale <= prec && scale <= 38; scale++ {
			for i := 0; i < 20; i++ {
				s := randomDecimal(r, prec, scale)
				got, err := AppendDecimal(nil, encodeDecimal(s, prec, scale), prec, scale)
				if err != nil || string(got) != s {
					t.Fatalf("(%d,%d) %s: got %q, %v", prec, scale, s, got, err)
				}
			}
		}
	}
}

func TestDecimalRejects(t *testing.T) {
	good := encodeDecimal("1.5", 10, 2)
	tests := []struct {
		name        string
		b           []byte
		prec, scale int
	}{
		{"short", good[:3], 10, 2},
		{"precision 0", good, 0, 0},
		{"precision 66", make([]byte, 40), 66, 0},
		{"scale over precision", good, 2, 3},
		{"leading group over its digits", []byte{0x80 | 0x7f, 0xff, 0, 0, 0, 0}, 10, 2},
		{"full group over 9 digits", []byte{0x80 ^ 0x80 | 0xff, 0xff, 0xff, 0xff}, 9, 0},
	}
	for _, tt := range tests {
		if out, err := AppendDecimal(nil, tt.b, tt.prec, tt.scale); err == nil {
			t.Errorf("%s: accepted as %q", tt.name, out)
		}
	}
}

func FuzzDecimal(f *testing.F) {
	f.Add(encodeDecimal("-12.34", 10, 2), uint8(10), uint8(2))
	f.Add(encodeDecimal(strings.Repeat("9", 65), 65, 0), uint8(65), uint8(0))
	f.Add(encodeDecimal("0.5", 38, 38), uint8(38), uint8(38))
	f.Fuzz(func(t *testing.T, b []byte, prec, scale uint8) {
		out, err := AppendDecimal(nil, b, int(prec), int(scale))
		if err != nil {
			return
		}
		// Whatever decodes must encode back to the same bytes: the text is
		// exact and the layout has one encoding per value (and sign).
		size := DecimalSize(int(prec), int(scale))
		if re := encodeDecimal(string(out), int(prec), int(scale)); string(re) != string(b[:size]) {
			t.Fatalf("(%d,%d) %x -> %s -> %x", prec, scale, b[:size], out, re)
		}
	})
}
