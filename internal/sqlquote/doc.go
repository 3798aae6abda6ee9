// Package sqlquote owns how binlane writes a name or a value into SQL
// text: identifiers, string literals, accounts and the values of session
// variables. Names, definers and settings come from the source (its
// catalog, its binlog), so a crafted one must come out as exactly one
// name or one value, never as SQL of its own; every other package quotes
// through this one. It is a leaf: it imports the standard library only.
//
// # Identifiers
//
// Backticks, with a backtick doubled: read the same under every sql_mode
// (ANSI_QUOTES adds "..." as a second quote; it does not change `...`),
// and a backslash is an ordinary character inside them.
//
// # String literals: one convention for every sql_mode
//
// binlane does not always own the session's sql_mode (the cut-over's and
// the replication connection's sessions start with the server's global
// one, which may hold NO_BACKSLASH_ESCAPES or ANSI_QUOTES), so a literal
// must read the same whatever the mode:
//   - a single quote written twice ends no literal in any mode, and
//     ANSI_QUOTES concerns double quotes only;
//   - a backslash cannot be written so: the default mode needs it
//     doubled, NO_BACKSLASH_ESCAPES reads a doubled one as two;
//   - a hexadecimal literal (X'..') has no escapes at all, and its
//     introducer (_utf8mb4 X'..') gives it the character set a quoted
//     literal has, so it compares under the column's collation as one.
//
// String therefore writes '...' with quotes doubled when every byte is
// printable ASCII other than the backslash or part of valid UTF-8 (the
// statement stays readable in errors and logs), _utf8mb4 X'..' for other
// UTF-8 text, and X'..' (a binary string: the bytes as they are) for
// bytes that are not UTF-8. The plain form assumes a utf8mb4 or binary
// (read as the same bytes) character_set_client, which every binlane
// session has. Where the grammar takes a quoted string only (an account, LOAD
// DATA's file name) a hex literal is a syntax error: an account goes in
// identifier quotes (Account), and a file name into a session binlane set
// up (AppendEscaped).
//
// # Row values: the compact form, in binlane's own sessions only
//
// AppendEscaped is the one exception, for the row values of the apply
// path: backslash escapes, which grow a value by a few percent where hex
// doubles it (a value that fit the source's max_allowed_packet must fit in
// the statement that copies it, and the statements are the apply path's
// bandwidth). It is valid only in a session whose sql_mode binlane set
// itself without NO_BACKSLASH_ESCAPES (package apply's target sessions);
// anywhere else use String.
//
// # Session variables
//
// Setting takes a value such as sql_mode, time_zone or a character set's
// name only if it is a plain name (letters, digits and _ , + : / - and
// space), so it needs no escape in any mode, and refuses anything else.
package sqlquote
