package sqlquote

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkAppendEscaped: the apply path's cost of a row value, text and
// binary, into a reused buffer.
func BenchmarkAppendEscaped(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(rng.IntN(256))
	}
	text := []byte("a row's text value, mostly plain, with the odd quote ' and backslash \\ in it; ")
	for len(text) < 4096 {
		text = append(text, text...)
	}
	doc := []byte(`{"id": 12, "status": "open", "customer": {"id": 7, "name": "Customer 7"}, "lines": [`)
	for len(doc) < 4096 {
		doc = append(doc, `{"sku": "SKU-1234", "qty": 3, "price": 19.99, "note": "ständig verfügbar"}, `...)
	}
	buf := make([]byte, 0, 16384)
	for _, v := range []struct {
		name string
		b    []byte
	}{{"text", text[:4096]}, {"binary", bin}, {"json", doc[:4096]}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(v.b)))
			for b.Loop() {
				buf = AppendEscaped(buf[:0], "utf8mb4", v.b)
			}
		})
	}
}
