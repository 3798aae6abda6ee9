package dsn

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
)

// TestBufferedConn: a TCP socket is read through the buffer, and bytes read
// ahead on it fail the driver's idle check (SyscallConn) until they are read.
func TestBufferedConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		s, err := ln.Accept()
		if err != nil {
			return
		}
		defer s.Close()
		_, _ = s.Write([]byte("0123456789"))
		_, _ = io.Copy(io.Discard, s)
	}()
	c, err := dial(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	bc, ok := c.(*bufferedConn)
	if !ok {
		t.Fatalf("dial returned %T, want a *bufferedConn", c)
	}
	if _, err := bc.SyscallConn(); err != nil {
		t.Fatalf("idle check before any read: %v", err)
	}
	one := make([]byte, 1)
	if _, err := io.ReadFull(c, one); err != nil {
		t.Fatal(err)
	}
	if bc.r.Buffered() == 0 {
		t.Skip("the socket gave one byte per read; nothing was read ahead")
	}
	if _, err := bc.SyscallConn(); !errors.Is(err, errBuffered) {
		t.Fatalf("idle check with %d bytes read ahead: %v, want errBuffered", bc.r.Buffered(), err)
	}
	rest := make([]byte, 9)
	if _, err := io.ReadFull(c, rest); err != nil || string(rest) != "123456789" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if _, err := bc.SyscallConn(); err != nil {
		t.Fatalf("idle check after reading everything: %v", err)
	}
}
