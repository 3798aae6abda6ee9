package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Statements. A connection made with Config.Statements runs the SQL of the
// applier's target sessions: multi-statement round trips whose answers
// carry every statement's row count (matched rows, CLIENT_FOUND_ROWS), and
// LOAD DATA LOCAL INFILE from files the caller serves from memory.
//
// A command is sent (SendQuery) and its answer read (ReadAnswer) as two
// steps, so a caller may send the next command before the last one's
// answer arrived: the server reads it once it finished the one before,
// and answers in order. A command that asks for a LOCAL INFILE must be the
// only one in flight (the server reads the file from the same stream), and
// ReadAnswer refuses the request otherwise.

// Capabilities of a statement connection.
const (
	capFoundRows       uint32 = 0x00000002
	capLocalFiles      uint32 = 0x00000080
	capMultiStatements uint32 = 0x00010000
)

// Answer is what the server answered to one command.
type Answer struct {
	// Counts holds the rows each statement without a result set affected
	// (matched, for an UPDATE), in order.
	Counts []int64
	// LastInsertID is the last statement's.
	LastInsertID uint64
	// Columns and Rows are the first result set's (nil values are NULL);
	// later result sets are read and dropped.
	Columns []string
	Rows    [][][]byte
	HasRows bool
}

func (a *Answer) reset() {
	a.Counts, a.LastInsertID, a.Columns, a.Rows, a.HasRows = a.Counts[:0], 0, nil, nil, false
}

// Files serves LOCAL INFILE requests: the file's bytes, or false to
// refuse it.
type Files func(name string) ([]byte, bool)

// SendQuery writes a COM_QUERY of prefix followed by q without waiting for
// its answer; both are written as they are (no copy) and may be reused
// once SendQuery returns. It may run beside a ReadAnswer of an earlier
// command in another goroutine (the socket's two directions), never beside
// another SendQuery.
func (c *Conn) SendQuery(prefix, q []byte) error {
	if err := c.brokenErr(); err != nil {
		return err
	}
	// Queued before the write: the answer can start arriving as soon as
	// the last byte is out. It starts with the sequence id after the
	// command's last packet (16 MiB each, then one shorter, maybe empty).
	packets := (1+len(prefix)+len(q))/maxFragment + 1
	c.pendingMu.Lock()
	c.pending = append(c.pending, uint8(packets))
	c.pendingMu.Unlock()
	if _, err := c.writeQuery(prefix, q); err != nil {
		c.markBroken(err)
		return err
	}
	return nil
}

// Pending is the number of commands sent and not answered yet.
func (c *Conn) Pending() int {
	c.pendingMu.Lock()
	defer c.pendingMu.Unlock()
	return len(c.pending)
}

// writeQuery writes COM_QUERY prefix+q in packets of at most 16 MiB and
// returns the sequence id the answer starts with.
func (c *Conn) writeQuery(prefix, q []byte) (uint8, error) {
	cmd := [1]byte{comQuery}
	var hdr [4]byte
	var seq uint8
	parts := [2][]byte{prefix, q}
	left := 1 + len(prefix) + len(q)
	for first := true; ; first = false {
		n := min(left, maxFragment)
		hdr = [4]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}
		bufs := net.Buffers{hdr[:]}
		body := n
		if first {
			bufs = append(bufs, cmd[:])
			body--
		}
		for i := range parts {
			k := min(body, len(parts[i]))
			if k > 0 {
				bufs = append(bufs, parts[i][:k])
				parts[i] = parts[i][k:]
				body -= k
			}
		}
		if _, err := bufs.WriteTo(c.nc); err != nil {
			return 0, fmt.Errorf("write query: %w", err)
		}
		seq++
		left -= n
		if n < maxFragment {
			return seq, nil
		}
	}
}

// ReadAnswer reads the answer to the oldest command sent and not read into
// a (reset first). A server error ends the command (the server ran none of
// its statements after the failed one) and is returned as *ServerError,
// after a's Counts of the statements before it; the connection stays
// usable. files serves LOCAL INFILE requests (nil refuses them).
func (c *Conn) ReadAnswer(a *Answer, files Files) error {
	c.pendingMu.Lock()
	if len(c.pending) == 0 {
		c.pendingMu.Unlock()
		return errors.New("wire: no command waiting for its answer")
	}
	seq := c.pending[0]
	c.pendingMu.Unlock()
	// The command stays pending until its answer is read whole: a caller
	// may send behind it only while it is (wiresql, apply's presend).
	defer func() {
		c.pendingMu.Lock()
		c.pending = c.pending[1:]
		c.pendingMu.Unlock()
	}()
	a.reset()
	c.r.SetSeq(seq)
	for {
		more, err := c.readAnswerPart(a, files)
		if err != nil || !more {
			return err
		}
	}
}

// readAnswerPart reads one OK packet, error or result set.
func (c *Conn) readAnswerPart(a *Answer, files Files) (more bool, err error) {
	pkt, err := c.readPacket()
	if err != nil {
		return false, err
	}
	if len(pkt) == 0 {
		c.markBroken(errors.New("empty response packet"))
		return false, errors.New("empty response packet")
	}
	switch pkt[0] {
	case 0x00:
		ok, err := parseOK(pkt)
		if err != nil {
			c.markBroken(err)
			return false, err
		}
		a.Counts = append(a.Counts, int64(ok.affectedRows))
		a.LastInsertID = ok.lastInsertID
		return ok.status&serverMoreResultsExists != 0, nil
	case 0xff:
		return false, parseError(pkt)
	case 0xfb:
		return c.sendInfile(a, files, string(pkt[1:]))
	}
	cols, rows, more, err := c.readResultSet(pkt)
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			c.markBroken(err)
		}
		return false, err
	}
	if !a.HasRows {
		a.HasRows, a.Columns, a.Rows = true, cols, rows
	}
	return more, nil
}

// sendInfile answers a LOCAL INFILE request: the file, then an empty
// packet; the server then answers the statement.
func (c *Conn) sendInfile(a *Answer, files Files, name string) (bool, error) {
	if n := c.Pending(); n > 1 {
		err := fmt.Errorf("the server asked for LOCAL INFILE %q with %d more commands already sent", name, n-1)
		c.markBroken(err)
		return false, err
	}
	var data []byte
	ok := files != nil
	if ok {
		data, ok = files(name)
	}
	if ok {
		for len(data) > 0 {
			n := min(len(data), 1<<20)
			if err := c.writePacket(data[:n]); err != nil {
				return false, err
			}
			data = data[n:]
		}
	}
	if err := c.writePacket(nil); err != nil {
		return false, err
	}
	more, err := c.readAnswerPart(a, nil)
	if ok || err != nil {
		return more, err
	}
	// The server takes a refused file as an empty one and goes on: read
	// the rest of the answer, then fail the command.
	for more && err == nil {
		more, err = c.readAnswerPart(a, nil)
	}
	if err != nil {
		return false, err
	}
	return false, fmt.Errorf("LOCAL INFILE %q is not a file binlane serves", name)
}

// WithContext runs fn, the connection's reads and writes bounded by ctx:
// its deadline, and its cancellation, which leaves the connection broken.
func (c *Conn) WithContext(ctx context.Context, fn func() error) error { return c.withContext(ctx, fn) }

// Usable reports whether the connection is in a known protocol state (no
// I/O error, no interrupted exchange, not closed).
func (c *Conn) Usable() bool { return c.broken.Load() == nil }
