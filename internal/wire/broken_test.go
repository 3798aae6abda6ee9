package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// TestBrokenKeepsFirstError: once a read fails, every later read and
// write fails without touching the socket and names the first error, also
// after Close; Close alone makes the connection unusable with
// net.ErrClosed; and Close from another goroutine while packets are read
// is no data race (run with -race).
func TestBrokenKeepsFirstError(t *testing.T) {
	c := &Conn{}
	// One whole packet, then a header cut short: the second read fails.
	c.setTransport(&scriptConn{r: bytes.NewReader(append(packets(0, []byte("ok")), 5, 0))}, 1<<20)
	if pkt, err := c.readPacket(); err != nil || string(pkt) != "ok" {
		t.Fatalf("first packet: %q, %v", pkt, err)
	}
	_, first := c.readPacket()
	if first == nil {
		t.Fatal("a truncated header read without error")
	}
	for _, op := range []struct {
		name string
		run  func() error
	}{
		{"read", func() error { _, err := c.readPacket(); return err }},
		{"write", func() error { return c.writeCommand([]byte{comQuery}) }},
		{"read after Close", func() error { c.Close(); _, err := c.readPacket(); return err }},
	} {
		err := op.run()
		if err == nil || !strings.Contains(err.Error(), "unusable") || !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Errorf("%s on a broken connection: %v, want unusable wrapping the first error (%v)", op.name, err, first)
		}
	}

	// Close on a healthy connection: the next read fails with ErrClosed,
	// though the socket still holds a packet.
	c = &Conn{}
	c.setTransport(&scriptConn{r: bytes.NewReader(packets(0, []byte("ok")))}, 1<<20)
	c.Close()
	if _, err := c.readPacket(); err == nil || !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v, want unusable wrapping net.ErrClosed", err)
	}

	// Close racing with reads (the race detector's part).
	c = &Conn{}
	var stream []byte
	for range 1000 {
		stream = append(stream, packets(0, []byte("row"))...)
	}
	c.setTransport(&scriptConn{r: bytes.NewReader(stream)}, 1<<20)
	var wg sync.WaitGroup
	wg.Go(func() { c.Close() })
	var err error
	for err == nil {
		c.r.SetSeq(0)
		_, err = c.readPacket()
	}
	wg.Wait()
	if _, err := c.readPacket(); !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) {
		t.Errorf("read after a concurrent Close: %v, want net.ErrClosed or the end of the stream (whichever came first)", err)
	}
}
