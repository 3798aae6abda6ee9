// Package txn turns a stream of binlog events into transactions: the unit
// that flows from the source to the applier. The Assembler groups events
// from GTID to XID/COMMIT, drops tables the filter does not select, decodes
// row images once, and marks what the applier must treat specially
// (statements, huge transactions that must be streamed).
//
// The package owns grouping and classification; it must never talk to the
// target, and never advance a position itself: positions move only when the
// applier commits.
package txn

import (
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
)

// Txn is one source transaction (an event group).
type Txn struct {
	// Seq numbers transactions in stream order, from 1, within one run.
	Seq uint64
	// GTID is zero for anonymous (MySQL gtid_mode=OFF) transactions.
	GTID gtid.GTID
	// File and EndPos locate the end of the group in the source's binlog.
	File   string
	EndPos uint64
	// Timestamp is the source commit time (seconds), for lag.
	Timestamp uint32

	// Commit-order metadata from the source.
	CommitID       uint64 // MariaDB group-commit id (0 when absent)
	LastCommitted  int64  // MySQL logical clock
	SequenceNumber int64
	Waited         bool // MariaDB: the transaction waited on a lock on the source

	Body
	// More is non-nil for a transaction too big to hold in memory: Body holds
	// its first part, the rest arrive on More, which is closed after the
	// last part. File, EndPos and Timestamp are only final once More is
	// closed.
	More chan Body

	// Bytes is the memory the transaction holds (event bytes and values).
	Bytes int
}

// Body is the content of a transaction (or of one part of a streamed one).
type Body struct {
	Items   []Item
	Changes []Change
	// Err is set on the last part of a streamed transaction whose remaining
	// events could not be read; the applier must roll back.
	Err error
}

// Item is one step of a transaction in source order: either a run of row
// changes (Changes[First:Last]) from one rows event, or a statement.
type Item struct {
	Rows      *binlog.RowsEvent
	First     int
	Last      int
	Statement *Statement
}

// Change is one row change. Before is nil for inserts and After for
// deletes.
type Change struct {
	Table  *binlog.TableMap
	Kind   binlog.RowsKind
	Flags  uint16 // rows event flags (foreign key checks off, ...)
	Before []binlog.Value
	After  []binlog.Value
}

// Statement is a statement the target must run as is: DDL and the like.
type Statement struct {
	Schema string // default database of the source session
	Query  string
	Status binlog.QueryStatus
	// Tables names the tables the statement touches when they could be
	// parsed ("schema.table"); Unknown is set when they could not.
	Tables  []TableName
	Unknown bool
}

// TableName is a schema-qualified table name.
type TableName struct{ Schema, Table string }

// HasStatements reports whether any item is a statement.
func (b *Body) HasStatements() bool {
	for i := range b.Items {
		if b.Items[i].Statement != nil {
			return true
		}
	}
	return false
}

// Empty reports a transaction with nothing to apply (every table filtered
// out): only its position matters.
func (t *Txn) Empty() bool { return len(t.Items) == 0 && t.More == nil }
