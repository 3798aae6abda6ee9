package binlog

import (
	"fmt"
	"strings"
)

// The golden workload: one table per type family with boundary values,
// then updates (with a primary-key change), deletes, DDL mid-stream, XA, a
// savepoint and a table without a primary key. Every step runs in one
// session with a relaxed sql_mode (zero dates, the ENUM error value) and a
// UTC time zone, so TIMESTAMP text is comparable with the decoded epoch.

var goldenTables = []string{
	`CREATE TABLE t_int (id INT PRIMARY KEY, y YEAR, tu TINYINT UNSIGNED, ti TINYINT,
		su SMALLINT UNSIGNED, si SMALLINT, mu MEDIUMINT UNSIGNED, mi MEDIUMINT, iu INT UNSIGNED, i INT,
		bu BIGINT UNSIGNED, bi BIGINT, y2 YEAR, tz TINYINT(3) UNSIGNED ZEROFILL)`,
	`CREATE TABLE t_float (id INT PRIMARY KEY, f FLOAT, d DOUBLE)`,
	`CREATE TABLE t_dec (id INT PRIMARY KEY, a DECIMAL(1,0), b DECIMAL(10,2), c DECIMAL(18,9),
		d DECIMAL(65,30), e DECIMAL(38,38), f DECIMAL(65,0), g DECIMAL(27,9), h DECIMAL(20,10) UNSIGNED,
		i DECIMAL(9,9), j DECIMAL(10,1), k DECIMAL(65,38))`,
	`CREATE TABLE t_time (id INT PRIMARY KEY, d DATE,
		t0 TIME, t1 TIME(1), t2 TIME(2), t3 TIME(3), t4 TIME(4), t5 TIME(5), t6 TIME(6),
		dt0 DATETIME, dt1 DATETIME(1), dt2 DATETIME(2), dt3 DATETIME(3), dt4 DATETIME(4), dt5 DATETIME(5), dt6 DATETIME(6),
		ts0 TIMESTAMP NULL, ts1 TIMESTAMP(1) NULL, ts2 TIMESTAMP(2) NULL, ts3 TIMESTAMP(3) NULL,
		ts4 TIMESTAMP(4) NULL, ts5 TIMESTAMP(5) NULL, ts6 TIMESTAMP(6) NULL)`,
	`CREATE TABLE t_str (id INT PRIMARY KEY,
		cu CHAR(10) CHARACTER SET utf8mb4, vu63 VARCHAR(63) CHARACTER SET utf8mb4,
		vu64 VARCHAR(64) CHARACTER SET utf8mb4, vl255 VARCHAR(255) CHARACTER SET latin1,
		vl256 VARCHAR(256) CHARACTER SET latin1, cl255 CHAR(255) CHARACTER SET latin1,
		cu255 CHAR(255) CHARACTER SET utf8mb4, b16 BINARY(16), vb VARBINARY(300), b255 BINARY(255),
		cb CHAR(5) CHARACTER SET binary, vb255 VARBINARY(255), vb256 VARBINARY(256))`,
	`CREATE TABLE t_enum (id INT PRIMARY KEY, e ` + bigEnum() + `, s ` + bigSet() + `,
		es ENUM('a','b','c'), ss SET('x','y'), b1 BIT(1), b7 BIT(7), b64 BIT(64), b9 BIT(9))`,
	`CREATE TABLE t_blob (id INT PRIMARY KEY, tb TINYBLOB, b BLOB, mb MEDIUMBLOB, lb LONGBLOB,
		tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT, j JSON, g GEOMETRY, p POINT, i6 INET6, u UUID,
		vl VARCHAR(10) CHARACTER SET latin1)`,
	`CREATE TABLE t_nopk (a INT, b VARCHAR(10))`,
	// Which columns own a signedness bit, and which a collation: numeric
	// and non-numeric, character and not, interleaved.
	`CREATE TABLE t_sign (id INT PRIMARY KEY, b BIT(3), y YEAR, fu FLOAT UNSIGNED, e ENUM('a') CHARACTER SET latin1,
		du DOUBLE UNSIGNED, g GEOMETRY, dcu DECIMAL(5,2) UNSIGNED, ts TIMESTAMP NULL, ui INT UNSIGNED, si TINYINT,
		v VARCHAR(3) CHARACTER SET latin1 COLLATE latin1_bin, s SET('x') CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
		tu TINYINT UNSIGNED, c CHAR(2) CHARACTER SET ascii)`,
}

func bigEnum() string {
	vals := make([]string, 300)
	for i := range vals {
		vals[i] = fmt.Sprintf("'m%03d'", i)
	}
	return "ENUM(" + strings.Join(vals, ",") + ")"
}

func bigSet() string {
	vals := make([]string, 64)
	for i := range vals {
		vals[i] = fmt.Sprintf("'s%02d'", i)
	}
	return "SET(" + strings.Join(vals, ",") + ")"
}

// goldenStep is one or more statements whose row images are checked against
// snapshots of tables taken before and after it.
type goldenStep struct {
	tables     []string
	sql        []string
	rolledBack int // rows of statements undone by ROLLBACK TO SAVEPOINT
}

func step(table string, sql ...string) goldenStep {
	return goldenStep{tables: []string{table}, sql: sql}
}

func nines(n int) string { return strings.Repeat("9", n) }

// hugeBlobSize is the 20 MiB LONGBLOB: larger than one 16 MiB packet.
const hugeBlobSize = 20 << 20

func goldenSteps() []goldenStep {
	d65 := nines(35) + "." + nines(30)
	d3838 := "0." + nines(38)
	d650 := nines(65)
	d659 := nines(27) + "." + nines(38)
	return []goldenStep{
		step("t_int", `INSERT INTO t_int VALUES
			(1, 1901, 255, 127, 65535, 32767, 16777215, 8388607, 4294967295, 2147483647, 18446744073709551615, 9223372036854775807, 2155, 255),
			(2, 0, 0, -128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0, 0),
			(3, 2000, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1970, 7),
			(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`),
		step("t_float", `INSERT INTO t_float VALUES (1, 3.4028234e38, 1.7976931348623157e308),
			(2, -3.4028234e38, -1.7976931348623157e308), (3, 1.4e-45, 4.9e-324), (4, 1.17549435e-38, 2.2250738585072014e-308),
			(5, 0, 0), (6, -0.0, -0.0), (7, 0.1, 0.1), (8, NULL, NULL), (9, 123456.789, 1e300), (10, -1.5, -2.5e-300),
			(11, 16777217, 9007199254740993)`),
		step("t_dec", fmt.Sprintf(`INSERT INTO t_dec VALUES
			(1, 9, 99999999.99, 999999999.999999999, %[1]s, %[2]s, %[3]s, %[4]s, 9999999999.9999999999, 0.999999999, 999999999.9, %[5]s),
			(2, -9, -99999999.99, -999999999.999999999, -%[1]s, -%[2]s, -%[3]s, -%[4]s, 0, -0.999999999, -999999999.9, -%[5]s),
			(3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
			(4, 1, 0.01, 0.000000001, 0.000000000000000000000000000001, 0.00000000000000000000000000000000000001, 1,
				0.000000001, 0.0000000001, 0.000000001, 0.1, 0.00000000000000000000000000000000000001),
			(5, -1, -0.01, -0.000000001, -0.5, -0.5, -1, -0.000000001, 0.5, -0.000000001, -0.1, -0.5),
			(6, 5, 12345.67, -123456789.123456789, 1234567890123456789.012345678901234567890123456789,
				0.12345678901234567890123456789012345678, -12345678901234567890123456789012345678901234567890123456789012345,
				123456789012345678.123456789, 1234567890.0123456789, 0.000000123, 100000000.1, -123456789.000000001),
			(7, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, d65, d3838, d650, nines(18)+"."+nines(9), d659)),
		step("t_time", timeRows()...),
		step("t_str", `INSERT INTO t_str VALUES
			(1, '😀é', REPEAT('😀', 63), REPEAT('😀', 64), REPEAT('é', 255), REPEAT('x', 256), REPEAT('a', 255),
				REPEAT('😀', 255), x'01020000000000000000000000000000', x'000102', CONCAT(x'FF', REPEAT(x'00', 254)), 'ab',
				REPEAT(x'AB', 255), REPEAT(x'CD', 256)),
			(2, '', '', '', '', '', '', '', '', '', '', '', '', ''),
			(3, 'a  ', 'a  ', ' b ', 'c ', 'd', 'e ', 'f', x'00000000000000000000000000000001', x'00', x'01', x'0000', x'20', x'2000'),
			(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
			(5, 'q''uo\\te', CONCAT('nl', x'0A', 'tab', x'09', 'cr', x'0D'), 'ünï', 'ß', '', '', '', x'61006200630064006500660067006800',
				x'00275C7F80FF0A0D09', x'00', x'FF00FF', x'FF', x'FF')`),
		step("t_enum", `INSERT INTO t_enum VALUES
			(1, 'm299', '`+allSet()+`', 'c', 'x,y', 1, b'1111111', b'1111111111111111111111111111111111111111111111111111111111111111', b'111111111'),
			(2, '', '', '', '', 0, 0, 0, 0),
			(3, 'm000', 's00,s63', 'a', 'y', 1, b'1000000', b'1000000000000000000000000000000000000000000000000000000000000001', b'100000000'),
			(4, 'm255', 's07,s08,s31,s32', 'b', '', 0, b'0000001', 256, 256),
			(5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`),
		step("t_blob", `INSERT INTO t_blob VALUES
			(1, REPEAT(x'01', 255), REPEAT('b', 65535), REPEAT('m', 70000), 'small', '😀 tiny', 'text é', 'medium', 'long',
				'{"a":[1,2.5,{"b":null,"c":"😀"}],"d":{"e":{"f":[true,false,"x"]}},"n":-12345678901234}',
				ST_GeomFromText('POLYGON((0 0,10 0,10 10,0 10,0 0))'), POINT(1,2), '::1', '123e4567-e89b-12d3-a456-426655440000', 'é'),
			(2, NULL, NULL, NULL, REPEAT('0123456789abcdef', `+fmt.Sprint(hugeBlobSize/16)+`), NULL, NULL, NULL, NULL, NULL, NULL, NULL,
				'::', '00000000-0000-0000-0000-000000000000', NULL),
			(3, '', '', '', '', '', '', '', '', '[]', ST_GeomFromText('POINT(1 2)', 4326), POINT(-1.5, 1e300), '::ffff:1.2.3.0',
				'ffffffff-ffff-1fff-bfff-ffffffffff00', ''),
			(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`),
		step("t_nopk", `INSERT INTO t_nopk VALUES (1, 'x'), (1, 'x'), (2, 'y'), (NULL, NULL)`),
		step("t_sign", `INSERT INTO t_sign VALUES (1, 5, 1999, 1.5, 'a', 2.5, POINT(0, 0), 999.99, '2000-01-01', 4294967295, -1, 'abc', 'x', 255, 'zz'),
			(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`),
		// Updates, including a primary-key change and blob images.
		step("t_int", `UPDATE t_int SET id = id + 100, ti = ti - 1 WHERE id = 3`),
		step("t_int", `UPDATE t_int SET bu = IF(bu > 0, bu - 1, 5), bi = IF(bi < 0, bi + 1, bi - 1), y = 2155 WHERE id IN (1, 2)`),
		step("t_str", `UPDATE t_str SET b16 = x'AA', cu = '😀😀😀', id = 50 WHERE id = 1`),
		step("t_blob", `UPDATE t_blob SET lb = CONCAT(lb, 'x'), j = '{"k": [[[[[1]]]]]}' WHERE id IN (1, 3)`),
		step("t_time", `UPDATE t_time SET t3 = '-12:00:00.001', dt6 = '2001-02-03 04:05:06.000007', ts6 = '1999-12-31 23:59:59.5' WHERE id = 2`),
		step("t_enum", `UPDATE t_enum SET e = 'm256', s = 's62', b64 = 0 WHERE id = 1`),
		step("t_nopk", `UPDATE t_nopk SET b = 'z' WHERE a = 2`),
		// DDL mid-stream: the table id changes and the next map has one more column.
		step("t_int", `ALTER TABLE t_int ADD COLUMN extra BIGINT UNSIGNED AFTER y`),
		step("t_int", `INSERT INTO t_int (id, extra, ti) VALUES (5, 18446744073709551615, -5), (6, 0, NULL)`),
		// Per-session MINIMAL and NOBLOB images: absent columns are not NULL.
		step("t_int", `SET SESSION binlog_row_image = MINIMAL`, `UPDATE t_int SET i = 77, bi = NULL WHERE id = 5`,
			`DELETE FROM t_int WHERE id = 6`, `INSERT INTO t_int (id, tu) VALUES (7, 7)`, `SET SESSION binlog_row_image = FULL`),
		step("t_blob", `SET SESSION binlog_row_image = NOBLOB`, `UPDATE t_blob SET vl = 'nb' WHERE id = 3`,
			`SET SESSION binlog_row_image = FULL`),
		step("t_dec", `ALTER TABLE t_dec DROP COLUMN a, ADD COLUMN z DECIMAL(5,5) FIRST`),
		step("t_dec", `INSERT INTO t_dec (id, z, k) VALUES (8, -0.00001, 1.5)`),
		// Deletes.
		step("t_int", `DELETE FROM t_int WHERE id IN (1, 2)`),
		step("t_float", `DELETE FROM t_float`),
		step("t_nopk", `DELETE FROM t_nopk WHERE a = 1`),
		step("t_blob", `DELETE FROM t_blob WHERE id = 2`),
		// XA: the rows are in the XA PREPARE group, XA COMMIT is a group of its own.
		step("t_int", `XA START 'xa1'`, `INSERT INTO t_int (id, i) VALUES (60, 60)`, `XA END 'xa1'`, `XA PREPARE 'xa1'`, `XA COMMIT 'xa1'`),
		step("t_int", `XA START X'0102', X'ff', 77`, `INSERT INTO t_int (id, i) VALUES (61, 61)`, `XA END X'0102', X'ff', 77`,
			`XA PREPARE X'0102', X'ff', 77`, `XA COMMIT X'0102', X'ff', 77`),
		// A multi-table transaction with a savepoint.
		{tables: []string{"t_int", "t_str"}, sql: []string{`BEGIN`, `INSERT INTO t_int (id) VALUES (70)`, `SAVEPOINT sp1`,
			`INSERT INTO t_str (id, cu) VALUES (70, 'sp')`, `ROLLBACK TO SAVEPOINT sp1`, `UPDATE t_str SET vb = x'EE' WHERE id = 2`, `COMMIT`}, rolledBack: 1},
	}
}

func allSet() string {
	vals := make([]string, 64)
	for i := range vals {
		vals[i] = fmt.Sprintf("s%02d", i)
	}
	return strings.Join(vals, ",")
}

// timeRows inserts each row's TIME, DATETIME and TIMESTAMP literal into the
// columns of every fractional precision.
func timeRows() []string {
	rows := []struct{ d, t, dt, ts string }{
		{"'0000-00-00'", "'00:00:00'", "'0000-00-00 00:00:00'", "'0000-00-00 00:00:00'"},
		{"'1000-01-01'", "'-838:59:59.999999'", "'1000-01-01 00:00:00'", "'1970-01-01 00:00:01'"},
		{"'9999-12-31'", "'838:59:59.999999'", "'9999-12-31 23:59:59.999999'", "'2038-01-19 03:14:07.999999'"},
		{"'2020-00-15'", "'-00:00:00.5'", "'2020-02-00 10:00:00.5'", "'2000-01-01 00:00:00.5'"},
		{"'2024-02-29'", "'-00:00:00.000001'", "'0000-00-00 00:00:00.000001'", "'1970-01-01 00:00:00.000001'"},
		{"'2024-02-29'", "'-01:02:03.456789'", "'2024-02-29 12:34:56.789012'", "'2024-02-29 12:34:56.789012'"},
		{"'0001-01-01'", "'-00:00:01.5'", "'0001-01-01 00:00:00.010000'", "'2001-09-09 01:46:40.1'"},
		{"'2024-12-31'", "'-00:00:00.99'", "'2024-12-31 23:59:59.99'", "'2024-12-31 23:59:59.99'"},
		{"'2024-01-01'", "'-00:00:00.0001'", "'2024-01-01 00:00:00.0001'", "'2024-01-01 00:00:00.0001'"},
		{"'2024-01-01'", "'12:34:56.789012'", "'2024-01-01 00:00:00.9999'", "'2024-01-01 00:00:00.99999'"},
	}
	var b strings.Builder
	b.WriteString("INSERT INTO t_time VALUES ")
	for i, r := range rows {
		fmt.Fprintf(&b, "(%d, %s", i+1, r.d)
		for _, v := range []string{r.t, r.dt, r.ts} {
			for range 7 {
				b.WriteString(", " + v)
			}
		}
		b.WriteString("), ")
	}
	b.WriteString("(99, NULL" + strings.Repeat(", NULL", 21) + ")")
	return []string{b.String()}
}
