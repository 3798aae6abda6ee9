// Package sqlerr is binlane's one vocabulary of MySQL and MariaDB server
// error codes: their names, and what each means for a replicator — a lost
// connection worth a reconnect, a transient conflict worth re-running the
// transaction, a target whose schema does not match, or a failure no retry
// can heal. Codes that mean different things on the two flavors (4031) are
// classified per flavor.
//
// The package is pure: it inspects errors and must never talk to a server.
package sqlerr

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
)

// Server error codes binlane looks at.
const (
	DBCreateExists               = 1007 // ER_DB_CREATE_EXISTS
	DBDropExists                 = 1008 // ER_DB_DROP_EXISTS
	TooManyConnections           = 1040 // ER_CON_COUNT_ERROR
	DBAccessDenied               = 1044 // ER_DBACCESS_DENIED_ERROR
	AccessDeniedError            = 1045 // ER_ACCESS_DENIED_ERROR
	BadNull                      = 1048 // ER_BAD_NULL_ERROR
	UnknownDB                    = 1049 // ER_BAD_DB_ERROR
	TableExists                  = 1050 // ER_TABLE_EXISTS_ERROR
	UnknownTable                 = 1051 // ER_BAD_TABLE_ERROR
	ServerShutdown               = 1053 // ER_SERVER_SHUTDOWN
	UnknownColumn                = 1054 // ER_BAD_FIELD_ERROR
	DupColumn                    = 1060 // ER_DUP_FIELDNAME
	DupKeyName                   = 1061 // ER_DUP_KEYNAME
	DupEntry                     = 1062 // ER_DUP_ENTRY
	DupKey                       = 1022 // ER_DUP_KEY
	KeyColumnDoesNotExist        = 1072 // ER_KEY_COLUMN_DOES_NOT_EXITS
	CantDropField                = 1091 // ER_CANT_DROP_FIELD_OR_KEY
	NoSuchThread                 = 1094 // ER_NO_SUCH_THREAD: KILL of a connection that is gone
	TableAccessDenied            = 1142 // ER_TABLEACCESS_DENIED_ERROR
	ColumnAccessDenied           = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	NoSuchTable                  = 1146 // ER_NO_SUCH_TABLE
	AbortedConnection            = 1152 // ER_ABORTING_CONNECTION
	PacketTooLarge               = 1153 // ER_NET_PACKET_TOO_LARGE
	NetReadError                 = 1158 // ER_NET_READ_ERROR
	NetReadInterrupted           = 1159 // ER_NET_READ_INTERRUPTED
	NetWriteError                = 1160 // ER_NET_ERROR_ON_WRITE
	NetWriteInterrupted          = 1161 // ER_NET_WRITE_INTERRUPTED
	DupUnique                    = 1169 // ER_DUP_UNIQUE
	NewAbortingConnection        = 1184 // ER_NEW_ABORTING_CONNECTION
	KeyDoesNotExist              = 1176 // ER_KEY_DOES_NOT_EXITS
	UnknownSystemVar             = 1193 // ER_UNKNOWN_SYSTEM_VARIABLE
	TooManyUserConns             = 1203 // ER_TOO_MANY_USER_CONNECTIONS
	LockWaitTimeout              = 1205 // ER_LOCK_WAIT_TIMEOUT
	Deadlock                     = 1213 // ER_LOCK_DEADLOCK
	RowIsReferenced              = 1217 // ER_ROW_IS_REFERENCED
	SpecificAccessDenied         = 1227 // ER_SPECIFIC_ACCESS_DENIED_ERROR
	MasterFatalReading           = 1236 // ER_MASTER_FATAL_ERROR_READING_BINLOG
	SubqueryNotOneRow            = 1242 // ER_SUBQUERY_NO_1_ROW: also a pipelined round trip's guard refusing (position.AppendCommittedGuard)
	DataOutOfRange               = 1264 // ER_WARN_DATA_OUT_OF_RANGE
	QueryInterrupted             = 1317 // ER_QUERY_INTERRUPTED
	NoDefaultForField            = 1364 // ER_NO_DEFAULT_FOR_FIELD
	DataTooLong                  = 1406 // ER_DATA_TOO_LONG
	TableDefChanged              = 1412 // ER_TABLE_DEF_CHANGED
	BinlogUnsafeRoutine          = 1418 // ER_BINLOG_UNSAFE_ROUTINE
	BinlogCreateRoutineNeedSuper = 1419 // ER_BINLOG_CREATE_ROUTINE_NEED_SUPER
	XAUnknownXID                 = 1397 // ER_XAER_NOTA
	XADupID                      = 1440 // ER_XAER_DUPID
	RowIsReferenced2             = 1451 // ER_ROW_IS_REFERENCED_2
	NoReferencedRow2             = 1452 // ER_NO_REFERENCED_ROW_2
	AutoincReadFailed            = 1467 // ER_AUTOINC_READ_FAILED
	DupEntryWithKeyName          = 1586 // ER_DUP_ENTRY_WITH_KEY_NAME
	DupFKName                    = 1826 // ER_FK_DUP_NAME
	ConnectionKilled             = 1927 // MariaDB ER_CONNECTION_KILLED
	StatementTimeout             = 1969 // MariaDB ER_STATEMENT_TIMEOUT
	ReadOnly                     = 1290 // ER_OPTION_PREVENTS_STATEMENT: the server runs with --read-only (or another option forbids it)
	ParseError                   = 1064 // ER_PARSE_ERROR
	InsufficientHistory          = 159  // HA_ERR_TABLE_DEF_CHANGED as MariaDB reports it: a read view older than a concurrent ALTER ("InnoDB: insufficient history for index")
	NoSuchRoutine                = 1305 // ER_SP_DOES_NOT_EXIST
	WrongObjectType              = 1347 // ER_WRONG_OBJECT: a table where a view was named
	NoSuchDefiner                = 1449 // ER_NO_SUCH_USER: the DEFINER account does not exist (a note on CREATE)
	NoSuchEvent                  = 1539 // ER_EVENT_DOES_NOT_EXIST
	NotSequence                  = 4089 // MariaDB ER_NOT_SEQUENCE
	// Code4031 is ER_CLIENT_INTERACTION_TIMEOUT on MySQL 8.0.24+ (the
	// server dropped an idle client) but ER_REFERENCED_TRG_DOES_NOT_EXIST
	// on MariaDB (a trigger statement failed): never classify it without
	// knowing the flavor.
	Code4031 = 4031
)

// Flavor says which server an error came from, where codes differ.
type Flavor uint8

const (
	// Unknown flavor: codes that differ between flavors are not trusted.
	Unknown Flavor = iota
	MariaDB
	MySQL
)

// coder is implemented by errors from binlane's own protocol client
// (wire.ServerError).
type coder interface{ ServerCode() uint16 }

// Code returns the server error number in err's chain, or 0.
func Code(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	var c coder
	if errors.As(err, &c) {
		return c.ServerCode()
	}
	return 0
}

// Message is the server's own words in err (the whole error when it
// carries none).
func Message(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Message
	}
	var m interface{ ServerMessage() string }
	if errors.As(err, &m) {
		return m.ServerMessage()
	}
	return err.Error()
}

// Is reports whether err carries one of the codes.
func Is(err error, codes ...uint16) bool {
	c := Code(err)
	if c == 0 {
		return false
	}
	for _, x := range codes {
		if c == x {
			return true
		}
	}
	return false
}

// ConnectionLost reports errors after which the connection (or the
// server) is gone, but a new connection may get through: the server shut
// down or restarted, killed the connection, was too busy to accept it, or
// the network failed. The work in flight on that connection was rolled back.
func ConnectionLost(err error, f Flavor) bool {
	if err == nil {
		return false
	}
	switch Code(err) {
	case 0:
	case TooManyConnections, TooManyUserConns, ServerShutdown, AbortedConnection, NetReadError,
		NetReadInterrupted, NetWriteError, NetWriteInterrupted, ConnectionKilled:
		return true
	case Code4031:
		return f == MySQL
	default:
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}

// Transient reports conflicts that re-running the same transaction can get
// past: it lost a lock-wait or deadlock race, or its statement was
// interrupted (KILL QUERY).
func Transient(err error) bool {
	return Is(err, LockWaitTimeout, Deadlock, QueryInterrupted)
}

// SchemaMismatch reports errors that say the target's tables are not what
// the plan assumed: a table, column or database missing, a key or
// constraint the plan did not know of, a value a column cannot hold. After
// such an error the target's definitions are worth reading again.
func SchemaMismatch(err error) bool {
	return Is(err, NoSuchTable, UnknownColumn, UnknownDB, DupEntry, NoReferencedRow2, RowIsReferenced2,
		RowIsReferenced, BadNull, NoDefaultForField, DataTooLong, DataOutOfRange)
}

// PrivilegeMissing reports a missing privilege.
func PrivilegeMissing(err error) bool {
	return Is(err, AccessDeniedError, DBAccessDenied, TableAccessDenied, ColumnAccessDenied, SpecificAccessDenied)
}

// Interrupted reports a code a source logs a statement with when the
// statement was cut short (killed, timed out, the server shut down, the
// client went away): it did an unknown part of its work there, so a
// replica cannot reproduce it.
func Interrupted(code uint16) bool {
	switch code {
	case NetReadError, NetWriteError, QueryInterrupted, StatementTimeout, ConnectionKilled, ServerShutdown,
		NewAbortingConnection:
		return true
	}
	return false
}

// SameReplicationError reports whether a replica that got actual for a
// statement the source logged with expected ended it the same way. The
// duplicate-key errors count as one, as they do for MariaDB's own replica:
// which of them a server reports depends on how it found the duplicate.
func SameReplicationError(expected, actual uint16) bool {
	if expected == actual {
		return true
	}
	dup := func(c uint16) bool {
		return c == DupEntry || c == DupEntryWithKeyName || c == DupKey || c == DupUnique || c == AutoincReadFailed
	}
	return dup(expected) && dup(actual)
}
