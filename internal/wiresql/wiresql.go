// Package wiresql is a database/sql driver on binlane's own protocol
// client (package wire), for the applier's target sessions: every
// statement in the text protocol (arguments written into the statement as
// literals, package sqlquote), multi-statement round trips whose row
// counts the caller reads per statement (Conn.Run), LOCAL INFILE served
// from memory per round trip, and a round trip sent before the last one's
// answer was read (Conn.Send, Conn.Receive).
//
// It owns the driver side of those connections only: where a server is and
// how a session is set up come from package dsn. It must never interpret
// the statements it runs, never serve a file it was not handed for the
// round trip that asks for it, and never hand a connection whose protocol
// state is unknown back to the pool.
package wiresql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
	"unsafe"

	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/wire"
)

// Connector makes connections to one server, each set up by Setup (run in
// order; a failure fails the connection) and Optional (a statement the
// server or the account may refuse: an unknown variable, a missing
// privilege).
type Connector struct {
	Config   wire.Config
	Setup    []string
	Optional []string
	// DialTimeout bounds making a connection (10 s when 0).
	DialTimeout time.Duration
}

// Connect implements driver.Connector.
func (c *Connector) Connect(ctx context.Context) (driver.Conn, error) {
	timeout := c.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cfg := c.Config
	cfg.Statements = true
	wc, err := wire.Dial(dctx, cfg)
	if err != nil {
		return nil, err
	}
	conn := &Conn{wc: wc}
	for i, q := range append(c.Setup[:len(c.Setup):len(c.Setup)], c.Optional...) {
		if _, err := conn.Run(dctx, []byte(q), nil); err != nil {
			if i >= len(c.Setup) && sqlerr.Is(err, sqlerr.SpecificAccessDenied, sqlerr.UnknownSystemVar) {
				continue
			}
			wc.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	return conn, nil
}

// Driver implements driver.Connector; its Open is not supported (a
// Connector carries what a DSN string cannot: TLS settings, the session).
func (c *Connector) Driver() driver.Driver { return drv{} }

type drv struct{}

func (drv) Open(string) (driver.Conn, error) {
	return nil, errors.New("wiresql: open connections through a Connector")
}

// Conn is one connection. database/sql uses it from one goroutine at a
// time; Send and Receive (through sql.Conn.Raw) may pipeline round trips.
type Conn struct {
	wc  *wire.Conn
	ans wire.Answer
	buf []byte // statements with their arguments written in
	// files are served to ExecContext's LOAD DATA statements (Serve).
	files map[string][]byte
}

var (
	_ driver.Conn              = (*Conn)(nil)
	_ driver.ConnBeginTx       = (*Conn)(nil)
	_ driver.ExecerContext     = (*Conn)(nil)
	_ driver.QueryerContext    = (*Conn)(nil)
	_ driver.Pinger            = (*Conn)(nil)
	_ driver.SessionResetter   = (*Conn)(nil)
	_ driver.Validator         = (*Conn)(nil)
	_ driver.NamedValueChecker = (*Conn)(nil)
	_ driver.Result            = result{}
	_ driver.Rows              = (*rows)(nil)
	_ driver.RowsNextResultSet = (*rows)(nil)
	_ driver.Tx                = tx{}
)

// ConnectionID is the server's id of the connection.
func (c *Conn) ConnectionID() uint32 { return c.wc.ConnectionID() }

// Run sends q (one or more statements) and returns the rows each affected.
// files serves the LOCAL INFILE requests of its LOAD DATA statements.
// A round trip sent ahead (Send) and not received by its sender is undone
// first: its answer read and dropped, and its transaction rolled back.
func (c *Conn) Run(ctx context.Context, q []byte, files wire.Files) ([]int64, error) {
	return c.RunSent(ctx, q, files, nil)
}

// RunSent is Run calling sent, when set, once q is written and before its
// answer is read: a caller may send a round trip behind q then (SendAfter,
// from sent or another goroutine), which the server runs right after q.
func (c *Conn) RunSent(ctx context.Context, q []byte, files wire.Files, sent func()) ([]int64, error) {
	if err := c.Settle(ctx); err != nil {
		return nil, err
	}
	if err := c.Send(ctx, q); err != nil {
		return nil, err
	}
	if sent != nil {
		sent()
	}
	return c.Receive(ctx, files)
}

// Settle undoes round trips sent ahead whose answers nobody will read (a
// batch sent ahead of its turn and then given up): their answers are
// dropped, and what they wrote is rolled back, so that no later statement
// (a START TRANSACTION, which commits what is open) can commit it. Run and
// every database/sql call settle first.
func (c *Conn) Settle(ctx context.Context) error {
	if c.wc.Pending() == 0 {
		return nil
	}
	for c.wc.Pending() > 0 {
		if _, err := c.Receive(ctx, nil); err != nil && sqlerr.Code(err) == 0 {
			return err
		}
	}
	if err := c.Send(ctx, []byte("ROLLBACK")); err != nil {
		return err
	}
	_, err := c.Receive(ctx, nil)
	return err
}

// Send writes round trip q without waiting for its answer; Receive reads
// the answers in the order they were sent.
func (c *Conn) Send(ctx context.Context, q []byte) error {
	return c.SendAfter(ctx, nil, q)
}

// SendAfter is Send of prefix followed by q, in one round trip: prefix is
// written in front of q without a copy of either. It may run beside a
// Receive in another goroutine (see wire.Conn.SendQuery); ctx is checked
// before the write only (a Receive's context interrupts both).
func (c *Conn) SendAfter(ctx context.Context, prefix, q []byte) error {
	if len(q) == 0 {
		return errors.New("wiresql: empty statement")
	}
	if !c.wc.Usable() && c.wc.Pending() == 0 {
		return driver.ErrBadConn // nothing sent: the pool may try another
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.wc.SendQuery(prefix, q)
}

// Receive reads the answer to the oldest round trip sent and not read: the
// rows each of its statements affected, up to a failed one.
func (c *Conn) Receive(ctx context.Context, files wire.Files) ([]int64, error) {
	err := c.wc.WithContext(ctx, func() error { return c.wc.ReadAnswer(&c.ans, files) })
	counts := append([]int64(nil), c.ans.Counts...)
	return counts, err
}

// Pending is the number of round trips sent and not received yet (a round
// trip being received counts until its answer is read whole).
func (c *Conn) Pending() int { return c.wc.Pending() }

// Prepare is not supported: arguments are written into the statement.
func (c *Conn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("wiresql: prepared statements are not supported")
}

// Close closes the connection.
func (c *Conn) Close() error { return c.wc.Close() }

// Begin implements driver.Conn.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx starts a transaction with the session's isolation level.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if opts.Isolation != driver.IsolationLevel(0) {
		return nil, errors.New("wiresql: only the session's isolation level is supported")
	}
	q := "START TRANSACTION"
	if opts.ReadOnly {
		q += " READ ONLY"
	}
	if _, err := c.Run(ctx, []byte(q), nil); err != nil {
		return nil, err
	}
	return tx{c}, nil
}

type tx struct{ c *Conn }

func (t tx) Commit() error {
	_, err := t.c.Run(context.Background(), []byte("COMMIT"), nil)
	return err
}

func (t tx) Rollback() error {
	_, err := t.c.Run(context.Background(), []byte("ROLLBACK"), nil)
	return err
}

// ExecContext implements driver.ExecerContext.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	q, err := c.statement(query, args)
	if err != nil {
		return nil, err
	}
	var files wire.Files
	if len(c.files) > 0 {
		files = c.served
	}
	counts, err := c.Run(ctx, q, files)
	if err != nil {
		return nil, err
	}
	r := result{counts: counts, lastID: int64(c.ans.LastInsertID)}
	return r, nil
}

// QueryContext implements driver.QueryerContext: the first result set,
// read whole (the applier's queries return a few rows).
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, err := c.statement(query, args)
	if err != nil {
		return nil, err
	}
	if _, err := c.Run(ctx, q, nil); err != nil {
		return nil, err
	}
	return &rows{cols: c.ans.Columns, data: c.ans.Rows}, nil
}

// Ping implements driver.Pinger.
func (c *Conn) Ping(ctx context.Context) error {
	_, err := c.Run(ctx, []byte("DO 1"), nil)
	return err
}

// ResetSession keeps the session as it is (binlane's sessions are set up
// once, when the connection is made); a broken connection is dropped.
func (c *Conn) ResetSession(context.Context) error {
	if !c.IsValid() {
		return driver.ErrBadConn
	}
	return nil
}

// IsValid reports whether the connection may go back to the pool: not
// broken, and no answer left unread.
func (c *Conn) IsValid() bool { return c.wc.Usable() && c.wc.Pending() == 0 }

// CheckNamedValue accepts what statement writes.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	switch nv.Value.(type) {
	case nil, int64, uint64, float64, bool, []byte, string, time.Time:
		return nil
	}
	v, err := driver.DefaultParameterConverter.ConvertValue(nv.Value)
	if err != nil {
		return err
	}
	nv.Value = v
	return nil
}

// statement writes args into query, one for each '?' in order (as
// go-sql-driver's interpolation does: the statements binlane passes
// arguments to have no '?' of their own).
func (c *Conn) statement(query string, args []driver.NamedValue) ([]byte, error) {
	if len(args) == 0 {
		return unsafe.Slice(unsafe.StringData(query), len(query)), nil
	}
	b := c.buf[:0]
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] != '?' {
			b = append(b, query[i])
			continue
		}
		if n == len(args) {
			return nil, fmt.Errorf("wiresql: more placeholders than the %d arguments", len(args))
		}
		var err error
		if b, err = appendValue(b, args[n].Value); err != nil {
			return nil, err
		}
		n++
	}
	if n != len(args) {
		return nil, fmt.Errorf("wiresql: %d arguments for %d placeholders", len(args), n)
	}
	c.buf = b
	return b, nil
}

// appendValue writes v as a literal that reads the same in every sql_mode.
func appendValue(b []byte, v driver.Value) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case float64:
		return strconv.AppendFloat(b, v, 'e', -1, 64), nil
	case bool:
		if v {
			return append(b, '1'), nil
		}
		return append(b, '0'), nil
	case []byte:
		return sqlquote.AppendHex(b, "binary", v), nil
	case string:
		return sqlquote.AppendString(b, v), nil
	case time.Time:
		return v.UTC().AppendFormat(append(b, '\''), "2006-01-02 15:04:05.999999'"), nil
	}
	return nil, fmt.Errorf("wiresql: cannot write an argument of type %T", v)
}

type result struct {
	counts []int64
	lastID int64
}

func (r result) LastInsertId() (int64, error) { return r.lastID, nil }

// RowsAffected is the last statement's count.
func (r result) RowsAffected() (int64, error) {
	if len(r.counts) == 0 {
		return 0, nil
	}
	return r.counts[len(r.counts)-1], nil
}

type rows struct {
	cols []string
	data [][][]byte
	i    int
}

func (r *rows) Columns() []string { return r.cols }
func (r *rows) Close() error      { return nil }

func (r *rows) Next(dest []driver.Value) error {
	if r.i >= len(r.data) {
		return io.EOF
	}
	for j, v := range r.data[r.i] {
		if v == nil {
			dest[j] = nil
		} else {
			dest[j] = v
		}
	}
	r.i++
	return nil
}

func (r *rows) HasNextResultSet() bool { return false }
func (r *rows) NextResultSet() error   { return io.EOF }

// Serve makes the connection's statements read data as LOCAL INFILE name
// (ExecContext; Run takes its files per round trip) until done is called.
func (c *Conn) Serve(name string, data []byte) (done func()) {
	if c.files == nil {
		c.files = map[string][]byte{}
	}
	c.files[name] = data
	return func() { delete(c.files, name) }
}

// served is the Files of ExecContext.
func (c *Conn) served(name string) ([]byte, bool) {
	data, ok := c.files[name]
	return data, ok
}
