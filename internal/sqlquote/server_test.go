package sqlquote_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlquote"
)

// tricky holds the bytes that end, escape or alter a literal or a name in
// one sql_mode or another.
var tricky = []string{
	"", "plain", "it's", "''", `a\b`, `\`, `\'`, `'\`, "\\\\'", `\%`, `\_`, `"dq"`, "back`tick", "``",
	"semi;colon -- x", "50% _", " spaces ", "grüße €😀", "nul\x00byte", "\n\r\t\x1a\x7f",
}

// trickyBytes adds bytes that are not UTF-8, for binary values.
var trickyBytes = append([]string{"\xff\xfe", "\xc3'", "\xe9\\", "\x80\x00\x5c\x27"}, tricky...)

// modes are the sql_modes that change how a literal or a name is read.
var modes = []string{"", "NO_BACKSLASH_ESCAPES", "ANSI_QUOTES", "NO_BACKSLASH_ESCAPES,ANSI_QUOTES"}

// multiByte are values in charsets whose characters may hold a quote's
// or a backslash's byte after their first, with their introducers.
var multiByte = []struct{ charset, value string }{
	{"gbk", "\x81\x5c\x95\x5c"}, {"sjis", "\x83\x5c"}, {"utf16", "\x00\x5c\x00\x27\x00\x00"}, {"ucs2", "\x5c\x5c\x27\x27"},
	{"utf8mb4", "grüße \\ '😀'"}, {"latin1", "caf\xe9 \\ '"},
}

// TestRoundTripServer selects every quoted value back from a server in
// each sql_mode and compares the bytes, in each character_set_client
// binlane's sessions have (binary: the apply session's).
func TestRoundTripServer(t *testing.T) {
	db := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}).OpenT(t, "")
	for _, mode := range modes {
		for _, client := range []string{"utf8mb4", "binary"} {
			t.Run("mode="+mode+"/client="+client, func(t *testing.T) {
				conn := modeConn(t, db, mode)
				exec(t, conn, "SET SESSION character_set_client = "+client)
				roundTrips(t, conn, mode)
			})
		}
	}
}

// roundTrips checks every tricky value in every form on conn.
func roundTrips(t *testing.T, conn *sql.Conn, mode string) {
	ctx := context.Background()
	for _, s := range trickyBytes {
		checkBytes(t, conn, "String", string(sqlquote.AppendString(nil, s)), s)
		checkBytes(t, conn, "AppendHex", string(sqlquote.AppendHex(nil, "binary", s)), s)
		if !strings.Contains(mode, "NO_BACKSLASH_ESCAPES") { // its documented limit
			checkBytes(t, conn, "AppendEscaped", string(sqlquote.AppendEscaped(nil, "binary", s)), s)
		}
	}
	if !strings.Contains(mode, "NO_BACKSLASH_ESCAPES") {
		// A long value takes the path that jumps between escapes.
		long := bytes.Repeat([]byte("plain text of a long value "), 40)
		for c := range 256 {
			long[c*4] = byte(c)
		}
		checkBytes(t, conn, "AppendEscaped", string(sqlquote.AppendEscaped(nil, "binary", long)), string(long))
	}
	for _, v := range multiByte {
		checkBytes(t, conn, "AppendHex", string(sqlquote.AppendHex(nil, v.charset, v.value)), v.value)
		if !strings.Contains(mode, "NO_BACKSLASH_ESCAPES") {
			checkBytes(t, conn, "AppendEscaped", string(sqlquote.AppendEscaped(nil, v.charset, v.value)), v.value)
		}
	}
	for _, v := range []string{"+01:00", "SYSTEM", "-09:30"} {
		lit, err := sqlquote.Setting(v)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, conn, "SET SESSION time_zone = "+lit)
		var got string
		if err := conn.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&got); err != nil || got != v {
			t.Errorf("time_zone %s: got %q, %v", lit, got, err)
		}
	}
}

// modeConn is one connection of db in sql_mode mode.
func modeConn(t *testing.T, db *sql.DB, mode string) *sql.Conn {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	lit, err := sqlquote.Setting(mode)
	if err != nil {
		t.Fatal(err)
	}
	exec(t, conn, "SET SESSION sql_mode = "+lit+", time_zone = '+00:00'")
	return conn
}

func exec(t *testing.T, conn *sql.Conn, q string) {
	t.Helper()
	if _, err := conn.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// checkBytes selects lit and compares its bytes with want's.
func checkBytes(t *testing.T, conn *sql.Conn, what, lit, want string) {
	t.Helper()
	var got string
	if err := conn.QueryRowContext(context.Background(), "SELECT HEX("+lit+")").Scan(&got); err != nil {
		t.Errorf("%s(%q): SELECT HEX(%s): %v", what, want, lit, err)
		return
	}
	if got != strings.ToUpper(hex.EncodeToString([]byte(want))) {
		t.Errorf("%s(%q): %s reads back as %s", what, want, lit, got)
	}
}

// TestNamesServer creates a database, a table, a column and an account
// under each tricky name in each sql_mode and finds them by those names.
func TestNamesServer(t *testing.T) {
	ctx := context.Background()
	db := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}).OpenT(t, "")
	names := []string{"it's", `a\b`, "back`tick", `"dq"`, "semi;colon", "50% _", "in side", "grüße", `\'`}
	for mi, mode := range modes {
		t.Run("mode="+mode, func(t *testing.T) {
			conn := modeConn(t, db, mode)
			for ni, name := range names {
				schema := name + string(rune('a'+mi)) + string(rune('a'+ni))
				user := name + string(rune('a'+mi))
				exec(t, conn, "CREATE DATABASE "+sqlquote.Name(schema))
				exec(t, conn, "CREATE TABLE "+sqlquote.Qualified(schema, name)+" ("+sqlquote.Name(name)+" INT)")
				var got string
				q := "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = " + sqlquote.String(schema) +
					" AND TABLE_NAME = " + sqlquote.String(name)
				if err := conn.QueryRowContext(ctx, q).Scan(&got); err != nil || got != name {
					t.Errorf("%s: got %q, %v", q, got, err)
				}
				exec(t, conn, "CREATE USER "+sqlquote.Account(user, name))
				exec(t, conn, "GRANT SELECT ON "+sqlquote.Name(schema)+".* TO "+sqlquote.Account(user, name))
				var n int
				err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?",
					sqlquote.Grantee(user, name)).Scan(&n)
				if err != nil || n != 1 {
					t.Errorf("GRANTEE %s: %d rows, %v", sqlquote.Grantee(user, name), n, err)
				}
				exec(t, conn, "DROP USER "+sqlquote.Account(user, name))
			}
		})
	}
}
