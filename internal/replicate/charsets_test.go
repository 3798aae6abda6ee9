package replicate

import (
	"context"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/position"
)

// TestCharsetsAndNames replicates values in every kind of string column —
// utf8mb4, utf8mb3, latin1, ucs2, utf16, gbk and sjis (whose multi-byte
// characters may end in a backslash byte), CHAR, TEXT, binary and BLOB
// with every byte value, ENUM and SET with non-ASCII and quoted members,
// JSON with quotes, backslashes, escapes and emoji — into tables and
// columns with non-ASCII names, keyed by non-ASCII strings; statements
// logged in a latin1 session and under NO_BACKSLASH_ESCAPES (DDL and
// statement-logged DML) run between the row events, which then must find
// the apply session's own character sets and sql_mode again. The target
// ends equal to the source row by row. On the apply session's connections
// a prepared statement's string parameter against a utf8mb4 column and the
// position table's literals (a deferred statement) keep their non-ASCII
// text too.
func TestCharsetsAndNames(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.`straße_ü` ("+
		"`id` INT PRIMARY KEY, `näme` VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL, "+
		"`l1` VARCHAR(100) CHARACTER SET latin1, `u3` VARCHAR(100) CHARACTER SET utf8mb3, `u2` VARCHAR(50) CHARACTER SET ucs2, "+
		"`u16` VARCHAR(50) CHARACTER SET utf16, `gb` VARCHAR(20) CHARACTER SET gbk, `sj` VARCHAR(20) CHARACTER SET sjis, "+
		"`ch` CHAR(10) CHARACTER SET utf8mb4, `tx` TEXT CHARACTER SET utf8mb4, `bin` VARBINARY(300), `blb` BLOB, "+
		"`é` ENUM('ä', 'b''q', 'c\\\\d', 'x') CHARACTER SET utf8mb4, `st` SET('x', 'ÿ', '\\\\') CHARACTER SET latin1, `j` JSON, "+
		"UNIQUE KEY `näme_ü` (`näme`))",
		"CREATE TABLE wl.`ключи` (`ключ` VARCHAR(50) CHARACTER SET utf8mb4, `l` VARCHAR(20) CHARACTER SET latin1, `v` INT, "+
			"PRIMARY KEY (`ключ`, `l`))",
		"INSERT INTO wl.`straße_ü` VALUES "+
			`(1, 'Zürich 😀', 'café', 'naïve', 'ü€', '𝄞 clef', _gbk X'815C41', _sjis X'835C', 'ça', 'line1\nline2 \\ ''q''', `+
			`(SELECT GROUP_CONCAT(CHAR(s.seq) SEPARATOR '') FROM wl.seq_0_to_255 s), X'00275C0D0A1A22FF', 'ä', 'x,ÿ', `+
			`'{"q": "say \\"hi\\"", "path": "C:\\\\dir\\\\", "u": "\\u00e9 é 😀", "nl": "a\\nb", "apos": "it''s", "nul": "\\u0000"}'), `+
			`(2, 'O''Brien \\ back\\', '\\', 'x\\''y', '''', '\\', _gbk X'815C', _sjis X'5C835C', '\\''', '\0\Z\r', '', '', 'b''q', '\\', '[]'), `+
			`(3, '', '', '', '', '', '', '', '', '', NULL, NULL, 'c\\d', '', '"\\\\"')`,
		"INSERT INTO wl.`straße_ü` (`id`, `näme`, `u16`, `blb`, `j`) SELECT 100 + seq, CONCAT('n° ', seq, ' ü'), CONCAT('ü', seq), "+
			"UNHEX(SHA2(CONCAT('b', seq), 512)), JSON_OBJECT('k', CONCAT('v\\\\\"', seq), 'ü', seq) FROM wl.seq_1_to_200",
		"INSERT INTO wl.`ключи` VALUES ('ключ 1', 'é', 1), ('é\\\\', '\\\\', 2), ('a''b', 'a''b', 3), ('😀', '', 4), ('x', 'ÿ', 5)",
		// Updates and deletes find their rows by the string keys.
		"UPDATE wl.`ключи` SET `v` = `v` + 10, `l` = CONCAT(`l`, 'ß') WHERE `ключ` IN ('ключ 1', 'é\\\\', 'a''b')",
		"DELETE FROM wl.`ключи` WHERE `ключ` = '😀'",
		"UPDATE wl.`straße_ü` SET `j` = JSON_SET(`j`, '$.new', 'x\\\\y\"z'), `l1` = 'über' WHERE `id` IN (1, 3, 150)",
		"UPDATE wl.`straße_ü` SET `näme` = CONCAT(`näme`, ' ✓') WHERE `id` % 3 = 0",
		"DELETE FROM wl.`straße_ü` WHERE `id` % 7 = 0")
	// A session in latin1 (the bytes below are latin1): its DDL, a row
	// event, statement-logged DML, then rows again.
	e.src.ExecT(t, "SET NAMES latin1",
		"CREATE TABLE wl.`caf\xe9` (`id` INT PRIMARY KEY, `v` VARCHAR(20) CHARACTER SET utf8mb4, "+
			"`w` VARCHAR(20) CHARACTER SET latin1 DEFAULT 'd\xe9j\xe0')",
		"INSERT INTO wl.`caf\xe9` (`id`, `v`) VALUES (1, 'cr\xe8me')",
		"SET SESSION binlog_format = STATEMENT",
		"INSERT INTO wl.`caf\xe9` (`id`, `v`) VALUES (2, 'br\xfbl\xe9e')",
		"SET SESSION binlog_format = ROW",
		"UPDATE wl.`caf\xe9` SET `v` = 'na\xefve' WHERE `id` = 2")
	e.src.ExecT(t, "INSERT INTO wl.`café` (`id`, `v`) VALUES (3, 'ü\\\\'), (4, '😀')",
		"UPDATE wl.`straße_ü` SET `tx` = 'after latin1 ü\\\\' WHERE `id` = 1")
	// A session under NO_BACKSLASH_ESCAPES: a backslash is an ordinary
	// character in its statements.
	e.src.ExecT(t, "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES'",
		"ALTER TABLE wl.`straße_ü` ADD COLUMN `nb` VARCHAR(20) CHARACTER SET utf8mb4 DEFAULT 'a\\b'",
		"INSERT INTO wl.`straße_ü` (`id`, `näme`, `tx`, `nb`) VALUES (50, 'nbe\\', 'x\\ny\\', 'c:\\d\\')",
		"SET SESSION binlog_format = STATEMENT",
		"INSERT INTO wl.`ключи` VALUES ('nb\\', 'x\\', 7)",
		"SET SESSION binlog_format = ROW",
		"UPDATE wl.`straße_ü` SET `tx` = CONCAT(`tx`, '\\') WHERE `id` IN (2, 50)")
	e.src.ExecT(t, "UPDATE wl.`straße_ü` SET `tx` = 'after nbe \\\\ ''', `nb` = 'z\\\\' WHERE `id` = 3",
		"INSERT INTO wl.`ключи` VALUES ('after \\\\', 'ü', 8)")
	for _, workers := range []int{1, 4} {
		cfg := e.config(t, workers)
		cfg.Stream = "t" + string(rune('0'+workers))
		cfg.StopAtGTID = gtidPos(t, e.src)
		if workers != 1 { // again from the start, by a stream of its own
			e.dst.ExecT(t, "DROP DATABASE wl", "DELETE FROM binlane.streams WHERE name = 't1'")
		}
		if err := Run(ctx, cfg); err != nil {
			t.Fatalf("%d workers: %v", workers, err)
		}
		e.verifyEqual(t)
	}
	checkApplySessionText(t, ctx, e)
}

// checkApplySessionText checks, on a connection in the apply session, a
// prepared statement's non-ASCII string parameter against a utf8mb4 column, and a
// position statement's literals written there and read back elsewhere.
func checkApplySessionText(t *testing.T, ctx context.Context, e *env) {
	pool, err := apply.OpenPool(e.dstDSN, 1, dsn.ApplySession(true, 5))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// The parameter is a binary string, compared in the utf8mb4 column's
	// collation (case-insensitive here) as its bytes, as binlane's own
	// tables are utf8mb4.
	var n int
	if err := pool.QueryRowContext(ctx, "SELECT COUNT(*) FROM wl.`straße_ü` WHERE `näme` = ?", "ZÜRICH 😀").Scan(&n); err != nil || n != 1 {
		t.Errorf("prepared statement with a non-ASCII parameter: %d rows, %v", n, err)
	}
	const stmt = "INSERT INTO `straße` VALUES ('ü', 'a\\b', '😀')"
	if _, err := pool.ExecContext(ctx, string(position.AppendDeferred(nil, "charsets", "0-1-99", "wl_ü", "test", stmt))); err != nil {
		t.Fatal(err)
	}
	got, err := position.ListDeferred(ctx, e.dst.OpenT(t, ""), "charsets")
	if err != nil {
		t.Fatal(err)
	}
	if last := got[len(got)-1]; last.Schema != "wl_ü" || last.Statement != stmt {
		t.Errorf("deferred statement read back as %q %q", last.Schema, last.Statement)
	}
}
