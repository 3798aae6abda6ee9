package dsn

import (
	"bufio"
	"context"
	"errors"
	"net"
	"syscall"
)

// readBuffer is what one read from a server's socket may take. go-sql-driver
// reads through a 4 KiB buffer of its own, which made a copy's row stream
// one read system call per 4 KiB: 16% of binlane's CPU copying 2M rows was
// in read and write calls (profile of bench-copy). Through this buffer a
// call takes what the socket holds, up to 64 KiB.
const readBuffer = 64 << 10

// dial opens a connection as go-sql-driver would (its default dialer) and
// reads it through readBuffer. Only sockets with a descriptor are wrapped:
// the driver's liveness check of an idle connection needs it (see
// bufferedConn.SyscallConn).
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(interface {
		net.Conn
		syscall.Conn
	})
	if !ok {
		return c, nil
	}
	return &bufferedConn{Conn: sc, r: bufio.NewReaderSize(sc, readBuffer)}, nil
}

// bufferedConn is a socket read through a buffer. Writes go straight to the
// socket: the driver writes a whole packet at a time and then waits for
// the answer, which a write buffer would hold back.
type bufferedConn struct {
	net.Conn // a socket with a descriptor (see dial)
	r        *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// errBuffered: bytes arrived that nobody read, on a connection that was
// idle — stale, as the driver's own check calls a socket with unread bytes.
var errBuffered = errors.New("unexpected bytes read ahead on an idle connection")

// SyscallConn gives the driver the socket for its check, before it reuses
// an idle connection, that the server has not closed it or sent anything
// unasked. That check reads the socket itself, so bytes this buffer read
// ahead would escape it: they fail the check here instead.
func (c *bufferedConn) SyscallConn() (syscall.RawConn, error) {
	if c.r.Buffered() > 0 {
		return nil, errBuffered
	}
	return c.Conn.(syscall.Conn).SyscallConn()
}
