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
	"github.com/binlane/binlane/internal/sqlerr"
)

// sessionSQLMode is the sql_mode rows are applied with: strict, so a value
// the target cannot hold is an error instead of a silent truncation, but
// without the zero-date rules, so every value the source stored (zero and
// invalid dates included) is accepted; NO_AUTO_VALUE_ON_ZERO keeps explicit
// zeros in auto-increment columns.
const sessionSQLMode = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"

// OpenPool opens the pool worker connections to the target come from:
// every setting of the target's address (TLS included) as package dsn makes
// it, plus multi-statement round trips and affected rows counted as matched
// rows (so an UPDATE that finds its row reports 1 even when nothing
// changes).
func OpenPool(target dsn.DSN, conns int) (*sql.DB, error) {
	connector, err := target.Connector("", func(c *mysql.Config) {
		c.MultiStatements = true
		c.ClientFoundRows = true
		c.InterpolateParams = false
		c.ParseTime = false
	})
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	return db, nil
}

// targetConn is one pinned target connection with its session prepared.
type targetConn struct {
	conn *sql.Conn
	id   int64 // CONNECTION_ID(), to recognize it in lock-wait reports
	// localInfile: the target takes LOAD DATA LOCAL INFILE (its
	// local_infile is ON, the default), so copied chunks are loaded.
	localInfile bool
}

func openConn(ctx context.Context, db *sql.DB, binlogApplied bool, lockWait int) (*targetConn, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to the target: %w", err)
	}
	c := &targetConn{conn: conn}
	if err := c.init(ctx, binlogApplied, lockWait); err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// init sets the session rows are written in. CHECK constraints are off:
// MariaDB's own replica applies row events without evaluating them (a row
// the source stored is stored, also one a session with
// check_constraint_checks=0 wrote, or one a target-only constraint would
// refuse), and evaluating them cost a fifth of the target's CPU on JSON
// documents (json_valid). Statements run in their own event's context on a
// connection of their own (package session).
func (c *targetConn) init(ctx context.Context, binlogApplied bool, lockWait int) error {
	q := fmt.Sprintf("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED;"+
		"%s, innodb_lock_wait_timeout=%d, autocommit=1", sessionSQL(sqlerr.MariaDB, false), lockWait)
	if !binlogApplied {
		q += ";SET SESSION sql_log_bin=0"
	}
	if _, err := c.conn.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("prepare target session: %w", err)
	}
	if err := c.conn.QueryRowContext(ctx, "SELECT CONNECTION_ID(), @@local_infile").Scan(&c.id, &c.localInfile); err != nil {
		return fmt.Errorf("prepare target session: %w", err)
	}
	return nil
}

// sessionSQL sets what rows are written in (see init). restore also puts
// back what a statement's source session context (package session) may
// have set, for rows written after it in the same transaction.
func sessionSQL(flavor sqlerr.Flavor, restore bool) string {
	q := "SET SESSION sql_mode='" + sessionSQLMode + "', time_zone='+00:00', foreign_key_checks=1, unique_checks=1, " +
		"check_constraint_checks=0, character_set_client=utf8mb4, character_set_connection=utf8mb4, " +
		"character_set_results=utf8mb4, collation_connection=utf8mb4_general_ci"
	if restore {
		q += ", timestamp=DEFAULT, insert_id=0, sql_auto_is_null=0, explicit_defaults_for_timestamp=DEFAULT, " +
			"auto_increment_increment=DEFAULT, auto_increment_offset=DEFAULT, lc_time_names=DEFAULT, collation_server=DEFAULT"
		if flavor == sqlerr.MariaDB {
			q += ", sql_if_exists=0, system_versioning_insert_history=0"
		}
	}
	return q
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
