package replicate

import "fmt"

// statementCorpus is the workloads of the statement-coverage corpus: the
// findings of issue 16 by name, DDL templates under every session setting
// a statement's context carries, and the statement forms MariaDB logs in
// ROW format. Workloads with refuse set are the ones binlane stops at.
func statementCorpus() []corpusWorkload {
	var out []corpusWorkload
	out = append(out, findings()...)
	for _, s := range sessionSettings {
		for _, d := range ddlTemplates {
			if s.skip[d.name] {
				continue
			}
			out = append(out, corpusWorkload{name: s.name + "/" + d.name, stmts: append(append([]string(nil), s.stmts...), d.stmts...)})
		}
	}
	out = append(out, statementForms()...)
	out = append(out, statementDML()...)
	out = append(out, refusals()...)
	out = append(out, dmlRefusals()...)
	return out
}

// findings are the reproductions of issue 16, each a workload.
func findings() []corpusWorkload {
	return []corpusWorkload{
		{name: "A/explicit_defaults_for_timestamp=0", stmts: []string{
			"SET SESSION explicit_defaults_for_timestamp=0",
			"CREATE TABLE t1 (id INT PRIMARY KEY, a TIMESTAMP, b TIMESTAMP)",
			"INSERT INTO t1 (id) VALUES (1)"}},
		{name: "B/alter at the source's clock", stmts: []string{
			"CREATE TABLE t1 (id INT PRIMARY KEY)", "INSERT INTO t1 VALUES (1),(2)",
			"SET timestamp=1", "ALTER TABLE t1 ADD COLUMN d TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP", "SET timestamp=DEFAULT",
			"ALTER TABLE t1 ADD COLUMN e DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)"}},
		{name: "C/drop naming a missing table", stmts: []string{
			"CREATE TABLE t1 (a INT)", "CREATE TABLE t2 (a INT)", "!DROP TABLE t1, t_missing", "CREATE VIEW v1 AS SELECT 1 AS x",
			"!DROP VIEW v1, v_missing", "CREATE TABLE t3 (a INT)", "DROP TABLE IF EXISTS t3, t_missing"}},
		{name: "D/expected error", stmts: []string{
			"CREATE TABLE t1 (a INT PRIMARY KEY)", "INSERT INTO t1 VALUES (1)", "!CREATE OR REPLACE TABLE t1",
			"CREATE TABLE t2 (a INT PRIMARY KEY)"}},
		{name: "E/failed CREATE OR REPLACE SELECT", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", "BEGIN", "INSERT INTO t VALUES (2)",
			"!CREATE OR REPLACE TABLE t AS SELECT 1 AS b, 2 AS b", "CREATE TABLE after_it (a INT)"}},
		{name: "F/two-phase ALTER", stmts: []string{
			"CREATE TABLE t1 (a INT PRIMARY KEY, b INT)", "INSERT INTO t1 VALUES (1,1),(2,1)",
			"SET SESSION binlog_alter_two_phase=ON", "ALTER TABLE t1 ADD COLUMN c INT",
			"!ALTER TABLE t1 ADD UNIQUE KEY (b)", "ALTER TABLE t1 ADD COLUMN d INT DEFAULT 5, ALGORITHM=COPY",
			"ALTER TABLE t1 ENGINE=InnoDB"}},
		{name: "G/self-referencing foreign key, rows in source order", stmts: []string{
			"CREATE TABLE t1 (a INT PRIMARY KEY, b INT, FOREIGN KEY (b) REFERENCES t1(a))",
			"INSERT INTO t1 VALUES (1,NULL),(2,1),(3,2),(4,3)", "DELETE FROM t1 ORDER BY a DESC",
			"INSERT INTO t1 VALUES (1,NULL),(2,1),(3,2)", "DELETE FROM t1 WHERE a > 0 ORDER BY a DESC"}},
		{name: "G/cascading self-reference", stmts: []string{
			"CREATE TABLE t1 (a INT PRIMARY KEY, b INT, FOREIGN KEY (b) REFERENCES t1(a) ON DELETE CASCADE)",
			"INSERT INTO t1 VALUES (1,NULL),(2,1),(3,2),(10,NULL),(11,10)", "DELETE FROM t1 WHERE a IN (3,11) ORDER BY a DESC",
			"DELETE FROM t1 ORDER BY a DESC"}},
		{name: "G/cycle through two tables", stmts: []string{
			"CREATE TABLE p (a INT PRIMARY KEY, c INT)", "CREATE TABLE c (a INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES p(a))",
			"ALTER TABLE p ADD FOREIGN KEY (c) REFERENCES c(a)", "INSERT INTO p VALUES (1,NULL),(2,NULL)",
			"INSERT INTO c VALUES (1,1),(2,2)", "UPDATE p SET c=1 WHERE a=2", "UPDATE p SET c=NULL", "DELETE FROM c ORDER BY a DESC",
			"DELETE FROM p"}},
		{name: "H/temporary tables of a MIXED-format session", stmts: []string{
			// Logged as statements; the target must run none of them, least
			// of all the ALTER and TRUNCATE of the temporary r on the real r.
			"CREATE TABLE r (id INT PRIMARY KEY, v INT)", "INSERT INTO r VALUES (1,1),(2,2)", "CREATE TABLE r2 (id INT)",
			"SET SESSION binlog_format=MIXED",
			"CREATE TEMPORARY TABLE m (id INT PRIMARY KEY, v INT)", "INSERT INTO m VALUES (3,3)",
			"ALTER TABLE m ADD COLUMN w INT", "UPDATE m SET w=1",
			"CREATE TEMPORARY TABLE r (x INT)", "INSERT INTO r VALUES (5)", "ALTER TABLE r ADD COLUMN y INT",
			"TRUNCATE TABLE r", "DROP TEMPORARY TABLE r",
			"CREATE TEMPORARY TABLE m2 SELECT * FROM r", "ALTER TABLE m2 RENAME TO m3", "RENAME TABLE m3 TO m4", "DELETE FROM m4",
			"DROP TABLE r2, m",
			"SET SESSION binlog_format=ROW", "INSERT INTO r VALUES (9,9)", "CREATE TABLE after_it (a INT)"}},
		{name: "B/columns added with defaults the event's context decides", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1),(2),(3)",
			"ALTER TABLE t ADD COLUMN db VARCHAR(64) DEFAULT (DATABASE())",
			"SET timestamp=1000000", "ALTER TABLE t ADD COLUMN d DATETIME DEFAULT (NOW() + INTERVAL 1 DAY)"}},
		{name: "I/latin1 identifiers", stmts: []string{
			"SET NAMES latin1", "CREATE TABLE `t\x83` (id INT PRIMARY KEY, `c\xe9` VARCHAR(10) DEFAULT 'd\xe9f')",
			"INSERT INTO `t\x83` (id) VALUES (1)", "ALTER TABLE `t\x83` ADD COLUMN `n\x81` INT", "RENAME TABLE `t\x83` TO `u\x83`",
			"CREATE TABLE `\xe9t\xe9` (a INT)", "DROP TABLE `\xe9t\xe9`"}},
		{name: "J/SET STATEMENT FOR ALTER", stmts: []string{
			"CREATE TABLE t1 (a INT PRIMARY KEY)", "SET STATEMENT lock_wait_timeout=10 FOR ALTER TABLE t1 ADD COLUMN c INT",
			"SET STATEMENT max_statement_time=100, foreign_key_checks=0 FOR CREATE TABLE t2 (a INT)"}},
		{name: "K/XA prepare, commit and rollback", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (100, 0)",
			"XA START 'x1'", "INSERT INTO t VALUES (1, 1)", "UPDATE t SET v=1 WHERE a=100", "XA END 'x1'", "XA PREPARE 'x1'", "XA ROLLBACK 'x1'",
			"XA START 'x2'", "INSERT INTO t VALUES (2, 2)", "UPDATE t SET v=2 WHERE a=100", "XA END 'x2'", "XA PREPARE 'x2'", "XA COMMIT 'x2'",
			"XA START 'x3'", "INSERT INTO t VALUES (3, 3)", "XA END 'x3'", "XA COMMIT 'x3' ONE PHASE",
			"XA START X'0102',X'ff',7", "INSERT INTO t VALUES (4, 4)", "XA END X'0102',X'ff',7", "XA PREPARE X'0102',X'ff',7",
			"XA COMMIT X'0102',X'ff',7"}},
		{name: "L/deterministic function and procedure", stmts: []string{
			"CREATE FUNCTION f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1",
			"CREATE PROCEDURE p(IN x INT) BEGIN SELECT x; END", "CREATE TABLE t (a INT PRIMARY KEY)"}},
	}
}

// sessionSetting is a source session's setting a statement's event
// carries.
type sessionSetting struct {
	name  string
	stmts []string
	skip  map[string]bool // templates that do not apply under it
}

var sessionSettings = []sessionSetting{
	{name: "default"},
	{name: "sql_mode=''", stmts: []string{"SET sql_mode=''"}},
	{name: "sql_mode=ANSI", stmts: []string{"SET sql_mode='ANSI'"}},
	{name: "sql_mode=ORACLE", stmts: []string{"SET sql_mode='ORACLE'"}, skip: map[string]bool{"routines": true}},
	{name: "sql_mode=TRADITIONAL", stmts: []string{"SET sql_mode='TRADITIONAL'"}, skip: map[string]bool{"zero dates": true}},
	{name: "explicit_defaults_for_timestamp=0", stmts: []string{"SET explicit_defaults_for_timestamp=0"}},
	{name: "timestamp", stmts: []string{"SET timestamp=1000000000.123456"}},
	{name: "time_zone", stmts: []string{"SET time_zone='+05:30'"}},
	{name: "time_zone negative", stmts: []string{"SET time_zone='-09:00'", "SET timestamp=1700000000"}},
	{name: "names latin1", stmts: []string{"SET NAMES latin1"}},
	{name: "collation_connection", stmts: []string{"SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci"}},
	{name: "collation_server", stmts: []string{"SET collation_server=latin1_swedish_ci"}},
	{name: "collation_database", stmts: []string{"SET collation_database=latin1_swedish_ci"}},
	{name: "lc_time_names", stmts: []string{"SET lc_time_names='de_DE'"}},
	{name: "auto_increment", stmts: []string{"SET auto_increment_increment=5, auto_increment_offset=3"}},
	{name: "foreign_key_checks=0", stmts: []string{"SET foreign_key_checks=0"}},
	{name: "sql_auto_is_null", stmts: []string{"SET sql_auto_is_null=1"}},
}

type ddlTemplate struct {
	name  string
	stmts []string
}

var ddlTemplates = []ddlTemplate{
	{"timestamps", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, a TIMESTAMP, b TIMESTAMP NULL, c DATETIME DEFAULT CURRENT_TIMESTAMP, d TIMESTAMP(3) DEFAULT '2020-02-02 10:00:00.123')",
		"INSERT INTO t (id) VALUES (1)", "INSERT INTO t (id, a) VALUES (2, '2001-01-01 01:01:01')"}},
	{"add columns to rows", []string{
		"CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1),(2),(3)",
		"ALTER TABLE t ADD COLUMN d TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP",
		"ALTER TABLE t ADD COLUMN e DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)",
		"ALTER TABLE t ADD COLUMN f DATE NOT NULL DEFAULT (CURRENT_DATE + INTERVAL 1 DAY)",
		"ALTER TABLE t ADD COLUMN g VARCHAR(40) NOT NULL DEFAULT (DATE_FORMAT(NOW(), '%W %M %Y'))",
		"ALTER TABLE t ADD COLUMN h TIMESTAMP NOT NULL DEFAULT '2021-06-01 12:00:00'"}},
	{"auto-increment column added", []string{
		"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (10),(20),(30)",
		"ALTER TABLE t ADD COLUMN n INT NOT NULL AUTO_INCREMENT UNIQUE KEY"}},
	{"zero dates", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, d DATE DEFAULT '0000-00-00', s VARCHAR(10) DEFAULT 'x')",
		"INSERT INTO t (id) VALUES (1)"}},
	{"string defaults", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20) DEFAULT 'é€', w VARCHAR(20) CHARACTER SET latin1 DEFAULT 'ü', x TEXT)",
		"INSERT INTO t (id, x) VALUES (1, 'ß')", "ALTER TABLE t ADD COLUMN y VARCHAR(10) NOT NULL DEFAULT 'ñ'"}},
	{"generated columns", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, g INT AS (id*2) VIRTUAL, s VARCHAR(30) AS (CONCAT('x', id)) STORED)",
		"INSERT INTO t (id) VALUES (1),(2)", "ALTER TABLE t ADD COLUMN h BIGINT AS (id + 100) STORED"}},
	{"create select", []string{
		"CREATE TABLE t AS SELECT 1 AS id, NOW() AS n, DATE_FORMAT(NOW(), '%W %M') AS m, UNIX_TIMESTAMP() AS u, 'é' AS s"}},
	{"partitions", []string{
		"CREATE TABLE p (id INT, d DATE, PRIMARY KEY (id, d)) PARTITION BY RANGE (YEAR(d)) " +
			"(PARTITION p0 VALUES LESS THAN (2000), PARTITION p1 VALUES LESS THAN (2010), PARTITION p2 VALUES LESS THAN (2020))",
		"INSERT INTO p VALUES (1, '1999-01-01'), (2, '2005-01-01'), (3, '2015-01-01')",
		"ALTER TABLE p ADD PARTITION (PARTITION p3 VALUES LESS THAN (2030))", "ALTER TABLE p TRUNCATE PARTITION p0",
		"ALTER TABLE p DROP PARTITION p1", "ALTER TABLE p REORGANIZE PARTITION p2, p3 INTO (PARTITION p23 VALUES LESS THAN (2030))"}},
	{"sequences", []string{
		"CREATE SEQUENCE s START WITH 10 INCREMENT BY 5", "SELECT NEXTVAL(s)", "SELECT NEXTVAL(s)",
		"CREATE TABLE t (id INT DEFAULT (NEXTVAL(s)) PRIMARY KEY, v INT)", "INSERT INTO t (v) VALUES (1),(2)",
		"ALTER SEQUENCE s RESTART WITH 100", "SELECT NEXTVAL(s)"}},
	{"views", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 10)",
		"CREATE VIEW v AS SELECT id, v * 2 AS w FROM t", "CREATE OR REPLACE VIEW v AS SELECT id, v + 1 AS w, NOW() AS n FROM t",
		"ALTER VIEW v AS SELECT id FROM t"}},
	{"routines", []string{
		"CREATE FUNCTION f(x INT) RETURNS VARCHAR(20) DETERMINISTIC RETURN CONCAT('v', x)",
		"CREATE PROCEDURE p() COMMENT 'é' BEGIN DECLARE n INT DEFAULT 1; SELECT n; END", "DROP PROCEDURE p"}},
	{"indexes", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(50), b TEXT, c INT)", "INSERT INTO t VALUES (1, 'x', 'some text', 1)",
		"CREATE INDEX ia ON t (a)", "ALTER TABLE t ADD FULLTEXT INDEX fb (b)", "ALTER TABLE t ADD UNIQUE KEY uc (c), ALGORITHM=INPLACE, LOCK=NONE",
		"DROP INDEX ia ON t", "ALTER TABLE t RENAME INDEX uc TO uc2"}},
	{"constraints", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT, CONSTRAINT pos CHECK (v > 0))", "INSERT INTO t VALUES (1, 5)",
		"ALTER TABLE t ADD CONSTRAINT small CHECK (v < 100)", "ALTER TABLE t DROP CONSTRAINT small"}},
	{"truncate and rename", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10))", "INSERT INTO t VALUES (1, 'a'), (2, 'b')", "TRUNCATE TABLE t",
		"INSERT INTO t VALUES (3, 'c')", "RENAME TABLE t TO u", "ALTER TABLE u RENAME COLUMN v TO w",
		"ALTER TABLE u CHANGE w x VARCHAR(20) CHARACTER SET latin1", "CREATE TABLE l LIKE u", "OPTIMIZE TABLE u", "ANALYZE TABLE u"}},
	{"convert charset", []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=utf8mb4", "INSERT INTO t VALUES (1, 'àé')",
		"ALTER TABLE t CONVERT TO CHARACTER SET latin1", "ALTER DATABASE CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci",
		"CREATE TABLE t2 (v VARCHAR(5))"}},
}

// statementForms are the other forms MariaDB logs in ROW format.
func statementForms() []corpusWorkload {
	out := []corpusWorkload{
		{name: "form/triggers and events are kept for cut-over", deferred: 3, stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE log (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
			"CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW INSERT INTO log (v) VALUES (NEW.v)",
			"INSERT INTO t VALUES (1, 10)", "CREATE EVENT ev ON SCHEDULE EVERY 1 HOUR DO DELETE FROM log", "DROP TRIGGER tr"}},
		{name: "form/savepoints", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY)", "BEGIN", "INSERT INTO t VALUES (1)", "SAVEPOINT a", "INSERT INTO t VALUES (2)",
			"ROLLBACK TO SAVEPOINT a", "INSERT INTO t VALUES (3)", "COMMIT"}},
		{name: "form/rolled-back transaction", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY)", "BEGIN", "INSERT INTO t VALUES (1)", "ROLLBACK", "INSERT INTO t VALUES (2)"}},
		{name: "form/create or replace", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", "CREATE OR REPLACE TABLE t (b INT PRIMARY KEY)",
			"INSERT INTO t VALUES (2)", "CREATE OR REPLACE TABLE t2 AS SELECT b * 10 AS c FROM t"}},
		{name: "form/if not exists and if exists", stmts: []string{
			"CREATE TABLE t (a INT)", "CREATE TABLE IF NOT EXISTS t (a INT)", "DROP TABLE IF EXISTS nothere",
			"CREATE INDEX IF NOT EXISTS ia ON t (a)", "CREATE INDEX IF NOT EXISTS ia ON t (a)", "ALTER TABLE t DROP INDEX IF EXISTS nope",
			"ALTER TABLE t ADD COLUMN IF NOT EXISTS a INT", "ALTER TABLE t ADD COLUMN IF NOT EXISTS b INT"}},
		{name: "form/multi-table rename and drop", stmts: []string{
			"CREATE TABLE a (x INT)", "CREATE TABLE b (x INT)", "RENAME TABLE a TO tmp, b TO a, tmp TO b", "DROP TABLE a, b"}},
		{name: "form/foreign keys added and dropped", stmts: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, p INT)", "INSERT INTO p VALUES (1)",
			"INSERT INTO c VALUES (1, 1)", "ALTER TABLE c ADD CONSTRAINT fk FOREIGN KEY (p) REFERENCES p(id) ON DELETE CASCADE",
			"DELETE FROM p", "ALTER TABLE c DROP FOREIGN KEY fk"}},
		{name: "form/foreign key added with checks off", stmts: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)", "CREATE TABLE c (id INT PRIMARY KEY, p INT)", "INSERT INTO c VALUES (1, 99)",
			"SET foreign_key_checks=0", "ALTER TABLE c ADD FOREIGN KEY (p) REFERENCES p(id)", "SET foreign_key_checks=1"}},
		{name: "form/sequence used by nextval and setval", stmts: []string{
			"CREATE SEQUENCE s", "SELECT NEXTVAL(s)", "SELECT SETVAL(s, 1000)", "SELECT NEXTVAL(s)", "DROP SEQUENCE s",
			"CREATE SEQUENCE s2 CYCLE MINVALUE 1 MAXVALUE 2", "SELECT NEXTVAL(s2)", "SELECT NEXTVAL(s2)", "SELECT NEXTVAL(s2)"}},
		{name: "form/drop sequence naming a missing one", stmts: []string{
			"CREATE SEQUENCE s1", "!DROP SEQUENCE s1, s_missing"}},
		{name: "form/expected duplicate key error", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY, b INT)", "INSERT INTO t VALUES (1, 1), (2, 1)",
			"!ALTER TABLE t ADD UNIQUE KEY (b)", "!CREATE TABLE t2 (a INT PRIMARY KEY) SELECT 1 AS a UNION ALL SELECT 1"}},
		{name: "form/database options", stmts: []string{
			"ALTER DATABASE COMMENT 'corpus'", "CREATE TABLE t (a INT) COMMENT 'x' ROW_FORMAT=DYNAMIC"}},
		{name: "form/alter with online options", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"ALTER ONLINE TABLE t ADD COLUMN w INT", "ALTER TABLE t MODIFY v BIGINT, ALGORITHM=COPY, LOCK=SHARED",
			"ALTER TABLE t ADD INDEX (w), LOCK=NONE", "ALTER TABLE t FORCE"}},
		{name: "form/insert ids and rand in DDL", stmts: []string{
			"CREATE TABLE t (id INT AUTO_INCREMENT PRIMARY KEY, r DOUBLE)", "SET @@rand_seed1=1, @@rand_seed2=2",
			"INSERT INTO t (r) VALUES (RAND())", "SET @u = 'user value', @n = 42",
			"CREATE TABLE t2 AS SELECT @u AS u, @n AS n, LAST_INSERT_ID() AS l"}},
		{name: "form/minimal and noblob row images", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY, b INT, u VARCHAR(5) UNIQUE, d INT DEFAULT 3, x TEXT)",
			"CREATE TABLE c (id INT PRIMARY KEY, a INT, FOREIGN KEY (a) REFERENCES t (a) ON DELETE CASCADE)",
			"SET SESSION binlog_row_image=MINIMAL", "INSERT INTO t (a, b, u) VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, NULL)",
			"INSERT INTO c VALUES (1, 1), (2, 2)", "UPDATE t SET b = 20", "UPDATE t SET a = 4 WHERE a = 3", "UPDATE c SET a = 2",
			"DELETE FROM t WHERE a = 1", "SET SESSION binlog_row_image=NOBLOB", "UPDATE t SET x = 'text' WHERE a = 2",
			"UPDATE t SET u = 'c' WHERE a = 4", "DELETE FROM t WHERE a = 2"}},
		{name: "form/comments and executable comments", stmts: []string{
			"/* leading comment */ CREATE TABLE t (a INT)", "CREATE /*!50100 TEMPORARY */ TABLE tmp (a INT)",
			"/*!40101 ALTER TABLE t ADD COLUMN b INT */", "# hash comment\nCREATE TABLE t2 (a INT)"}},
	}
	for i, mode := range []string{"", "ANSI_QUOTES", "PAD_CHAR_TO_FULL_LENGTH", "NO_BACKSLASH_ESCAPES", "HIGH_NOT_PRECEDENCE", "EMPTY_STRING_IS_NULL", "SIMULTANEOUS_ASSIGNMENT", "TIME_ROUND_FRACTIONAL"} {
		out = append(out, corpusWorkload{name: fmt.Sprintf("form/sql_mode %d %s", i, mode), stmts: []string{
			"SET sql_mode='" + mode + "'",
			"CREATE TABLE t (id INT PRIMARY KEY, c CHAR(5) DEFAULT 'ab', s VARCHAR(20) DEFAULT 'a\\\\b', t TIME(2) DEFAULT '10:00:00.129', e VARCHAR(5) DEFAULT '')",
			"INSERT INTO t (id) VALUES (1)", "ALTER TABLE t ADD COLUMN ts DATETIME(1) DEFAULT '2020-01-01 00:00:00.96'"}})
	}
	return out
}

// refusals are the workloads binlane stops at; the reason each gives is in
// the README.
func refusals() []corpusWorkload {
	return []corpusWorkload{
		{name: "refuse/system-versioned table created", refuse: "system-versioned tables", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "CREATE TABLE v (a INT PRIMARY KEY) WITH SYSTEM VERSIONING"}},
		{name: "refuse/system versioning added", refuse: "system-versioned tables", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", "ALTER TABLE t ADD SYSTEM VERSIONING"}},
		{name: "refuse/a writing function called in a STATEMENT session", refuse: "whose tables binlane cannot name",
			pre: []string{"CREATE TABLE t (a INT PRIMARY KEY AUTO_INCREMENT, v INT)",
				"CREATE FUNCTION f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO t (v) VALUES (1); RETURN 1; END"},
			preTarget: []string{"CREATE TABLE t (a INT PRIMARY KEY AUTO_INCREMENT, v INT)",
				"CREATE FUNCTION f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN INSERT INTO t (v) VALUES (1); RETURN 1; END"},
			stmts: []string{"CREATE TABLE t2 (a INT)", "SET SESSION binlog_format=STATEMENT", "SELECT f()"}},
		{name: "refuse/CREATE TABLE ... SELECT logged as a statement", refuse: "CREATE TABLE ... SELECT logged as a statement", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1)", "SET SESSION binlog_format=MIXED", "CREATE TABLE c SELECT * FROM t"}},
		{name: "refuse/a column added with DEFAULT (UUID())", refuse: "DEFAULT calls UUID()", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "INSERT INTO t VALUES (1),(2)", "ALTER TABLE t ADD COLUMN u CHAR(36) DEFAULT (UUID())"}},
		{name: "refuse/non-deterministic function on a binlogging target", refuse: "log_bin_trust_function_creators",
			pre:       []string{"SET GLOBAL log_bin_trust_function_creators=1", "CREATE TABLE t (a INT PRIMARY KEY)"},
			preTarget: []string{"CREATE TABLE t (a INT PRIMARY KEY)"},
			stmts:     []string{"CREATE TABLE t2 (a INT)", "CREATE FUNCTION f() RETURNS INT RETURN (SELECT COUNT(*) FROM t)"}},
		{name: "refuse/XA prepared before the stream", refuse: "XA PREPARE came before the stream's start",
			pre: []string{"CREATE TABLE t (a INT PRIMARY KEY)", "XA START 'corpus-orphan'", "INSERT INTO t VALUES (1)",
				"XA END 'corpus-orphan'", "XA PREPARE 'corpus-orphan'"},
			preTarget: []string{"CREATE TABLE t (a INT PRIMARY KEY)"},
			stmts:     []string{"CREATE TABLE t2 (a INT)", "XA COMMIT 'corpus-orphan'"}},
	}
}
