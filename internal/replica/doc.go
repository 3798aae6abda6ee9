// Package replica is binlane's replication client: it connects to a source
// as a replica (package wire), checks that the source writes the binlog
// binlane needs, streams events from a GTID set or a file and position,
// decodes them (package binlog) and hands them to one consumer through a
// queue bounded in bytes, so reading the socket never waits on the
// consumer's pace beyond that bound.
//
// The stream survives connection loss: it reconnects with bounded
// exponential backoff and resumes after the last complete transaction it
// read, announcing the break with a binlog.Restart message so the consumer
// drops any partial transaction it holds. Errors that retrying cannot fix (the start
// position is gone from the source, authentication, a source that does not
// meet the requirements, an undecodable event) end the stream instead.
//
// Goroutines: Open starts one reader goroutine per stream. It owns the
// connection, the decoder and the reader-side Tracker; Next runs on the
// consumer's goroutine. Close (or cancelling Open's context) closes the
// connection, which unblocks the reader, and waits for it to exit.
//
// The package must never write to the source beyond session variables of
// its own connection, never enable semi-synchronous replication (so it never
// has to tell a semi-sync header from an event byte), and never resume from
// a position inside a transaction.
package replica
