// Package wire is binlane's own minimal MySQL/MariaDB client protocol, just
// enough for a replication connection: packet framing (including payloads of
// 16 MiB and more), the v10 handshake with optional TLS, the authentication
// plugins binlane supports (mysql_native_password, caching_sha2_password,
// client_ed25519, and mysql_clear_password over TLS), COM_QUERY with text
// result sets, and the replication commands COM_REGISTER_SLAVE,
// COM_BINLOG_DUMP and COM_BINLOG_DUMP_GTID; and, for the applier's target
// sessions (package wiresql), multi-statement COM_QUERY sent and answered
// as two steps, with every statement's row count and LOCAL INFILE files
// the caller serves (command.go).
//
// The package owns bytes on the socket only. It must never panic on bytes
// from the network (every length is checked before use), never send a
// cleartext password over an unencrypted connection, never ask for protocol
// compression, and never interpret binlog events: it hands their bytes to
// the caller in a buffer the caller may keep and that nothing else writes
// to (a slice of the read buffer for a packet of 1 KiB or more, a copy of
// its own for a smaller one: packet.go).
//
// A Conn is not safe for concurrent use, except that Close may be called
// from any goroutine to interrupt a blocked read, and that SendQuery may
// run beside a ReadAnswer.
package wire
