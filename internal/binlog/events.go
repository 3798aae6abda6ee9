package binlog

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sqllex"
)

// Event is one decoded binlog event.
type Event struct {
	Header Header
	// File and Pos locate the event's first byte (Pos is 0 when unknown,
	// e.g. for artificial events).
	File string
	Pos  uint64
	// Data is a pointer to one of the event structs of this package; events
	// binlane does not need are *SkippedEvent.
	Data any
}

// NextPos is the position right after the event in its file.
func (e *Event) NextPos() uint64 { return e.Pos + uint64(e.Header.EventSize) }

// FormatDescriptionEvent describes how the rest of a binlog file is encoded.
type FormatDescriptionEvent struct {
	BinlogVersion   uint16
	ServerVersion   string
	CreateTimestamp uint32
	HeaderLen       byte
	PostHeaderLens  []byte // index = event type - 1
	Checksum        byte   // ChecksumOff, ChecksumCRC32 or ChecksumUndefined
	Flavor          Flavor
	// explicitDefaultsInFlags2: the server records the session's
	// explicit_defaults_for_timestamp in query events' flags2.
	explicitDefaultsInFlags2 bool
}

func (f *FormatDescriptionEvent) postHeaderLen(t EventType) int {
	i := int(t) - 1
	if i < 0 || i >= len(f.PostHeaderLens) {
		return -1
	}
	return int(f.PostHeaderLens[i])
}

// RotateEvent names the file the following events come from.
type RotateEvent struct {
	Position uint64
	NextFile string
	// Fake is set on the artificial rotate a server sends at the start of a
	// dump (timestamp 0): it names the current file, it does not end one.
	Fake bool
}

// XIDEvent commits a transactional event group.
type XIDEvent struct{ XID uint64 }

// QueryEvent is a statement: BEGIN, COMMIT, ROLLBACK, XA commands or DDL.
type QueryEvent struct {
	ThreadID  uint32
	ExecTime  uint32
	ErrorCode uint16
	Schema    string // the session's default database
	Query     []byte
	Status    QueryStatus
	// Load is set for an Execute_load_query event: a statement-based LOAD
	// DATA, whose file the Begin_load_query and Append_block events before
	// it carry.
	Load *LoadQuery
}

// QueryStatus holds the status variables of a query event that decide how
// a statement must be run on the target.
type QueryStatus struct {
	Flags2         uint32
	HasFlags2      bool
	SQLMode        uint64
	HasSQLMode     bool
	ClientCharset  uint16 // collation ids; 0 when absent
	ConnCollation  uint16
	ServerCollat   uint16
	TimeZone       string
	LCTimeNames    uint16
	CharsetDB      uint16
	AutoIncInc     uint16
	AutoIncOffset  uint16
	DDLXid         uint64
	MariaXid       uint64
	GTIDFlags3     byte
	DefaultUtf8mb4 uint16
	// MariaDB is set when a MariaDB server wrote the event (the flags2 bits
	// past the four MySQL shares mean something only then).
	MariaDB bool
	// Micros is the fraction of the second the statement started at (the
	// event header holds the seconds).
	Micros    uint32
	HasMicros bool
	// ExplicitDefaultsTS is the session's explicit_defaults_for_timestamp:
	// from MySQL's status variable, or from Flags2 of a MariaDB version that
	// writes it there. Unset when the source did not record it.
	ExplicitDefaultsTS    bool
	HasExplicitDefaultsTS bool
}

// Flags2 bits (the session's option_bits a source writes to the binlog).
// The values were read off MariaDB 10.11 binlogs: each setting changed
// alone, the bit that moved recorded.
const (
	Flags2AutoIsNull          uint32 = 1 << 14 // sql_auto_is_null=1
	Flags2NoCheckConstraints  uint32 = 1 << 15 // check_constraint_checks=0
	Flags2NotAutocommit       uint32 = 1 << 19 // autocommit=0
	Flags2ExplicitDefaultsTS  uint32 = 1 << 24 // explicit_defaults_for_timestamp=1 (MariaDB)
	Flags2NoForeignKeyChecks  uint32 = 1 << 26 // foreign_key_checks=0
	Flags2RelaxedUniqueChecks uint32 = 1 << 27 // unique_checks=0
	Flags2IfExists            uint32 = 1 << 28 // sql_if_exists=1 (MariaDB)
	Flags2InsertHistory       uint32 = 1 << 30 // system_versioning_insert_history=1 (MariaDB)
)

// QueryKind classifies a query event's statement.
type QueryKind uint8

const (
	QueryOther QueryKind = iota // DDL or another statement
	QueryBegin
	QueryCommit
	QueryRollback
	QueryXA
	QuerySavepoint
)

// Kind classifies the statement by its first keywords, read with the
// lexer the statement's classification uses (sqllex.NewDDL): comments are
// skipped, and the text of an executable comment (/*!…*/) is read as part
// of the statement.
func (q *QueryEvent) Kind() QueryKind {
	// A short statement (BEGIN, COMMIT, ...) converts without allocating.
	l := sqllex.NewDDL(string(q.Query))
	is := strings.EqualFold
	switch word := l.NextWord(); {
	case is(word, "BEGIN"):
		if is(l.NextWord(), "NOT") {
			return QueryOther // BEGIN NOT ATOMIC: a compound statement
		}
		return QueryBegin
	case is(word, "COMMIT"):
		return QueryCommit
	case is(word, "ROLLBACK"):
		w := l.NextWord()
		if is(w, "WORK") {
			w = l.NextWord()
		}
		if is(w, "TO") {
			return QuerySavepoint
		}
		return QueryRollback
	case is(word, "XA"):
		return QueryXA
	case is(word, "SAVEPOINT"):
		return QuerySavepoint
	case is(word, "RELEASE"):
		if is(l.NextWord(), "SAVEPOINT") {
			return QuerySavepoint
		}
	case is(word, "START"):
		if is(l.NextWord(), "TRANSACTION") {
			return QueryBegin
		}
	}
	return QueryOther
}

// XAVerb returns the word after XA in an XA statement (START, END,
// PREPARE, COMMIT, ROLLBACK, RECOVER), upper-cased; "" for any other
// statement.
func (q *QueryEvent) XAVerb() string {
	l := sqllex.NewDDL(string(q.Query))
	if !strings.EqualFold(l.NextWord(), "XA") {
		return ""
	}
	return strings.ToUpper(l.NextWord())
}

// MariaGTIDEvent starts a MariaDB event group.
type MariaGTIDEvent struct {
	GTID         gtid.GTID
	Flags2       byte
	CommitID     uint64 // group-commit id; 0 when absent
	XID          *XAID  // set for XA PREPARE / XA COMMIT groups
	FlagsExtra   byte
	ExtraEngines byte
	SAseqNo      uint64 // start-alter sequence for COMMIT/ROLLBACK ALTER
}

// MariaDB GTID flags2 bits.
const (
	MariaFlStandalone     byte = 1
	MariaFlGroupCommitID  byte = 2
	MariaFlTransactional  byte = 4
	MariaFlAllowParallel  byte = 8
	MariaFlWaited         byte = 16
	MariaFlDDL            byte = 32
	MariaFlPreparedXA     byte = 64
	MariaFlCompletedXA    byte = 128
	mariaFlExtraMultiEng  byte = 1
	mariaFlExtraStartAlt  byte = 2
	mariaFlExtraCommitAlt byte = 4
	mariaFlExtraRollbkAlt byte = 8
)

// Standalone reports a group without BEGIN/COMMIT (DDL or a single statement).
func (g *MariaGTIDEvent) Standalone() bool { return g.Flags2&MariaFlStandalone != 0 }

// AlterPhase says which part of a two-phase ALTER (binlog_alter_two_phase)
// a group is: the ALTER's start, logged when it begins and applied by
// nobody but a replica that runs it concurrently; its commit, logged when
// it succeeded, with the full statement; or its rollback, logged when it
// failed. AlterNone for every other group.
func (g *MariaGTIDEvent) AlterPhase() AlterPhase {
	switch {
	case g.FlagsExtra&mariaFlExtraStartAlt != 0:
		return AlterStart
	case g.FlagsExtra&mariaFlExtraCommitAlt != 0:
		return AlterCommit
	case g.FlagsExtra&mariaFlExtraRollbkAlt != 0:
		return AlterRollback
	}
	return AlterNone
}

// AlterPhase is a part of a two-phase ALTER.
type AlterPhase uint8

// The parts of a two-phase ALTER.
const (
	AlterNone AlterPhase = iota
	AlterStart
	AlterCommit
	AlterRollback
)

// XAID identifies an XA transaction.
type XAID struct {
	FormatID uint32
	GTRID    []byte
	BQUAL    []byte
}

func (x *XAID) String() string {
	return fmt.Sprintf("X'%x',X'%x',%d", x.GTRID, x.BQUAL, x.FormatID)
}

// MySQLGTIDEvent starts a MySQL transaction (GTID or anonymous).
type MySQLGTIDEvent struct {
	GTID                   gtid.GTID // zero for anonymous transactions
	Anonymous              bool
	Flags                  byte
	LastCommitted          int64
	SequenceNumber         int64
	ImmediateCommitTS      uint64 // microseconds since the epoch
	OriginalCommitTS       uint64
	TransactionLength      uint64
	ImmediateServerVersion uint32
	OriginalServerVersion  uint32
}

// PreviousGTIDsEvent lists the GTIDs written before this MySQL file.
type PreviousGTIDsEvent struct{ Set gtid.Set }

// GTIDListEvent is MariaDB's per-domain position at the start of a file
// (or, when fake, after skipped groups).
type GTIDListEvent struct {
	Flags uint8
	List  []gtid.GTID
}

// BinlogCheckpointEvent names the oldest file still needed for crash recovery.
type BinlogCheckpointEvent struct{ File string }

// AnnotateRowsEvent carries the SQL text of the statement behind the rows
// events that follow (MariaDB).
type AnnotateRowsEvent struct{ Query []byte }

// RowsQueryEvent is MySQL's equivalent of AnnotateRowsEvent.
type RowsQueryEvent struct{ Query []byte }

// HeartbeatEvent is sent by an idle source; it carries the source's current
// file and position and never moves a saved position.
type HeartbeatEvent struct {
	File string
	Pos  uint64
}

// XAPrepareEvent ends the first phase of an XA transaction.
type XAPrepareEvent struct {
	OnePhase bool
	XID      XAID
}

// IncidentEvent reports that the source lost events (e.g. a failed
// non-transactional write): replication cannot continue safely past it.
type IncidentEvent struct {
	Incident uint16
	Message  string
}

// TransactionPayloadEvent is MySQL's compressed transaction. Its events are
// in Events once decompressed; they carry the payload event's File and Pos.
type TransactionPayloadEvent struct {
	Compression      uint64 // 0 zstd, 255 none
	PayloadSize      uint64
	UncompressedSize uint64
	Events           []*Event
}

// SkippedEvent stands for an event binlane reads past: statement-based
// helpers (intvar, rand, user var) that a ROW stream only carries for
// statements we refuse anyway, encryption markers the source already
// applied, and unknown events the source marked ignorable.
type SkippedEvent struct{ Reason string }
