package txn

import "testing"

// TestFullImage: a columns-present bitmap names every column when each of
// its first n bits is set, whatever the bits past n hold; every bit of the
// n counts (the byte-at-a-time check against the bit-at-a-time one it
// replaced, over every bitmap with one bit cleared).
func TestFullImage(t *testing.T) {
	for _, tc := range []struct {
		bitmap []byte
		n      int
		want   bool
	}{
		{[]byte{}, 0, true},
		{[]byte{0x00}, 0, true},
		{[]byte{0x01}, 1, true},
		{[]byte{0xfe}, 1, false},
		{[]byte{0x7f}, 7, true},
		{[]byte{0x7f}, 8, false},
		{[]byte{0xff}, 8, true},
		{[]byte{0xff, 0x00}, 8, true},
		{[]byte{0xff, 0x01}, 9, true},
		{[]byte{0xff, 0xfe}, 9, false},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f}, 60, true},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x07}, 60, false},
		{[]byte{0xff, 0xff, 0xff, 0xef, 0xff, 0xff, 0xff, 0xff}, 60, false},
	} {
		if got := fullImage(tc.bitmap, tc.n); got != tc.want {
			t.Errorf("fullImage(%x, %d) = %v, want %v", tc.bitmap, tc.n, got, tc.want)
		}
	}
	for n := 0; n <= 70; n++ {
		full := make([]byte, (n+7)/8)
		for i := range full {
			full[i] = 0xff
		}
		if !fullImage(full, n) {
			t.Fatalf("n=%d: every bit set, not full", n)
		}
		for i := 0; i < n; i++ {
			b := append([]byte(nil), full...)
			b[i>>3] &^= 1 << (i & 7)
			if fullImage(b, n) {
				t.Fatalf("n=%d: bit %d cleared, still full", n, i)
			}
		}
	}
}
