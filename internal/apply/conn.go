package apply

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"unsafe"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/rowsql"
)

// OpenPool opens the pool worker connections to the target come from:
// every setting of the target's address (TLS included) as package dsn makes
// it, each connection in session (dsn.ApplySession: the session rows are
// written in, also on a connection the pool dials again), plus
// multi-statement round trips and affected rows counted as matched rows
// (so an UPDATE that finds its row reports 1 even when nothing changes).
func OpenPool(target dsn.DSN, conns int, session dsn.Session) (*sql.DB, error) {
	db, err := target.OpenSession(session, "", func(c *mysql.Config) {
		c.MultiStatements = true
		c.ClientFoundRows = true
		c.InterpolateParams = false
		c.ParseTime = false
	})
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
// affected. The SQL text is passed without a copy: the driver writes it to
// the socket and keeps no reference. The statements' LOAD DATA files are
// served from memory while the round trip runs.
func (c *targetConn) exec(ctx context.Context, sqlText []byte, stmts []rowsql.Stmt) ([]int64, error) {
	if len(sqlText) == 0 {
		return nil, nil
	}
	for _, st := range stmts {
		if st.File != nil {
			name, data := strings.TrimPrefix(st.FileName, infileScheme), st.File
			mysql.RegisterReaderHandler(name, func() io.Reader { return bytes.NewReader(data) })
			defer mysql.DeregisterReaderHandler(name)
		}
	}
	var counts []int64
	err := c.conn.Raw(func(dc any) error {
		ex, ok := dc.(driver.ExecerContext)
		if !ok {
			return errors.New("driver connection cannot execute statements")
		}
		res, err := ex.ExecContext(ctx, unsafe.String(&sqlText[0], len(sqlText)), nil)
		if err != nil {
			return err
		}
		if mr, ok := res.(mysql.Result); ok {
			counts = mr.AllRowsAffected()
		}
		return nil
	})
	return counts, err
}

// rollback ends a transaction and puts back the session settings a batch
// may have switched (the writer turns them back only when it finishes a
// batch, and the next batch assumes they are on). A caller that sees an
// error closes and replaces the connection.
func (c *targetConn) rollback(ctx context.Context) error {
	_, err := c.conn.ExecContext(ctx, rollbackSQL)
	return err
}

// infileScheme starts the name of a file the driver reads from a
// registered io.Reader instead of the disk. The registry is the driver's
// and process-wide: names carry a random part of the worker's own
// (newInfilePrefix), so concurrent workers and streams never share one;
// a target asking for any other file is refused by the driver.
const infileScheme = "Reader::"

func newInfilePrefix() string {
	return fmt.Sprintf("%sbinlane-%016x-", infileScheme, rand.Uint64())
}

const rollbackSQL = "ROLLBACK; SET SESSION foreign_key_checks=1, check_constraint_checks=0"
