// Package txn turns a stream of binlog events into transactions: the unit
// that flows from the source to the applier. The Assembler groups events
// from GTID to XID/COMMIT, drops tables the filter does not select, decodes
// row images once, and classifies statements (DDL to run, trigger and event
// DDL to defer, account statements to skip, row changes logged as
// statements to run as the source ran them or to refuse when their result
// could differ (dml.go, dmlrefs.go), statements on a source session's
// temporary tables to run where its temporary tables are (temp.go)).
//
// Every transaction travels the same typed path, however large: one or more
// Parts on one channel, the first with First set, the last with Last set.
// A transaction that fits in memory is a single Part; a larger one is cut
// into parts the applier writes as they come.
//
// The package owns grouping and classification; it must never talk to the
// target, and never advance a position itself: positions move only when the
// applier commits.
package txn

import (
	"fmt"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Txn is one source transaction (an event group): what is known of it
// besides its content, which travels in Parts.
type Txn struct {
	// Seq numbers transactions in stream order, from 1, within one run.
	Seq uint64
	// GTID is zero for anonymous (MySQL gtid_mode=OFF) transactions.
	GTID gtid.GTID
	// File and StartPos locate the start of the group in the source's
	// binlog (its GTID event), known from the first part; EndPos its end:
	// for a transaction that arrives in several parts it is set when the
	// last part is sent (the channel send orders the write before the
	// applier's read).
	File     string
	StartPos uint64
	EndPos   uint64
	// Timestamp is the source commit time (seconds), for lag.
	Timestamp uint32
	// TempTables, when set, are the source sessions' temporary tables after
	// this transaction (it changed them), encoded: saved with its position.
	// Set with EndPos.
	TempTables *string

	// Commit-order metadata from the source.
	CommitID       uint64 // MariaDB group-commit id (0 when absent)
	LastCommitted  int64  // MySQL logical clock
	SequenceNumber int64
	Waited         bool // MariaDB: the transaction waited on a lock on the source

	// RolledBack is set when the group ended with ROLLBACK: only changes of
	// tables that are not transactional on the source stayed there.
	RolledBack bool
	// Savepoints is set when the group holds SAVEPOINT / ROLLBACK TO items,
	// which ResolveRollbacks turns into plain row changes.
	Savepoints bool

	// XA is set for the two groups of an XA transaction the source
	// prepared: the prepare (its rows) and the later commit or rollback.
	XA *XA
	// SessionsEnded is set on the first transaction after the source
	// restarted: its sessions, and their temporary tables, are gone.
	SessionsEnded bool
}

// Describe names a transaction by its GTID and where it ends in the
// source's binlog, as errors and logs name it.
func (t *Txn) Describe() string {
	if t.GTID.Flavor != 0 {
		return fmt.Sprintf("%s (source %s:%d)", t.GTID, t.File, t.EndPos)
	}
	return fmt.Sprintf("at source %s:%d", t.File, t.EndPos)
}

// XA says which step of a prepared XA transaction a group is.
type XA struct {
	// ID is the transaction's xid as SQL: X'..',X'..',formatID.
	ID    string
	Phase XAPhase
}

// XAPhase is a step of an XA transaction.
type XAPhase uint8

const (
	XAPrepare  XAPhase = iota + 1 // XA START ... XA END, XA PREPARE: the rows
	XACommit                      // XA COMMIT of a prepared transaction
	XARollback                    // XA ROLLBACK of a prepared transaction
)

func (p XAPhase) String() string {
	switch p {
	case XAPrepare:
		return "XA PREPARE"
	case XACommit:
		return "XA COMMIT"
	case XARollback:
		return "XA ROLLBACK"
	}
	return "XA"
}

// Part is one piece of a transaction on its way to the applier.
type Part struct {
	Txn  *Txn
	Body Body
	// First and Last mark the transaction's first and last part; a
	// transaction held whole is one part with both set.
	First, Last bool
	// Bytes is the memory the part holds (event bytes and decoded values):
	// what queues and windows count.
	Bytes int
	// Abort, on a last part, says the source broke off before the
	// transaction ended: the applier rolls back what it wrote of it, and the
	// source sends the whole transaction again after it reconnects.
	Abort error
	// Chunk, when set, makes the part copied rows instead of a transaction
	// (Txn then only carries the Seq; a chunk has no source position of
	// its own). A table copied in one pass arrives in several parts.
	Chunk *Chunk
	// Mark, on a part without Txn, says the stream holds every transaction
	// before this place in the source's binlog (a heartbeat of an idle
	// source). Only with Config.Marks; the copy's merger consumes them.
	Mark *BinlogPos
}

// BinlogPos is a place in the source's binlog.
type BinlogPos struct {
	File string
	Pos  uint64
}

// Whole reports whether the part is an entire transaction.
func (p *Part) Whole() bool { return p.First && p.Last && p.Abort == nil }

// Body is the content of a transaction (or of one part of it).
type Body struct {
	Items   []Item
	Changes []Change
}

// ItemKind says what an item is.
type ItemKind uint8

const (
	// ItemRows is a run of row changes (Changes[First:Last]) from one rows
	// event.
	ItemRows ItemKind = iota
	// ItemStatement is a statement the target runs as the source did (DDL,
	// or row changes logged as a statement: Statement.DML).
	ItemStatement
	// ItemDeferred is a statement the target must not run while it is a
	// replica (trigger and event DDL): it is recorded for the user to apply
	// at cut-over.
	ItemDeferred
	// ItemSavepoint, ItemRollbackTo and ItemRelease are SAVEPOINT name,
	// ROLLBACK TO name and RELEASE SAVEPOINT name inside a transaction.
	ItemSavepoint
	ItemRollbackTo
	ItemRelease
)

// Item is one step of a transaction in source order.
type Item struct {
	Kind      ItemKind
	Rows      *binlog.RowsEvent // ItemRows
	First     int
	Last      int
	Statement *Statement // ItemStatement, ItemDeferred
	Savepoint string     // ItemSavepoint, ItemRollbackTo, ItemRelease
}

// Change is one row change. Before is nil for inserts and After for
// deletes.
//
// Partial changes come from a source session with binlog_row_image MINIMAL
// or NOBLOB: columns missing from an image are binlog.KindAbsent. An
// update's after image is completed from its before image (a column the
// update did not write kept its value), so a column is absent from it only
// when it is in neither image. An insert's absent columns took their
// defaults on the source; the before image of an update or delete may hold
// no more than the columns that name the row (see rowsql and writeset for
// what that allows).
type Change struct {
	Table   *binlog.TableMap
	Kind    binlog.RowsKind
	Partial bool
	Flags   uint16 // rows event flags (foreign key checks off, ...)
	Before  []binlog.Value
	After   []binlog.Value
}

// Statement is a statement the target must run as is (DDL and the like),
// or one it must keep for later (Deferred).
type Statement struct {
	Schema string // default database of the source session
	Query  string
	// Exec, when set, is what the target runs instead of Query to do what
	// the statement did on the source (see decide).
	Exec string
	// The session context the source ran it in: its status variables, the
	// start time (event header seconds; Status.Micros the fraction), the
	// session's thread id, and the values of the Intvar, Rand and User_var
	// events before it.
	Status    binlog.QueryStatus
	Timestamp uint32
	ThreadID  uint32
	Vars      Vars
	// ErrorCode is the error the statement ended with on the source (0:
	// none). A statement logged with an error did part of its work there;
	// the target must end it with the same error.
	ErrorCode uint16
	// Tables names the tables the statement touches when they could be
	// parsed ("schema.table"); Unknown is set when they could not.
	Tables  []TableName
	Unknown bool
	// Deferred says why a statement is kept instead of run (empty for
	// statements that run).
	Deferred string
	// DML is set for row changes a MIXED or STATEMENT session logged as a
	// statement: the target runs it in the source's session context inside
	// the transaction that saves the position. Tables then names every
	// table it reads or writes, Writes those it writes (the statement's
	// targets), and Calls the names it calls as functions
	// (a stored function's reads and writes are not in its text: the
	// applier checks that none is one).
	DML    bool
	Writes []TableName
	Calls  []TableName
	// Load is the file of a LOAD DATA logged as a statement.
	Load *LoadData
	// Temp is set for a statement that uses its source session's
	// temporary tables: the target runs it on a connection of that
	// session's own, where they are (see TempUse).
	Temp *TempUse
}

// TempUse says how a statement uses its source session's temporary
// tables (see temp.go). The applier keeps, per source session, a target
// connection holding the temporary tables it could build in this run; a
// statement on real tables that reads one it does not have stops the
// stream.
type TempUse struct {
	Server, Thread uint32
	// Only is set for a statement about the session's temporary tables
	// only (CREATE TEMPORARY TABLE, DROP TEMPORARY TABLE, DML and DDL on
	// them): it changes no replicated table. Otherwise the statement is DML
	// on real tables that reads temporary ones.
	Only         bool
	Create, Drop bool
	// Rebuild is set when the target can build what the statement makes
	// as the source did: not for CREATE TEMPORARY TABLE ... SELECT/LIKE, a
	// rename, or rows read from tables the stream does not replicate (its
	// Writes are then missing on the target).
	Rebuild bool
	// Writes are the temporary tables it creates, changes or drops; Reads
	// the ones it reads (they must be on the target); RealReads the real
	// tables a statement on temporary ones reads.
	Writes, Reads, RealReads []TableName
}

// LoadData is the file of a LOAD DATA logged as a statement: its content
// (the Begin_load_query and Append_block events before it) and where the
// statement names it (see binlog.LoadQuery).
type LoadData struct {
	FileID             uint32
	FileStart, FileEnd uint32
	DupHandling        byte
	Data               []byte
}

// TableName is a schema-qualified table name ("" table for a whole schema).
type TableName struct{ Schema, Table string }

// String writes the name as the source's statements would: `schema`.`table`.
func (n TableName) String() string { return sqlquote.Qualified(n.Schema, n.Table) }

// Vars are the values a source logs before a statement for it to run the
// same on a replica.
type Vars struct {
	InsertID, LastInsertID       uint64
	HasInsertID, HasLastInsertID bool
	Rand                         *binlog.RandEvent
	User                         []*binlog.UserVarEvent
}

// Empty reports whether no value was logged.
func (v *Vars) Empty() bool {
	return !v.HasInsertID && !v.HasLastInsertID && v.Rand == nil && len(v.User) == 0
}

// Text is what the target runs: Exec when set, otherwise Query.
func (s *Statement) Text() string {
	if s.Exec != "" {
		return s.Exec
	}
	return s.Query
}

// HasStatements reports whether any item is a statement to run or defer.
func (b *Body) HasStatements() bool {
	for i := range b.Items {
		if k := b.Items[i].Kind; k == ItemStatement || k == ItemDeferred {
			return true
		}
	}
	return false
}

// Empty reports a body with nothing to apply (every table filtered out):
// only the transaction's position matters.
func (b *Body) Empty() bool { return len(b.Items) == 0 }

// Chunk is rows of one table read from the source in a consistent
// snapshot whose position is Pos: it belongs in the stream right after the
// last transaction Pos contains. The applier writes it there, so that every
// change before it is in its rows and every change after it is applied on
// top (see package copier). A table copied in one pass (Whole) arrives as
// the parts of one ticket, like a transaction sent in parts: Part.Last
// marks its last one.
type Chunk struct {
	Schema, Table string
	Columns       []ChunkColumn
	Rows          [][][]byte // text values, nil for NULL
	// Pos names the snapshot's position (a GTID state or a binlog
	// coordinate), for messages; the merger placed the chunk by it.
	Pos string
	// Key is the table's chunking key and Covers the range of it the chunk
	// copies (both unset for a whole table): the applier hands the range
	// back to the copy when the chunk takes its place in the stream, and
	// its scheduler lets chunks of disjoint ranges write at once.
	Key    []keyrange.Column
	Covers keyrange.Range
	// Whole is set when the chunk is the whole table (copied in one pass).
	Whole bool
	// Bytes is the memory the rows hold.
	Bytes int
	// Build, set by the copy when the chunk takes its place (it completes
	// its table), is the statement that adds the indexes the copy deferred:
	// the applier runs it once the chunk committed, before the table counts
	// as copied.
	Build *IndexBuild
}

// IndexBuild adds the secondary indexes a copy deferred to one table (see
// package provision).
type IndexBuild struct {
	Schema, Table string
	// Keys name the indexes and Definitions define them as SHOW CREATE
	// TABLE does ("UNIQUE KEY `u` (`a`)"), in the order one ALTER TABLE
	// adds them.
	Keys, Definitions []string
	// Neighbours are the tables linked to this one by foreign keys: a
	// statement on them opens this table too, and must not run while the
	// build waits for its metadata lock.
	Neighbours []TableName
}

// Chunk column kinds: how a column's text renders as SQL.
const (
	KindNumber = "number" // digits as they are
	KindQuoted = "quoted" // ASCII text, quoted (temporals)
	KindText   = "text"   // bytes in the column's Charset
	KindBinary = "binary" // bytes
	KindBits   = "bits"   // BIT: bytes as a hex number
)

// ChunkColumn is a column of a chunk and how its text renders as SQL.
type ChunkColumn struct {
	Name string
	Kind string // Kind* below

	Charset string
}
