package txn

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"io"
	"os"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

// Exported for the tests of package txn_test as well.

// The sysbench fixture of package binlog: small transactions (an update by
// the indexed column, one by the other, a delete and an insert).
const sysbenchFixture = "../binlog/testdata/sysbench-oltp-write-only.binlog.gz"

// FixtureEvents returns the fixture's raw events.
func FixtureEvents(tb testing.TB) [][]byte {
	f, err := os.Open(sysbenchFixture)
	if err != nil {
		tb.Skip(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(zr); err != nil {
		tb.Fatal(err)
	}
	var events [][]byte
	for rest := buf.Bytes()[4:]; len(rest) > 0; {
		size := int(binary.LittleEndian.Uint32(rest[9:]))
		events = append(events, rest[:size:size])
		rest = rest[size:]
	}
	return events
}

// rawSource decodes the raw events one by one, as the stream does.
type rawSource struct {
	d      *binlog.Decoder
	events [][]byte
	i      int
}

func (s *rawSource) Next(context.Context) (binlog.Message, error) {
	if s.i == len(s.events) {
		return binlog.Message{}, io.EOF
	}
	ev, err := s.d.Decode(s.events[s.i])
	s.i++
	return binlog.Message{Event: ev}, err
}

// NewRawSource is a Source that decodes events with d.
func NewRawSource(d *binlog.Decoder, events [][]byte) Source { return &rawSource{d: d, events: events} }
