package binlog

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldFDEBody builds a format description as a server older than the
// checksum (MySQL 5.6.1, MariaDB 5.3) writes it: the post-header lengths
// of its n event types end the body, without an algorithm byte.
func oldFDEBody(version string, n int) []byte {
	body := binary.LittleEndian.AppendUint16(nil, 4)
	v := make([]byte, 50)
	copy(v, version)
	body = append(body, v...)
	body = binary.LittleEndian.AppendUint32(body, 1700000000)
	body = append(body, HeaderLen)
	for t := 1; t <= n; t++ {
		l := byte(0)
		switch EventType(t) {
		case EventQuery:
			l = 13
		case EventTableMap, EventWriteRowsV1, EventUpdateRowsV1, EventDeleteRowsV1:
			l = 8
		case EventExecuteLoadQuery:
			l = 26
		}
		body = append(body, l)
	}
	return body
}

// TestFormatDescriptionChecksumByte: only servers that know checksums end
// the format description with an algorithm byte (and 4 more bytes); the
// last 5 post-header lengths of an older server's are no trailer.
func TestFormatDescriptionChecksumByte(t *testing.T) {
	cases := []struct {
		name      string
		body      []byte
		crc       bool
		wantLens  int
		wantAlg   byte
		tableMapN int
	}{
		{"MySQL 5.0: no table map", oldFDEBody("5.0.86-debug-log", 18), false, 18, ChecksumOff, -1},
		{"MySQL 5.1.23", oldFDEBody("5.1.23-rc-debug-log", 25), false, 25, ChecksumOff, 8},
		{"MySQL 5.5", oldFDEBody("5.5.17-debug-log", 27), false, 27, ChecksumOff, 8},
		{"MySQL 5.6.0", oldFDEBody("5.6.0-m5", 27), false, 27, ChecksumOff, 8},
		{"MariaDB 5.2", oldFDEBody("5.2.14-MariaDB-log", 27), false, 27, ChecksumOff, 8},
		{"MySQL 5.6.1, checksums off", fdeBody("5.6.1-m5", false, false), false, 41, ChecksumOff, 8},
		{"MariaDB 5.3, checksums off", fdeBody("5.3.12-MariaDB", false, false), false, 41, ChecksumOff, 8},
		{"MySQL 8.0, CRC32", fdeBody("8.0.36", false, true), true, 41, ChecksumCRC32, 8},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder()
			ev, err := d.Decode(newBuilder(c.crc).event(EventFormatDescription, 0, c.body))
			if err != nil {
				t.Fatal(err)
			}
			f := ev.Data.(*FormatDescriptionEvent)
			if len(f.PostHeaderLens) != c.wantLens || f.Checksum != c.wantAlg || f.postHeaderLen(EventTableMap) != c.tableMapN {
				t.Errorf("%d post-header lengths, checksum %d, table map %d; want %d, %d, %d",
					len(f.PostHeaderLens), f.Checksum, f.postHeaderLen(EventTableMap), c.wantLens, c.wantAlg, c.tableMapN)
			}
		})
	}
	// A pre-checksum description whose last length happens to be 1 (the
	// CRC32 code) is not a CRC32 description.
	body := append(oldFDEBody("5.1.23-rc-debug-log", 25), 1)
	d := NewDecoder()
	ev, err := d.Decode(newBuilder(false).event(EventFormatDescription, 0, body))
	if err != nil || ev.Data.(*FormatDescriptionEvent).Checksum != ChecksumOff {
		t.Fatalf("got %v, %v", ev, err)
	}
}

// TestExtendedHeader: Google's MySQL 5.1 builds extend the common header of
// the events after the format description (a checksum, a group id); the
// extra bytes are skipped. A header shorter than 19 bytes is refused.
func TestExtendedHeader(t *testing.T) {
	for _, extra := range []int{4, 8, 12} {
		fde := oldFDEBody("5.1.63-google-debug-log", 27)
		fde[56] = byte(HeaderLen + extra)
		b := newBuilder(false)
		d := NewDecoder()
		if _, err := d.Decode(b.event(EventFormatDescription, 0, fde)); err != nil {
			t.Fatal(err)
		}
		query := append(make([]byte, extra), executeLoadBody(0, 0, 0, "create table t (id int)")[:13]...)
		query = append(query, "db\x00create table t (id int)"...)
		ev, err := d.Decode(b.event(EventQuery, 0, query))
		if err != nil {
			t.Fatalf("%d extra bytes: %v", extra, err)
		}
		if q := ev.Data.(*QueryEvent); q.Schema != "db" || string(q.Query) != "create table t (id int)" {
			t.Errorf("%d extra bytes: %+v", extra, q)
		}
		if _, err := d.Decode(b.event(EventXID, 0, make([]byte, extra-1))); err == nil || !strings.Contains(err.Error(), "shorter than its") {
			t.Errorf("%d extra bytes: an event shorter than its header: %v", extra, err)
		}
	}
	fde := oldFDEBody("5.1.63-google-debug-log", 27)
	fde[56] = HeaderLen - 6
	_, err := NewDecoder().Decode(newBuilder(false).event(EventFormatDescription, 0, fde))
	if err == nil || !strings.Contains(err.Error(), "header length 13 is not supported (need at least 19)") {
		t.Errorf("13-byte header: %v", err)
	}
}

// TestRelayLogOffsets: a relay log holds its source's events after the
// source's rotate, with the source's positions in their headers; read as
// a file, every event is located at its offset in that file (as
// mariadb-binlog prints it), and errors name that offset.
func TestRelayLogOffsets(t *testing.T) {
	b := newBuilder(false)
	relay := b.event(EventFormatDescription, 0, fdeBody("5.7.25-log", false, false))
	rot := b.event(EventRotate, FlagArtificial, append(binary.LittleEndian.AppendUint64(nil, 1000), "master-bin.000009"...))
	binary.LittleEndian.PutUint32(rot[0:], 0)
	binary.LittleEndian.PutUint32(rot[13:], 0)
	src := b.event(EventFormatDescription, 0, fdeBody("5.7.25-log", false, false))
	binary.LittleEndian.PutUint32(src[13:], 0)
	query := b.event(EventQuery, 0, append(executeLoadBody(0, 0, 0, "")[:13], "db\x00BEGIN"...))
	binary.LittleEndian.PutUint32(query[13:], 1000+uint32(len(query)))
	bad := b.event(EventXID, 0, []byte{1})
	binary.LittleEndian.PutUint32(bad[13:], 2000)
	file := append(append([]byte(nil), FileMagic...), relay...)
	for _, e := range [][]byte{rot, src, query, bad} {
		file = append(file, e...)
	}
	path := filepath.Join(t.TempDir(), "relay-bin.000002")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	fr, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	off := uint64(4)
	for _, size := range []int{len(relay), len(rot), len(src), len(query)} {
		ev, err := fr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.File != "relay-bin.000002" || ev.Pos != off {
			t.Errorf("%s at %d located at %s:%d", ev.Header.Type, off, ev.File, ev.Pos)
		}
		off += uint64(size)
	}
	_, err = fr.Next()
	if want := fmt.Sprintf("binlog relay-bin.000002:%d: Xid event", off); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s...", err, want)
	}
}
