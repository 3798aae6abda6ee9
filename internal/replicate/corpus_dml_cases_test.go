package replicate

import "testing"

// statementDML is the corpus of row changes logged as statements (issue
// 31): every DML form, each workload run once in a MIXED session and once
// in a STATEMENT one. Under MIXED the source logs what it judges unsafe
// (LIMIT, RAND(), UUID()) as rows, so those workloads also mix statements
// and rows in one transaction.
func statementDML() []corpusWorkload {
	forms := []corpusWorkload{
		{name: "insert, update, delete, replace", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT, s VARCHAR(20))",
			"INSERT INTO t (v, s) VALUES (1, 'a'), (2, 'b'), (3, 'c')", // INSERT_ID
			"UPDATE t SET v = v * 10 WHERE id > 1",
			"DELETE FROM t WHERE id = 1",
			"REPLACE INTO t VALUES (2, 5, 'r'), (9, 9, 'n')",
			"INSERT INTO t (v) VALUES (7) ON DUPLICATE KEY UPDATE v = v + 1",
			"INSERT IGNORE INTO t VALUES (9, 0, 'dup'), (10, 10, 'x')"}},
		{name: "multi-table update and delete", stmts: []string{
			"CREATE TABLE a (id INT PRIMARY KEY, v INT)", "CREATE TABLE b (id INT PRIMARY KEY, w INT)",
			"INSERT INTO a VALUES (1, 1), (2, 2), (3, 3), (4, 4)", "INSERT INTO b VALUES (1, 10), (2, 20), (3, 30)",
			"UPDATE a JOIN b ON a.id = b.id SET a.v = b.w, b.w = b.w + 1 WHERE a.id < 3",
			"UPDATE a, b SET a.v = a.v + b.w WHERE a.id = b.id AND b.id = 3",
			"DELETE a, b FROM a JOIN b ON a.id = b.id WHERE a.id = 2",
			"DELETE FROM a USING a LEFT JOIN b ON a.id = b.id WHERE b.id IS NULL"}},
		{name: "insert select", stmts: []string{
			"CREATE TABLE a (id INT PRIMARY KEY, v INT)", "CREATE TABLE c (id INT PRIMARY KEY, v INT, n INT DEFAULT 0)",
			"INSERT INTO a VALUES (1, 1), (2, 2), (3, 3)",
			"INSERT INTO c (id, v) SELECT id, v * 2 FROM a WHERE id IN (SELECT id FROM a WHERE v > 1)",
			"INSERT INTO c (id, v) SELECT id, v FROM a ON DUPLICATE KEY UPDATE n = n + 1",
			"REPLACE INTO c (id, v) SELECT x.id + 10, x.v FROM (SELECT id, v FROM a) AS x"}},
		{name: "order by limit", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)",
			"DELETE FROM t ORDER BY id LIMIT 2", "UPDATE t SET v = 0 ORDER BY id DESC LIMIT 1"}},
		{name: "procedure", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "INSERT INTO t (v) VALUES (1), (2), (3)",
			"CREATE PROCEDURE p(n INT) BEGIN DELETE FROM t ORDER BY id LIMIT 1; INSERT INTO t (v) VALUES (n); UPDATE t SET v = v + n; END",
			"CALL p(5)", "CALL p(7)"}},
		{name: "user variables", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, i BIGINT UNSIGNED, j BIGINT, d DECIMAL(10,3), r DOUBLE, s VARCHAR(20), l VARCHAR(20) CHARACTER SET latin1)",
			"SET @i := -42, @u := CAST(18446744073709551615 AS UNSIGNED), @d := 3.125, @r := 1e-3, @s := 'héllo', @n := NULL",
			"SET @l := _latin1 X'E9'",
			"INSERT INTO t VALUES (1, 0, @i, @d, @r, @s, @l)", "INSERT INTO t VALUES (2, @u, 0, @n, @r * 2, CONCAT(@s, '!'), @s)",
			"UPDATE t SET s = @s, j = @i + id WHERE id = 2"}},
		{name: "last_insert_id and insert_id", stmts: []string{
			"CREATE TABLE p (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "CREATE TABLE c (id INT PRIMARY KEY AUTO_INCREMENT, p INT)",
			"INSERT INTO p (v) VALUES (1)", "INSERT INTO c (p) VALUES (LAST_INSERT_ID())",
			"INSERT INTO p (id, v) VALUES (100, 2)", "INSERT INTO p (v) VALUES (3)", "INSERT INTO c (p) VALUES (LAST_INSERT_ID()), (LAST_INSERT_ID() + 1)",
			"UPDATE p SET v = LAST_INSERT_ID(v + 10) WHERE id = 1", "INSERT INTO c (p) VALUES (LAST_INSERT_ID())"}},
		{name: "rand and the clock", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT, ts TIMESTAMP(6) NULL, d DATETIME NULL)",
			"SET time_zone = '+05:30', timestamp = 1700000000.123456",
			"INSERT INTO t VALUES (1, FLOOR(RAND() * 1000000), NOW(6), NOW()), (2, FLOOR(RAND() * 1000000), CURRENT_TIMESTAMP(6), CURDATE())",
			"SET timestamp = DEFAULT",
			"UPDATE t SET v = v + FLOOR(RAND(7) * 100) WHERE id = 2"}},
		{name: "sql_mode of the session", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(5), n TINYINT)",
			"SET sql_mode = ''",
			"INSERT INTO t VALUES (1, 'much too long', 1000)", // truncated, clamped: warnings, not errors
			"SET sql_mode = 'PIPES_AS_CONCAT,ANSI_QUOTES'",
			"UPDATE t SET s = 'a' || 'b' WHERE id = 1"}},
		{name: "a transaction of statements and rows", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT, u CHAR(36))", "INSERT INTO t VALUES (1, 1, ''), (2, 2, '')",
			// MIXED logs the UPDATE ... LIMIT as rows (unsafe), the rest as statements.
			"BEGIN", "INSERT INTO t VALUES (3, 3, '')", "UPDATE t SET u = 'x' ORDER BY id LIMIT 1",
			"INSERT INTO t SELECT id + 10, v, u FROM t WHERE id < 3", "DELETE FROM t WHERE id = 2", "COMMIT"}},
		{name: "load data", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20), d DATE)",
			"CREATE TABLE src (id INT PRIMARY KEY, s VARCHAR(20), d DATE)",
			"INSERT INTO src VALUES (1, 'tab\\there', '2024-01-02'), (2, NULL, NULL), (3, 'quote''s', '1999-12-31')",
			"SELECT * FROM src INTO OUTFILE 'binlane_corpus_load.txt'",
			"LOAD DATA INFILE 'binlane_corpus_load.txt' INTO TABLE t",
			"LOAD DATA INFILE 'binlane_corpus_load.txt' REPLACE INTO TABLE t (id, @s, d) SET s = UPPER(@s)"}},
		{name: "temporary table feeding a real one", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"CREATE TEMPORARY TABLE tmp (id INT PRIMARY KEY, v INT)", "INSERT INTO tmp VALUES (2, 2), (3, 3)",
			"INSERT INTO tmp SELECT id + 10, v FROM t", "UPDATE tmp SET v = v * 10 WHERE id > 2",
			"INSERT INTO t SELECT * FROM tmp", "UPDATE t JOIN tmp USING (id) SET t.v = t.v + tmp.v WHERE tmp.id = 2",
			"DELETE t FROM t JOIN tmp USING (id) WHERE tmp.v = 30", "DROP TEMPORARY TABLE tmp",
			"CREATE TEMPORARY TABLE tmp2 SELECT id, v FROM t WHERE id < 12", "INSERT INTO t SELECT id + 100, v FROM tmp2"}},
		{name: "temporary table shadowing a real one, in a transaction", stmts: []string{
			"CREATE TABLE r (id INT PRIMARY KEY)", "CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO r VALUES (7)",
			"BEGIN", "CREATE TEMPORARY TABLE r (id INT)", "INSERT INTO r VALUES (1), (2)", "INSERT INTO t SELECT id FROM r", "COMMIT",
			"ALTER TABLE r ADD COLUMN x INT", "INSERT INTO r VALUES (3, 3)", "INSERT INTO t SELECT id FROM r WHERE x = 3",
			"DROP TEMPORARY TABLE r", "INSERT INTO t SELECT id FROM r"}},
		{name: "temporary table written alone", stmts: []string{
			"CREATE TABLE t (id INT PRIMARY KEY)", "INSERT INTO t VALUES (1)",
			"CREATE TEMPORARY TABLE tmp (id INT)", "INSERT INTO tmp SELECT id FROM t", "UPDATE tmp SET id = id + 1",
			"DROP TEMPORARY TABLE tmp", "INSERT INTO t VALUES (2)"}},
	}
	var out []corpusWorkload
	for _, format := range []string{"MIXED", "STATEMENT"} {
		for _, f := range forms {
			w := f
			w.name = "dml " + format + "/" + f.name
			w.stmts = append([]string{"SET SESSION binlog_format=" + format}, f.stmts...)
			out = append(out, w)
		}
	}
	return out
}

// dmlRefusals are statement-logged DML statements binlane must not run:
// their effect on the target could differ from the source's.
func dmlRefusals() []corpusWorkload {
	return []corpusWorkload{
		{name: "refuse/statement DML on a table with triggers on the source", refuse: "has triggers on the source", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "CREATE TABLE log (a INT)",
			"CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW INSERT INTO log VALUES (NEW.a)",
			"SET SESSION binlog_format=STATEMENT", "INSERT INTO t VALUES (1)"}},
		{name: "refuse/statement DML reading a table not replicated", refuse: "which the stream does not replicate", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "CREATE TABLE IF NOT EXISTS marker.notrepl (a INT)", "INSERT INTO marker.notrepl VALUES (5)",
			"SET SESSION binlog_format=MIXED", "INSERT INTO t SELECT a FROM marker.notrepl"}},
		{name: "refuse/statement DML calling a stored function", refuse: "calls stored function",
			pre: []string{"CREATE TABLE t (a INT PRIMARY KEY AUTO_INCREMENT, v INT)",
				"CREATE FUNCTION f() RETURNS INT DETERMINISTIC READS SQL DATA RETURN (SELECT COUNT(*) FROM t)"},
			preTarget: []string{"CREATE TABLE t (a INT PRIMARY KEY AUTO_INCREMENT, v INT)",
				"CREATE FUNCTION f() RETURNS INT DETERMINISTIC READS SQL DATA RETURN (SELECT COUNT(*) FROM t)"},
			stmts: []string{"CREATE TABLE t2 (a INT)", "SET SESSION binlog_format=STATEMENT", "INSERT INTO t2 VALUES (f())"}},
		{name: "refuse/statement DML calling UUID()", refuse: "calls UUID()", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY, u CHAR(36))", "SET SESSION binlog_format=STATEMENT", "INSERT INTO t VALUES (1, UUID())"}},
		{name: "refuse/statement DML into a table with DEFAULT (UUID())", refuse: "has DEFAULT uuid()", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY, u CHAR(36) DEFAULT (UUID()))", "SET SESSION binlog_format=STATEMENT", "INSERT INTO t (a) VALUES (1)"}},
		{name: "refuse/statement DML reading a system variable", refuse: "reads a system variable", stmts: []string{
			"CREATE TABLE t (a INT PRIMARY KEY)", "SET SESSION binlog_format=STATEMENT", "INSERT INTO t VALUES (@@server_id)"}},
	}
}

// TestStatementDMLCorpus replicates the statement-logged DML workloads with
// 1 and 8 workers and compares mariadb-dump of the servers (the whole
// corpus, TestStatementCorpus, holds them too).
func TestStatementDMLCorpus(t *testing.T) {
	replicateCorpus(t, statementDML())
}
