package binlog

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Reference encoders for the fractional temporal types, written from
// MySQL's my_time_packed_to_binary / my_datetime_packed_to_binary /
// my_timestamp_to_binary rules: a packed value (int part << 24) + µs,
// signed for TIME, stored big-endian with an offset so that it sorts.

func putBE(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// appendFrac stores the fraction part of a packed value as C does: the
// remainder keeps the sign of the dividend, then the byte is truncated.
func appendFrac(b []byte, packed int64, fsp int) []byte {
	frac := packed % (1 << 24)
	switch fracSize(fsp) {
	case 1:
		return append(b, byte(int8(frac/10000)))
	case 2:
		return putBE(b, uint64(uint16(int16(frac/100))), 2)
	case 3:
		return putBE(b, uint64(uint32(int32(frac))), 3)
	}
	return b
}

func encodeTime2(packed int64, fsp int) []byte {
	if fracSize(fsp) == 3 {
		return putBE(nil, uint64(packed+0x800000000000), 6)
	}
	b := putBE(nil, uint64((packed>>24)+0x800000), 3)
	return appendFrac(b, packed, fsp)
}

func encodeDateTime2(packed int64, fsp int) []byte {
	b := putBE(nil, uint64((packed>>24)+0x8000000000), 5)
	return appendFrac(b, packed, fsp)
}

// truncFrac cuts µs to fsp digits, as the server does on store.
func truncFrac(us, fsp int) int {
	p := int(math.Pow10(6 - fsp))
	return us / p * p
}

func fracText(us, fsp int) string {
	if fsp == 0 {
		return ""
	}
	return fmt.Sprintf(".%06d", us)[:fsp+1]
}

func TestTime2RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cases := [][4]int{{0, 0, 0, 500000}, {0, 0, 0, 1}, {838, 59, 59, 999999}, {0, 0, 1, 500000}, {1, 2, 3, 456789}, {0, 0, 0, 0}}
	for i := 0; i < 2000; i++ {
		cases = append(cases, [4]int{r.IntN(839), r.IntN(60), r.IntN(60), r.IntN(1000000)})
	}
	for fsp := 0; fsp <= 6; fsp++ {
		for _, c := range cases {
			for _, neg := range []bool{false, true} {
				us := truncFrac(c[3], fsp)
				packed := int64(c[0]<<12|c[1]<<6|c[2])<<24 + int64(us)
				want := fmt.Sprintf("%02d:%02d:%02d%s", c[0], c[1], c[2], fracText(us, fsp))
				if neg && packed != 0 {
					packed, want = -packed, "-"+want
				}
				var v Value
				col := &Column{Type: TypeTime2, Meta: uint16(fsp)}
				b := encodeTime2(packed, fsp)
				if n, err := decodeValue(&v, col, b); err != nil || n != len(b) || v.String() != want {
					t.Fatalf("TIME(%d) %s: bytes %x decoded %q (%d bytes, %v)", fsp, want, b, v.String(), n, err)
				}
			}
		}
	}
}

func TestDateTime2RoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	cases := [][7]int{{0, 0, 0, 0, 0, 0, 0}, {1000, 1, 1, 0, 0, 0, 0}, {9999, 12, 31, 23, 59, 59, 999999}, {2020, 0, 15, 0, 0, 0, 0}, {2020, 2, 0, 10, 0, 0, 500000}}
	for i := 0; i < 2000; i++ {
		cases = append(cases, [7]int{r.IntN(10000), r.IntN(13), r.IntN(32), r.IntN(24), r.IntN(60), r.IntN(60), r.IntN(1000000)})
	}
	for fsp := 0; fsp <= 6; fsp++ {
		for _, c := range cases {
			us := truncFrac(c[6], fsp)
			ymd := int64((c[0]*13+c[1])<<5 | c[2])
			packed := (ymd<<17|int64(c[3]<<12|c[4]<<6|c[5]))<<24 + int64(us)
			want := fmt.Sprintf("%04d-%02d-%02d %02d:%02d:%02d%s", c[0], c[1], c[2], c[3], c[4], c[5], fracText(us, fsp))
			var v Value
			b := encodeDateTime2(packed, fsp)
			if n, err := decodeValue(&v, &Column{Type: TypeDateTime2, Meta: uint16(fsp)}, b); err != nil || n != len(b) || v.String() != want {
				t.Fatalf("DATETIME(%d) %s: bytes %x decoded %q (%v)", fsp, want, b, v.String(), err)
			}
		}
	}
}

func TestTemporalRejectsOutOfRange(t *testing.T) {
	tests := []struct {
		name string
		col  Column
		b    []byte
	}{
		{"datetime minute 60", Column{Type: TypeDateTime2}, encodeDateTime2((int64((2020*13+1)<<5|1)<<17|60<<6)<<24, 0)},
		{"datetime fraction over 99", Column{Type: TypeDateTime2, Meta: 2}, append(encodeDateTime2(0, 0), 200)},
		{"negative datetime", Column{Type: TypeDateTime2}, []byte{0x7f, 0, 0, 0, 0}},
		{"time hour 839", Column{Type: TypeTime2}, encodeTime2(int64(839<<12)<<24, 0)},
		{"time second 60", Column{Type: TypeTime2}, encodeTime2(60<<24, 0)},
		{"timestamp fraction", Column{Type: TypeTimestamp2, Meta: 6}, []byte{0, 0, 0, 1, 0x0f, 0x42, 0x40}},
		{"date month 15", Column{Type: TypeDate}, []byte{0xe0, 0x01, 0}},
		{"fsp 7", Column{Type: TypeTime2, Meta: 7}, make([]byte, 8)},
	}
	for _, tt := range tests {
		var v Value
		if _, err := decodeValue(&v, &tt.col, tt.b); err == nil {
			t.Errorf("%s: accepted as %s", tt.name, v.String())
		}
	}
}

func TestAppendText(t *testing.T) {
	dec := encodeDecimal("-0.5", 4, 2)
	tests := []struct {
		name string
		col  Column
		b    []byte
		want string
	}{
		{"tinyint", Column{Type: TypeTiny}, []byte{0xff}, "-1"},
		{"tinyint unsigned", Column{Type: TypeTiny, Unsigned: true}, []byte{0xff}, "255"},
		{"mediumint", Column{Type: TypeInt24}, []byte{0, 0, 0x80}, "-8388608"},
		{"bigint unsigned", Column{Type: TypeLongLong, Unsigned: true}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "18446744073709551615"},
		{"year zero", Column{Type: TypeYear}, []byte{0}, "0000"},
		{"year", Column{Type: TypeYear}, []byte{255}, "2155"},
		{"float", Column{Type: TypeFloat, Meta: 4}, binary.LittleEndian.AppendUint32(nil, math.Float32bits(0.1)), "0.1"},
		{"double", Column{Type: TypeDouble, Meta: 8}, binary.LittleEndian.AppendUint64(nil, math.Float64bits(-2.5e-300)), "-2.5e-300"},
		{"decimal", Column{Type: TypeNewDecimal, Meta: 4<<8 | 2}, dec, "-0.50"},
		{"date zero", Column{Type: TypeDate}, []byte{0, 0, 0}, "0000-00-00"},
		{"timestamp zero", Column{Type: TypeTimestamp2}, []byte{0, 0, 0, 0}, "0000-00-00 00:00:00"},
		{"timestamp 1 µs after the epoch", Column{Type: TypeTimestamp2, Meta: 6}, []byte{0, 0, 0, 0, 0, 0, 1}, "1970-01-01 00:00:00.000001"},
		{"timestamp max", Column{Type: TypeTimestamp2, Meta: 3}, []byte{0x7f, 0xff, 0xff, 0xff, 0x27, 0x06}, "2038-01-19 03:14:07.999"},
		{"old timestamp", Column{Type: TypeTimestamp}, []byte{1, 0, 0, 0}, "1970-01-01 00:00:01"},
		{"old time negative", Column{Type: TypeTime}, []byte{0x99, 0x52, 0xf3}, "-83:08:23"},
		{"old datetime", Column{Type: TypeDateTime}, binary.LittleEndian.AppendUint64(nil, 99991231235959), "9999-12-31 23:59:59"},
		{"bit", Column{Type: TypeBit, Meta: 9}, []byte{1, 0}, "256"},
		{"set of 64", Column{Type: TypeSet, Meta: 8}, []byte{1, 0, 0, 0, 0, 0, 0, 0x80}, "9223372036854775809"},
		{"enum", Column{Type: TypeEnum, Meta: 2}, []byte{0x2c, 0x01}, "300"},
		{"varchar", Column{Type: TypeVarchar, Meta: 256}, []byte{2, 0, 'h', 'i'}, "hi"},
		{"binary padded", Column{Type: TypeString, Meta: 4, Collation: collationBinary}, []byte{1, 'a'}, "a\x00\x00\x00"},
		{"char not padded", Column{Type: TypeString, Meta: 4, Collation: 45}, []byte{1, 'a'}, "a"},
		{"binary without charset metadata", Column{Type: TypeString, Meta: 4}, []byte{1, 'a'}, "a"},
		{"json", Column{Type: TypeJSON, Meta: 4}, []byte{2, 0, 0, 0, jsonLiteral, 1}, "true"},
	}
	for _, tt := range tests {
		var v Value
		n, err := decodeValue(&v, &tt.col, tt.b)
		if err != nil || n != len(tt.b) || v.String() != tt.want {
			t.Errorf("%s: got %q (%d bytes, %v), want %q", tt.name, v.String(), n, err, tt.want)
		}
	}
}
