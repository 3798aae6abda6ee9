package apply

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/wire"
	"github.com/binlane/binlane/internal/wiresql"
)

// OpenPool opens the pool worker connections to the target come from:
// every setting of the target's address (TLS included) as package dsn makes
// it, each connection in session (dsn.ApplySession: the session rows are
// written in, also on a connection the pool dials again), on binlane's own
// client (package wiresql): multi-statement round trips, every
// statement's row count, affected rows counted as matched rows (so an
// UPDATE that finds its row reports 1 even when nothing changes), LOAD
// DATA files served from memory.
func OpenPool(target dsn.DSN, conns int, session dsn.Session) (*sql.DB, error) {
	db, err := target.OpenStatementSession(session)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// targetConn is one pinned target connection, in the pool's session.
type targetConn struct {
	conn *sql.Conn
	id   int64 // CONNECTION_ID(), to recognize it in lock-wait reports
	// localInfile: the target takes LOAD DATA LOCAL INFILE (its
	// local_infile is ON, the default), so copied chunks are loaded.
	localInfile bool
	// joinBudget is rowsql.Writer.JoinBudget for this session: half its
	// max_heap_table_size when its binlog leaves temporary tables out (it
	// does not log, or logs rows), else 0.
	joinBudget int64
	// wc is the driver's connection under conn, kept so that a round trip
	// can be sent while another goroutine waits for the one before it
	// (presend): database/sql's Raw would hold the connection's lock for
	// the whole wait. Only the worker owning conn uses it, and never
	// beside a database/sql call on conn.
	wc *wiresql.Conn
	// aheadMu guards what presend and exec share: exec runs in the
	// goroutine of a batch's last round trips, presend in the worker's.
	aheadMu sync.Mutex
	// ahead is the round trip sent ahead and not received yet; queued is
	// one waiting for the next round trip that commits to be sent.
	ahead, queued presented
	// window is open while a round trip that commits is sent and not
	// answered: the only time a round trip may be sent ahead.
	window bool
	// sentAhead, when set, counts the round trips sent ahead.
	sentAhead *atomic.Uint64
}

// presented is a round trip sent ahead: its batch, the guard sent in front
// of it, and its SQL text (the writer hands exec the same buffer later).
type presented struct {
	b           *batch
	guard, text []byte
}

func (p presented) is(b *batch, sqlText []byte) bool {
	return p.b == b && len(p.text) == len(sqlText) && &p.text[0] == &sqlText[0]
}

func openConn(ctx context.Context, db *sql.DB) (*targetConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the target: %w", err)
	}
	c := &targetConn{conn: conn}
	var logs bool
	var format string
	var heap int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), @@local_infile, @@log_bin AND @@sql_log_bin, @@binlog_format, @@max_heap_table_size").
		Scan(&c.id, &c.localInfile, &logs, &format, &heap); err != nil {
		conn.Close()
		return nil, fmt.Errorf("prepare target session: %w", err)
	}
	if !logs || strings.EqualFold(format, "ROW") {
		c.joinBudget = heap / 2
	}
	if err := conn.Raw(func(dc any) error {
		wc, ok := dc.(*wiresql.Conn)
		if !ok {
			return fmt.Errorf("target connection of type %T, not binlane's own", dc)
		}
		c.wc = wc
		return nil
	}); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// close closes the physical connection. sql.Conn.Close alone would hand it
// back to the pool — with whatever transaction it still has open, whose
// locks would then outlive the batch.
func (c *targetConn) close() {
	if c != nil && c.conn != nil {
		_ = c.conn.Raw(func(any) error { return driver.ErrBadConn })
		c.conn.Close()
	}
}

// exec sends statements in one round trip and returns the rows each
// affected. The SQL text is passed without a copy: it is written to the
// socket as it is. The statements' LOAD DATA files are served from memory
// while the round trip runs.
func (c *targetConn) exec(ctx context.Context, sqlText []byte, stmts []rowsql.Stmt, b *batch) ([]int64, error) {
	if len(sqlText) == 0 {
		return nil, nil
	}
	var files wire.Files
	for i := range stmts {
		if stmts[i].File != nil {
			files = func(name string) ([]byte, bool) {
				for j := range stmts {
					if st := &stmts[j]; st.File != nil && st.FileName == name {
						return st.File, true
					}
				}
				return nil, false
			}
			break
		}
	}
	c.aheadMu.Lock()
	ahead := c.ahead
	c.ahead = presented{}
	c.aheadMu.Unlock()
	// Sent ahead, and still to be answered: a round trip given up meanwhile
	// (its batch failed, or a statement ran on the connection) was undone
	// by Settle, and is sent again now.
	if ahead.b != nil && ahead.is(b, sqlText) && c.wc.Pending() > 0 {
		counts, err := c.wc.Receive(ctx, files)
		if len(counts) == 0 {
			return nil, aheadRefused(err)
		}
		return counts[1:], err // the guard's count first
	}
	// A round trip sent ahead and given up is undone first (Settle). One
	// that loads a file (LOAD DATA LOCAL INFILE) opens no window: the
	// server reads what follows the statement as the file, so nothing may
	// be sent behind it (rowsql.Writer.FirstHeld keeps such a round trip
	// from being sent ahead, for the same reason).
	if !rowsql.Commits(stmts) || files != nil {
		return c.wc.Run(ctx, sqlText, files)
	}
	// A round trip that commits opens the window while it is in flight.
	counts, err := c.wc.RunSent(ctx, sqlText, files, func() { c.openWindow(ctx) })
	c.aheadMu.Lock()
	c.window = false
	c.aheadMu.Unlock()
	return counts, err
}

// aheadRefused names the error of a round trip sent ahead that ended in
// its guard: the guard refused (the commit before it was not found, and
// nothing of the round trip ran; the batch fails and is applied again), or
// another error (the connection) that is passed on as it is.
func aheadRefused(err error) error {
	if sqlerr.Code(err) != sqlerr.SubqueryNotOneRow {
		return err
	}
	return fmt.Errorf("rows sent ahead did not run, the commit before them not found: %w", err)
}

// openWindow opens the window for round trips sent ahead, once a round trip
// that commits is on its way, and sends the one queued for it, if any.
func (c *targetConn) openWindow(ctx context.Context) {
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	c.window = true
	if q := c.queued; q.b != nil {
		c.queued = presented{}
		c.sendAheadLocked(ctx, q)
	}
}

// presend sends text, the first round trip of the next batch b, after
// guard (position.AppendCommittedGuard of the commit before b), without
// waiting for an answer: exec of the same text for b reads it. It is sent
// only right behind the round trip that commits the batch before b (the
// window): now if that round trip is in flight, else when exec sends it.
// The server runs it right after that commit, and the guard stops it if
// the commit failed. guard and text must stay as they are until exec
// reads the answer or unqueue runs.
func (c *targetConn) presend(ctx context.Context, b *batch, guard, text []byte) {
	p := presented{b: b, guard: guard, text: text}
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	if c.window {
		c.sendAheadLocked(ctx, p)
		return
	}
	c.queued = p
}

// sendAheadLocked sends p while a round trip that commits is the only one
// in flight; otherwise nothing. A failed write breaks the connection, and
// the commit in flight fails with it.
func (c *targetConn) sendAheadLocked(ctx context.Context, p presented) {
	if c.ahead.b != nil || c.wc.Pending() != 1 {
		return
	}
	if err := c.wc.SendAfter(ctx, p.guard, p.text); err != nil {
		return
	}
	c.ahead = p
	if c.sentAhead != nil {
		c.sentAhead.Add(1)
	}
}

// unqueue drops a round trip still waiting to be sent ahead: the commit
// it was to follow has ended.
func (c *targetConn) unqueue() {
	if c == nil {
		return
	}
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	c.queued = presented{}
}

// forgetAhead forgets a round trip sent ahead for b, which will not be
// applied now: the next round trip undoes it (Settle) first. Nothing to
// forget without a connection (it was closed, and with it what was sent).
func (c *targetConn) forgetAhead(b *batch) {
	if c == nil {
		return
	}
	c.aheadMu.Lock()
	defer c.aheadMu.Unlock()
	if c.ahead.b == b {
		c.ahead = presented{}
	}
	if c.queued.b == b {
		c.queued = presented{}
	}
}

// serve makes the connection serve data as LOCAL INFILE name to its
// statements until done is called.
func (c *targetConn) serve(name string, data []byte) (done func()) { return c.wc.Serve(name, data) }

// rollback ends a transaction and puts back the session settings a batch
// may have switched (the writer turns them back only when it finishes a
// batch, and the next batch assumes they are on). A caller that sees an
// error closes and replaces the connection.
func (c *targetConn) rollback(ctx context.Context) error {
	_, err := c.conn.ExecContext(ctx, rollbackSQL)
	return err
}

// infileScheme starts the name of a file a worker serves from memory
// (LOAD DATA LOCAL INFILE); names carry a random part of the worker's own
// (newInfilePrefix), so concurrent workers and streams never share one,
// and a target asking for any other file is refused.
const infileScheme = "Reader::"

func newInfilePrefix() string {
	return fmt.Sprintf("%sbinlane-%016x-", infileScheme, rand.Uint64())
}

const rollbackSQL = "ROLLBACK; SET SESSION foreign_key_checks=1, check_constraint_checks=0"
