package binlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileMagic starts every binlog file.
var FileMagic = []byte{0xfe, 'b', 'i', 'n'}

// maxEventSize bounds what the reader allocates for one event (the server's
// own limit is max_allowed_packet, at most 1 GiB).
const maxEventSize = 1 << 30

// FileReader reads the events of a binlog file offline, decoding them with
// the same Decoder the replication stream uses.
type FileReader struct {
	f     *os.File
	br    *bufio.Reader
	dec   *Decoder
	chunk []byte // unused tail of the block events are read into
	hdr   [HeaderLen]byte
	off   int64 // offset of the next event
	size  int64 // file size when last checked
}

// fileChunk is the size of the blocks the reader carves events from: one
// allocation per block instead of one per event. An event kept by the
// caller keeps its block alive.
const fileChunk = 1 << 20

// OpenFile opens a binlog file and checks its magic number.
func OpenFile(path string) (*FileReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r := &FileReader{f: f, br: bufio.NewReaderSize(f, 1<<20), dec: NewDecoder()}
	magic := make([]byte, 4)
	if _, err := io.ReadFull(r.br, magic); err != nil || !bytes.Equal(magic, FileMagic) {
		f.Close()
		return nil, fmt.Errorf("%s is not a binlog file (bad magic number)", path)
	}
	r.dec.SetPosition(filepath.Base(path), 4)
	r.dec.offline = true
	r.off = 4
	return r, nil
}

// Decoder returns the decoder, for table maps and the format description.
func (r *FileReader) Decoder() *Decoder { return r.dec }

// Close closes the file.
func (r *FileReader) Close() error { return r.f.Close() }

// NextRaw returns the next event's bytes without decoding them; io.EOF at
// the end of the file. The bytes are never overwritten by later calls.
func (r *FileReader) NextRaw() ([]byte, error) {
	size, err := readHeader(r.br, r.hdr[:])
	if err != nil {
		return nil, err
	}
	if err := r.checkSize(size); err != nil {
		return nil, err
	}
	if len(r.chunk) < size {
		r.chunk = make([]byte, max(fileChunk, size))
	}
	raw := r.chunk[:size:size]
	r.chunk = r.chunk[size:]
	if err := readBody(r.br, r.hdr[:], raw); err != nil {
		return nil, err
	}
	r.off += int64(size)
	return raw, nil
}

// checkSize refuses an event larger than the rest of the file before
// allocating it: a corrupt size field must not cost a gigabyte.
func (r *FileReader) checkSize(size int) error {
	if r.off+int64(size) <= r.size {
		return nil
	}
	if fi, err := r.f.Stat(); err == nil {
		r.size = fi.Size() // the server may have appended since
	}
	if r.off+int64(size) > r.size {
		return fmt.Errorf("event of %d bytes at offset %d runs past the end of the file (%d bytes)", size, r.off, r.size)
	}
	return nil
}

// Next reads and decodes the next event; io.EOF at the end of the file.
func (r *FileReader) Next() (*Event, error) {
	raw, err := r.NextRaw()
	if err != nil {
		if !errors.Is(err, io.EOF) {
			file, pos := r.dec.File()
			return nil, &DecodeError{File: file, Pos: pos, Err: err}
		}
		return nil, err
	}
	ev, err := r.dec.Decode(raw)
	if err == nil && ev.Header.Type == EventStartEncryption {
		// Everything after it is encrypted with a key only the server has;
		// over a replication connection the server decrypts instead.
		return nil, &DecodeError{File: ev.File, Pos: ev.Pos, Type: EventStartEncryption,
			Err: errors.New("the file is encrypted (encrypt_binlog=ON): read it through a replication connection")}
	}
	return ev, err
}

// ReadRawEvent reads one event (header, then the rest by the header's size)
// from a byte stream. io.EOF means a clean end between events.
func ReadRawEvent(br io.Reader) ([]byte, error) {
	var hdr [HeaderLen]byte
	size, err := readHeader(br, hdr[:])
	if err != nil {
		return nil, err
	}
	raw := make([]byte, size)
	return raw, readBody(br, hdr[:], raw)
}

// readHeader reads a common header and returns the event size it states.
func readHeader(br io.Reader, hdr []byte) (int, error) {
	if _, err := io.ReadFull(br, hdr); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, fmt.Errorf("truncated event header: %w", err)
		}
		return 0, err
	}
	size := binary.LittleEndian.Uint32(hdr[9:])
	if size < HeaderLen || size > maxEventSize {
		return 0, fmt.Errorf("event size %d out of range", size)
	}
	return int(size), nil
}

// readBody fills raw (of the stated size) with the header and the rest.
func readBody(br io.Reader, hdr, raw []byte) error {
	copy(raw, hdr)
	if _, err := io.ReadFull(br, raw[HeaderLen:]); err != nil {
		return fmt.Errorf("truncated event of %d bytes: %w", len(raw), err)
	}
	return nil
}
