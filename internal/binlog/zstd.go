package binlog

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// inflateZstd decompresses a TRANSACTION_PAYLOAD. The zstd decoder is made
// on first use and kept by the Decoder: building one costs far more than a
// small transaction takes to inflate.
func (d *Decoder) inflateZstd(src []byte, size uint64) ([]byte, error) {
	if d.zstd == nil {
		zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxEventSize))
		if err != nil {
			return nil, err
		}
		d.zstd = zd
	}
	// The size field is only trusted up to what the frame could plausibly
	// hold; DecodeAll grows the buffer if it is really larger.
	out, err := d.zstd.DecodeAll(src, make([]byte, 0, min(size, uint64(len(src))*16+4096)))
	if err != nil {
		return nil, err
	}
	if uint64(len(out)) != size {
		return nil, fmt.Errorf("inflated %d bytes, expected %d", len(out), size)
	}
	return out, nil
}
