package rowsql

import "errors"

// Holding round trips. A writer that renders a batch ahead (while its
// connection still runs the batch before it) must not send. A batch larger
// than one round trip could not be rendered ahead at all: it was dropped at
// its first full round trip and rendered again once the connection was
// free, the target idle meanwhile (wide rows: a third of the drain).
//
// Under Hold, a full round trip is kept instead of sent. The next Flush
// without Hold sends what was kept first, in the order it was written,
// each round trip checked before the next one goes: the same round trips
// and the same checks as had they been sent as they filled, only later. So
// a COMMIT still never goes before the rows ahead of it were checked.

// heldTrips bounds what one writer holds, in full round trips: a round
// trip ends once it reached MaxRoundTrip, with a statement of at most
// MaxStatement (10 MiB for two by default, SQL text and LOAD DATA files
// together: a merged batch of up to 4 MiB of binlog, rendered). A batch
// that would need more is not rendered ahead.
const heldTrips = 2

// ErrHoldFull: a writer under Hold would hold more than heldTrips round
// trips' bytes.
var ErrHoldFull = errors.New("rowsql: the batch is too large to hold while rendering ahead")

// roundTrip is a round trip written and not sent yet.
type roundTrip struct {
	buf   []byte
	stmts []Stmt
	file  []byte
}

// FirstHeld is the SQL text of the first round trip kept under Hold,
// unless it has none or that round trip loads a file (LOAD DATA LOCAL
// reads the file from the connection, so nothing may be sent behind it).
func (w *Writer) FirstHeld() (buf []byte, ok bool) {
	if len(w.held) == 0 {
		return nil, false
	}
	rt := &w.held[0]
	for i := range rt.stmts {
		if rt.stmts[i].File != nil {
			return nil, false
		}
	}
	return rt.buf, len(rt.buf) > 0
}

// Held reports the round trips kept under Hold and not sent yet.
func (w *Writer) Held() int { return len(w.held) }

// holdTrip keeps the round trip written so far and starts an empty one.
func (w *Writer) holdTrip() error {
	n := len(w.buf) + len(w.file)
	if w.heldBytes+n > heldTrips*(w.MaxRoundTrip+w.MaxStatement) {
		return ErrHoldFull
	}
	w.held = append(w.held, roundTrip{buf: w.buf, stmts: w.stmts, file: w.file})
	w.heldBytes += n
	w.buf, w.stmts, w.file = nil, nil, nil
	if w.spare.buf != nil {
		w.buf, w.stmts, w.file = w.spare.buf[:0], w.spare.stmts[:0], w.spare.file[:0]
		w.spare = roundTrip{}
	}
	w.unchecked = 0
	return nil
}

// sendHeld sends the round trips kept under Hold, in order, checking each
// before the next is sent.
func (w *Writer) sendHeld() error {
	for i := range w.held {
		rt := &w.held[i]
		if err := w.exchange(rt.buf, rt.stmts); err != nil {
			w.dropHeld()
			return err
		}
	}
	w.dropHeld()
	return nil
}

// dropHeld forgets the held round trips. One set of their buffers is kept
// for the next hold; their descriptions are cleared (see reset).
func (w *Writer) dropHeld() {
	for i := range w.held {
		rt := &w.held[i]
		clear(rt.stmts)
		if w.spare.buf == nil && cap(rt.file) <= w.MaxRoundTrip {
			w.spare = roundTrip{buf: rt.buf[:0], stmts: rt.stmts[:0], file: rt.file[:0]}
		}
	}
	clear(w.held)
	w.held, w.heldBytes = w.held[:0], 0
}

// exchange runs one round trip and checks its row counts.
func (w *Writer) exchange(buf []byte, stmts []Stmt) error {
	counts, err := w.sink.Send(buf, stmts)
	if err != nil {
		return blame(stmts, err)
	}
	return check(stmts, counts)
}
