package dsn

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/wiresql"
)

// Session is how the connections of one role are set up once connected:
// system variables, and the statements for what no variable can say. A
// pool opened with OpenSession gives every connection it makes (a re-
// dialed one too) the session: the variables go to the driver as
// parameters, which it sets at connect, and the statements run right
// after. A connection borrowed from a pool shared with other roles gets it
// from Set.
type Session struct {
	// Role names the session in errors: "apply", "verify", ...
	Role  string
	vars  []sessionVar
	stmts []string
	// optional are statements the server may refuse for a privilege the
	// account lacks or a variable it does not have (refusedOptional):
	// the session then goes on without them.
	optional []string
}

// sessionVar is a system variable and its value as SQL (a string value
// quoted).
type sessionVar struct{ name, value string }

// applySQLMode is the sql_mode rows are applied with: strict, so a value
// the target cannot hold is an error instead of a silent truncation, but
// without the zero-date rules, so every value the source stored (zero and
// invalid dates included) is accepted; NO_AUTO_VALUE_ON_ZERO keeps explicit
// zeros in auto-increment columns.
const applySQLMode = "STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION"

// applyClientCharset is the apply session's character_set_client. With a
// multi-byte one (utf8mb4) the server's lexer asks the charset at every
// byte of a string literal whether a multi-byte character starts there,
// and again while it removes the escapes, a tenth to a quarter of the
// target's CPU for a statement with a 10 KB JSON document
// (apply.BenchmarkWideLiterals). binary reads each byte as itself, which
// changes no value binlane sends:
//   - every row value carries its column's charset introducer
//     (_utf8mb4'..', _latin1'..', _binary'..') or is ASCII, and its escapes
//     (sqlquote.AppendEscaped) work byte by byte;
//   - a name, or a literal without an introducer (the position table's),
//     goes from binary to utf8 (the system charset, the connection's) as
//     the same bytes, so UTF-8 names and text arrive unchanged;
//   - a string parameter of a prepared statement stays a binary string,
//     which a comparison or a column takes as bytes of its own charset:
//     UTF-8 text is the same only against utf8 columns (binlane's own
//     tables are utf8mb4, PROCESSLIST's INFO utf8), and binlane binds none
//     against a user's column;
//   - a statement from the binlog runs in its own source session's
//     character sets (package session), and Restore puts binary back.
const applyClientCharset = "binary"

// ApplySession is the session rows are written to the target in (package
// apply). CHECK constraints are off: MariaDB's own replica applies row
// events without evaluating them (a row the source stored is stored, also
// one a session with check_constraint_checks=0 wrote, or one a target-only
// constraint would refuse), and evaluating them cost a fifth of the
// target's CPU on JSON documents (json_valid). lockWait is
// innodb_lock_wait_timeout in seconds; without binlogApplied what binlane
// writes stays out of the target's binlog.
//
// character_set_client is binary (applyClientCharset): the statement text
// is read as bytes, which is what makes wide values cheap to read.
func ApplySession(binlogApplied bool, lockWait int) Session {
	s := Session{Role: "apply", vars: []sessionVar{
		{"sql_mode", sqlquote.String(applySQLMode)}, {"time_zone", "'+00:00'"}, {"foreign_key_checks", "1"}, {"unique_checks", "1"},
		{"check_constraint_checks", "0"}, {"innodb_lock_wait_timeout", strconv.Itoa(lockWait)}, {"autocommit", "1"},
		{"character_set_client", applyClientCharset}, {"character_set_connection", "utf8mb4"}, {"character_set_results", "utf8mb4"},
		{"collation_connection", "utf8mb4_general_ci"},
	}}
	if !binlogApplied {
		s.vars = append(s.vars, sessionVar{"sql_log_bin", "0"})
	}
	// The isolation level's variable is tx_isolation on MariaDB before
	// 11.1 and MySQL before 8.0, transaction_isolation after: the
	// statement works on all.
	s.stmts = []string{"SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"}
	if binlogApplied {
		// Keep binlane's statements out of the target's binlog as
		// Annotate_rows events, where MariaDB writes each one's text before
		// its rows: they carry whole row images, so the annotations
		// doubled what the target wrote to its binlog, a quarter of its CPU
		// on wide rows. The rows stay logged (MariaDB's own replica
		// annotates with the source's statement, which binlane does not
		// have). It needs BINLOG ADMIN, an optional grant; MySQL has no
		// such variable (its rows_query events are off by default).
		s.optional = []string{"SET SESSION binlog_annotate_row_events = 0"}
	}
	return s
}

// VerifySession makes both servers render values the same way (package
// verify):
//   - time_zone UTC: TIMESTAMP values print in UTC, where no two instants
//     share a text (a local zone repeats an hour when DST ends);
//   - utf8mb4: key values come back, and go back as bounds, without loss;
//   - an empty sql_mode: no PAD_CHAR_TO_FULL_LENGTH (which changes CHAR
//     values), no ANSI_QUOTES, no Oracle-mode CONCAT;
//   - a read-only transaction mode: the server refuses any write, a second
//     guard behind the fact that verify only sends SELECTs.
func VerifySession() Session {
	return Session{Role: "verify", vars: []sessionVar{{"time_zone", "'+00:00'"}, {"sql_mode", "''"}},
		stmts: []string{
			// NAMES sets the three character sets and the charset's
			// default collation as the server has it
			// (character_set_collations), which no one variable does.
			"SET NAMES utf8mb4",
			// tx_read_only or transaction_read_only by server and version,
			// like the isolation level (ApplySession).
			"SET SESSION TRANSACTION READ ONLY",
		}}
}

// CopyReadSession is how the copy reads chunks from the source (package
// copier): text values as the table stores them (character_set_results
// binary: no conversion), TIMESTAMP in UTC like ApplySession.
func CopyReadSession() Session {
	return Session{Role: "copy read", vars: []sessionVar{{"character_set_results", "binary"}, {"time_zone", "'+00:00'"}}}
}

// CutoverSession is the cut-over's (package cutover): the server's own
// defaults and the address's variables. It reads and sets what an
// administrator would (read_only, the accounts' privileges, the objects'
// definitions in their own sql_mode and time zone), and its verify steps
// take their connections into VerifySession.
func CutoverSession() Session { return Session{Role: "cut-over"} }

// ThrottleSession is the throttle's, on the source and the replicas it
// measures (package throttle): the server's defaults, for the status
// statements it reads.
func ThrottleSession() Session { return Session{Role: "throttle"} }

// Restore is the statement that puts a connection of the session back
// after a statement ran there in its source session's context (package
// session): the session's variables, and those that context may set
// beyond them (mariadb: two more MariaDB has).
func (s Session) Restore(mariadb bool) string {
	parts := make([]string, 0, len(s.vars)+10)
	for _, v := range s.vars {
		parts = append(parts, v.name+" = "+v.value)
	}
	parts = append(parts, "timestamp = DEFAULT", "insert_id = 0", "sql_auto_is_null = 0",
		"explicit_defaults_for_timestamp = DEFAULT", "auto_increment_increment = DEFAULT", "auto_increment_offset = DEFAULT",
		"lc_time_names = DEFAULT", "collation_server = DEFAULT")
	if mariadb {
		parts = append(parts, "sql_if_exists = 0", "system_versioning_insert_history = 0")
	}
	return "SET SESSION " + strings.Join(parts, ", ")
}

// Statements are the statements Set runs: the variables in one SET, then
// the statements.
func (s Session) Statements() []string {
	var out []string
	if len(s.vars) > 0 {
		parts := make([]string, len(s.vars))
		for i, v := range s.vars {
			parts[i] = v.name + " = " + v.value
		}
		out = append(out, "SET SESSION "+strings.Join(parts, ", "))
	}
	return append(out, s.stmts...)
}

// Set sets the session up on a connection borrowed from a pool that other
// roles share. A connection handed back to that pool carries the session
// to its next user: close it with driver.ErrBadConn instead where that
// matters.
func (s Session) Set(ctx context.Context, c *sql.Conn) error {
	for _, q := range s.Statements() {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("set up the %s session: %s: %w", s.Role, q, err)
		}
	}
	for _, q := range s.optional {
		if _, err := c.ExecContext(ctx, q); err != nil && !refusedOptional(err) {
			return fmt.Errorf("set up the %s session: %s: %w", s.Role, q, err)
		}
	}
	return nil
}

// OpenSession is OpenDBWith (db and tune as there) with every connection
// of the pool set up as s: its variables are the driver's parameters,
// in place of the address's of the same name, and its statements run as
// the connection is made.
func (d DSN) OpenSession(s Session, db string, tune func(*mysql.Config)) (*sql.DB, error) {
	c, err := d.SessionConnector(s, db, tune)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// SessionConnector is what OpenSession opens its pool with.
func (d DSN) SessionConnector(s Session, db string, tune func(*mysql.Config)) (driver.Connector, error) {
	c, err := d.Connector(db, func(cfg *mysql.Config) {
		if tune != nil {
			tune(cfg)
		}
		s.setParams(cfg)
	})
	if err != nil {
		return nil, err
	}
	return &sessionConnector{Connector: c, s: s}, nil
}

// setParams makes the session's variables the driver's parameters, in
// place of the address's of the same name.
func (s Session) setParams(cfg *mysql.Config) {
	if cfg.Params == nil && len(s.vars) > 0 {
		cfg.Params = map[string]string{}
	}
	for _, v := range s.vars {
		cfg.Params[v.name] = v.value
	}
}

// sessionConnector runs the session's statements on each new connection
// and names the session when the server refuses one of its variables.
type sessionConnector struct {
	driver.Connector
	s Session
}

func (c *sessionConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && refusedVariable(me.Number) && len(c.s.vars) > 0 {
			return nil, fmt.Errorf("set up the %s session (%s, with the address's variables): %w", c.s.Role, c.s.Statements()[0], err)
		}
		return nil, err
	}
	for i, q := range append(c.s.stmts[:len(c.s.stmts):len(c.s.stmts)], c.s.optional...) {
		if err := c.exec(ctx, conn, q, i >= len(c.s.stmts)); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return conn, nil
}

// exec runs one of the session's statements on a new connection; an
// optional one may be refused (refusedOptional).
func (c *sessionConnector) exec(ctx context.Context, conn driver.Conn, q string, optional bool) error {
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		return fmt.Errorf("set up the %s session: the driver's connection cannot execute statements", c.s.Role)
	}
	if _, err := ex.ExecContext(ctx, q, nil); err != nil && !(optional && refusedOptional(err)) {
		return fmt.Errorf("set up the %s session: %s: %w", c.s.Role, q, err)
	}
	return nil
}

// refusedOptional tells the errors an optional statement may end with: a
// privilege the account lacks (1227), a variable the server lacks (1193).
func refusedOptional(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1227 || me.Number == 1193)
}

// refusedVariable tells the server errors of a SET that the driver sends
// for the parameters at connect: a privilege it needs (1227, sql_log_bin),
// an unknown variable (1193), a value it refuses (1231, 1232).
func refusedVariable(code uint16) bool {
	return code == 1227 || code == 1193 || code == 1231 || code == 1232
}

// OpenStatementSession is OpenSession on binlane's own client (package
// wiresql), for sessions that run multi-statement round trips and read
// every statement's row count: the applier's. A new connection runs SET
// NAMES when the address names a charset other than utf8mb4 (the
// handshake's), one SET of the address's variables with the session's in
// place of those of the same name, then the session's statements.
func (d DSN) OpenStatementSession(s Session) (*sql.DB, error) {
	cfg, err := d.WireConfig()
	if err != nil {
		return nil, err
	}
	c := &wiresql.Connector{Config: cfg, Setup: d.statementSetup(s), Optional: s.optional}
	return sql.OpenDB(&statementConnector{Connector: c, d: d, s: s}), nil
}

// statementSetup is what a new connection of OpenStatementSession runs.
func (d DSN) statementSetup(s Session) []string {
	var setup []string
	if cs := d.Params["charset"]; cs != "" && !strings.EqualFold(cs, "utf8mb4") || d.Params["collation"] != "" {
		names := "SET NAMES " + cmp.Or(d.Params["charset"], "utf8mb4")
		if co := d.Params["collation"]; co != "" {
			names += " COLLATE " + co
		}
		setup = append(setup, names)
	}
	vars := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	for _, name := range slices.Sorted(maps.Keys(d.Params)) {
		if name != "charset" && name != "collation" {
			set(name, d.Params[name])
		}
	}
	for _, v := range s.vars {
		set(v.name, v.value)
	}
	if len(order) > 0 {
		parts := make([]string, len(order))
		for i, name := range order {
			parts[i] = name + " = " + vars[name]
		}
		setup = append(setup, "SET SESSION "+strings.Join(parts, ", "))
	}
	return append(setup, s.stmts...)
}

// statementConnector names the session and the TLS mode in failures.
type statementConnector struct {
	*wiresql.Connector
	d DSN
	s Session
}

func (c *statementConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err == nil {
		return conn, nil
	}
	if sqlerr.Code(err) != 0 {
		return nil, fmt.Errorf("set up the %s session: %w", c.s.Role, err)
	}
	return nil, c.d.AnnotateTLS(err)
}
