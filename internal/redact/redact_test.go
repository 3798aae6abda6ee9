package redact

import (
	"strings"
	"testing"
)

// R is the marker, short for the tables below.
const R = Marker

var statementCases = []struct {
	name, in, want string
}{
	// Account statements.
	{"create user", `CREATE USER u@'%' IDENTIFIED BY 'PlainTextPw111'`, `CREATE USER u@'%' IDENTIFIED BY ` + R},
	{"lower case", `create user u identified by 'pw'`, `create user u identified by ` + R},
	{"by password hash", `CREATE USER 'u'@'%' IDENTIFIED BY PASSWORD '*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19'`,
		`CREATE USER 'u'@'%' IDENTIFIED BY PASSWORD ` + R},
	{"via using password()", `CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD('secret')`,
		`CREATE USER u IDENTIFIED VIA ed25519 USING PASSWORD(` + R + `)`},
	{"via as", `CREATE USER u IDENTIFIED VIA ed25519 AS 'ZIgUREUg5PVgQ6LskhXmO+eZLS0nC8be6HPjYWR4YJY'`,
		`CREATE USER u IDENTIFIED VIA ed25519 AS ` + R},
	{"via or chain", `CREATE USER u IDENTIFIED VIA mysql_native_password USING '*H1' OR unix_socket OR ed25519 AS 'h2'`,
		`CREATE USER u IDENTIFIED VIA mysql_native_password USING ` + R + ` OR unix_socket OR ed25519 AS ` + R},
	{"via or first without data", `CREATE USER u IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('pw')`,
		`CREATE USER u IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD(` + R + `)`},
	{"with as", `CREATE USER u IDENTIFIED WITH mysql_native_password AS '*H'`, `CREATE USER u IDENTIFIED WITH mysql_native_password AS ` + R},
	{"mysql 8 with by", `CREATE USER u IDENTIFIED WITH caching_sha2_password BY 'pw'`,
		`CREATE USER u IDENTIFIED WITH caching_sha2_password BY ` + R},
	{"mysql 8 quoted plugin as", `CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' AS '$A$005$x''y'`,
		`CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' AS ` + R},
	{"mysql 8 hex hash", `CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' AS 0x2441243030352430 REQUIRE NONE PASSWORD EXPIRE DEFAULT`,
		`CREATE USER 'u'@'%' IDENTIFIED WITH 'caching_sha2_password' AS ` + R + ` REQUIRE NONE PASSWORD EXPIRE DEFAULT`},
	{"random password", `CREATE USER u IDENTIFIED BY RANDOM PASSWORD, v IDENTIFIED WITH p BY RANDOM PASSWORD`,
		`CREATE USER u IDENTIFIED BY RANDOM PASSWORD, v IDENTIFIED WITH p BY RANDOM PASSWORD`},
	{"two users", `CREATE USER IF NOT EXISTS u1 IDENTIFIED BY 'a', 'u2'@'h' IDENTIFIED BY 'b' PASSWORD EXPIRE INTERVAL 90 DAY`,
		`CREATE USER IF NOT EXISTS u1 IDENTIFIED BY ` + R + `, 'u2'@'h' IDENTIFIED BY ` + R + ` PASSWORD EXPIRE INTERVAL 90 DAY`},
	{"multi-factor", `CREATE USER u IDENTIFIED BY 'a' AND IDENTIFIED WITH authentication_ldap_sasl AS 'b'`,
		`CREATE USER u IDENTIFIED BY ` + R + ` AND IDENTIFIED WITH authentication_ldap_sasl AS ` + R},
	{"hex glued to a quote", `SET PASSWORD = 0x41'x'`, `SET PASSWORD = ` + R + ` 'x'`},
	{"modify factor", `ALTER USER u MODIFY 2 FACTOR IDENTIFIED BY 'x'`, `ALTER USER u MODIFY 2 FACTOR IDENTIFIED BY ` + R},
	{"alter user replace", `ALTER USER u IDENTIFIED BY 'new' REPLACE 'old' RETAIN CURRENT PASSWORD`,
		`ALTER USER u IDENTIFIED BY ` + R + ` REPLACE ` + R + ` RETAIN CURRENT PASSWORD`},
	{"grant", `GRANT ALL ON *.* TO u@localhost IDENTIFIED BY 'x' WITH GRANT OPTION`,
		`GRANT ALL ON *.* TO u@localhost IDENTIFIED BY ` + R + ` WITH GRANT OPTION`},
	{"grant hash", `GRANT USAGE ON *.* TO 'u'@'%' IDENTIFIED BY PASSWORD '*H'`, `GRANT USAGE ON *.* TO 'u'@'%' IDENTIFIED BY PASSWORD ` + R},
	{"grant via", `GRANT SELECT ON d.* TO u IDENTIFIED VIA pam USING 'mariadb' WITH GRANT OPTION`,
		`GRANT SELECT ON d.* TO u IDENTIFIED VIA pam USING ` + R + ` WITH GRANT OPTION`},
	{"set password function", `SET PASSWORD FOR 'u'@'h' = PASSWORD('x')`, `SET PASSWORD FOR 'u'@'h' = PASSWORD(` + R + `)`},
	{"set password hash", `SET PASSWORD = '*H'`, `SET PASSWORD = ` + R},
	{"set password for hash", `SET PASSWORD FOR u@'%' = '*H'`, `SET PASSWORD FOR u@'%' = ` + R},
	{"set password old_password", `set password for u = old_password('x')`, `set password for u = old_password(` + R + `)`},
	{"set password replace", `SET PASSWORD FOR u = 'new' REPLACE 'old'`, `SET PASSWORD FOR u = ` + R + ` REPLACE ` + R},
	{"set password current_user()", `SET PASSWORD FOR CURRENT_USER() = 'x'`, `SET PASSWORD FOR CURRENT_USER() = ` + R},
	{"set password to random", `SET PASSWORD FOR u TO RANDOM`, `SET PASSWORD FOR u TO RANDOM`},
	// Server and replication statements.
	{"create server", `CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'h', USER 'u', PASSWORD 'x', PORT 3306)`,
		`CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'h', USER 'u', PASSWORD ` + R + `, PORT 3306)`},
	{"alter server", `ALTER SERVER s OPTIONS (PASSWORD "x")`, `ALTER SERVER s OPTIONS (PASSWORD ` + R + `)`},
	{"change master", `CHANGE MASTER TO MASTER_HOST='h', MASTER_USER='u', MASTER_PASSWORD = 'x', MASTER_PORT=3306`,
		`CHANGE MASTER TO MASTER_HOST='h', MASTER_USER='u', MASTER_PASSWORD = ` + R + `, MASTER_PORT=3306`},
	{"change replication source", `CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD='x' FOR CHANNEL 'c'`,
		`CHANGE REPLICATION SOURCE TO SOURCE_PASSWORD=` + R + ` FOR CHANNEL 'c'`},
	{"start slave", `START SLAVE USER='u' PASSWORD='x'`, `START SLAVE USER='u' PASSWORD=` + R},
	{"password function anywhere", `SELECT PASSWORD('x'), 1`, `SELECT PASSWORD(` + R + `), 1`},
	{"column named password", `UPDATE t SET password = 'x', name = 'y' WHERE id = 1`, `UPDATE t SET password = ` + R + `, name = 'y' WHERE id = 1`},
	// Quoting, escapes, comments.
	{"doubled quote", `CREATE USER u IDENTIFIED BY 'it''s' COMMENT 'c'`, `CREATE USER u IDENTIFIED BY ` + R + ` COMMENT 'c'`},
	{"backslash quote", `CREATE USER u IDENTIFIED BY 'a\'b\\' COMMENT 'c'`, `CREATE USER u IDENTIFIED BY ` + R + ` COMMENT 'c'`},
	{"double quoted (Text hides more)", `CREATE USER "u"@"h" IDENTIFIED BY "p""w\"" COMMENT 'c'`, `CREATE USER "u"@"h" IDENTIFIED BY ` + R + ` COMMENT 'c'`},
	{"introducer", `CREATE USER u IDENTIFIED BY _utf8mb4'x' COLLATE utf8mb4_bin`, `CREATE USER u IDENTIFIED BY ` + R + ` COLLATE utf8mb4_bin`},
	{"hex literal", `CHANGE MASTER TO MASTER_PASSWORD = X'41', MASTER_USER = 0x42`, `CHANGE MASTER TO MASTER_PASSWORD = ` + R + `, MASTER_USER = 0x42`},
	{"comments between", "CREATE USER /* it's */ u IDENTIFIED -- it's\n BY # it's\n 'x'", "CREATE USER /* it's */ u IDENTIFIED -- it's\n BY # it's\n " + R},
	{"quote in comment before", "/* don't */ CREATE USER u IDENTIFIED BY 'x'", "/* don't */ CREATE USER u IDENTIFIED BY " + R},
	{"executable comment", `/*!80001 CREATE USER u IDENTIFIED BY 'x' */`, `/*!80001 CREATE USER u IDENTIFIED BY ` + R + ` */`},
	{"mariadb executable comment", `CREATE USER u /*M!100100 IDENTIFIED VIA ed25519 USING PASSWORD('x') */ COMMENT 'c'`,
		`CREATE USER u /*M!100100 IDENTIFIED VIA ed25519 USING PASSWORD(` + R + `) */ COMMENT 'c'`},
	{"unterminated", `CREATE USER u IDENTIFIED BY 'truncat`, `CREATE USER u IDENTIFIED BY ` + R},
	{"statements in a row", `CREATE USER a IDENTIFIED BY 'x'; SET PASSWORD FOR a = 'y'; SELECT 'password'`,
		`CREATE USER a IDENTIFIED BY ` + R + `; SET PASSWORD FOR a = ` + R + `; SELECT 'password'`},
	// Left alone.
	{"keyword in a string", `INSERT INTO t VALUES ('IDENTIFIED BY', 'x'), ('password', 'y')`, `INSERT INTO t VALUES ('IDENTIFIED BY', 'x'), ('password', 'y')`},
	{"keyword in a comment", `/* IDENTIFIED BY */ SELECT 'x' -- password 'y'`, `/* IDENTIFIED BY */ SELECT 'x' -- password 'y'`},
	{"keyword in an identifier", "SELECT `password` 'x', user_password = 'y' FROM t", "SELECT `password` 'x', user_password = 'y' FROM t"},
	{"password column definition", `CREATE TABLE t (password VARCHAR(10) DEFAULT 'x', PRIMARY KEY (password))`,
		`CREATE TABLE t (password VARCHAR(10) DEFAULT 'x', PRIMARY KEY (password))`},
	{"password options", `ALTER USER u PASSWORD EXPIRE NEVER PASSWORD HISTORY 5 ACCOUNT LOCK`, `ALTER USER u PASSWORD EXPIRE NEVER PASSWORD HISTORY 5 ACCOUNT LOCK`},
	{"no keyword", `INSERT INTO t VALUES (1, 'a\'b')`, `INSERT INTO t VALUES (1, 'a\'b')`},
	// Logged under NO_BACKSLASH_ESCAPES: a backslash ends no string, and
	// the password after it is hidden all the same.
	{"no backslash escapes: host", `CREATE USER a@'h\' IDENTIFIED BY 'secret3'`, `CREATE USER a@'h\' IDENTIFIED BY ` + R},
	{"no backslash escapes: set password", `SET PASSWORD FOR 'u\'@'%' = PASSWORD('secret4')`,
		`SET PASSWORD FOR 'u\'@'%' = PASSWORD(` + R + `)`},
	{"no backslash escapes: two users (Text hides more)", `CREATE USER a IDENTIFIED BY 'x\', b IDENTIFIED BY 'secret2'`,
		`CREATE USER a IDENTIFIED BY ` + R + `, b IDENTIFIED BY ` + R},

	{"empty", ``, ``},
}

func TestStatement(t *testing.T) {
	for _, c := range statementCases {
		t.Run(c.name, func(t *testing.T) {
			if got := Statement(c.in); got != c.want {
				t.Errorf("Statement(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
			// Text finds the same secrets in a message quoting the statement.
			msg := "apply " + c.in + ": failed"
			// A message does not say it quotes a whole statement: with a
			// backslash, Text reads it in both modes and may hide more.
			got, want := Text(msg), "apply "+c.want+": failed"
			// (TestText has those cases.)
			if got != want && !strings.Contains(c.name, "Text hides more") && !strings.Contains(c.name, "unterminated") && !strings.Contains(c.name, "keyword in") {
				t.Errorf("Text(%s)\n got %s\nwant %s", msg, got, want)
			}
		})
	}
}

func TestText(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"apostrophe before statement", `can't apply CREATE USER u IDENTIFIED BY 'pw': it's broken`,
			`can't apply CREATE USER u IDENTIFIED BY ` + R + `: it's broken`},
		{"quoted keyword is a value", `Duplicate entry 'password' for key 'PRIMARY'`, `Duplicate entry 'password' for key 'PRIMARY'`},
		{"set password in prose", `error 1133 on SET PASSWORD FOR u = 'x' (can't find user)`,
			`error 1133 on SET PASSWORD FOR u = ` + R + ` (can't find user)`},
		{"url", `connect mysql://repl:s3cret@db1:3306/ failed`, `connect mysql://repl:***@db1:3306/ failed`},
		{"mariadb url", `source=mariadb://repl:s3cret@db1/shop?tls=true`, `source=mariadb://repl:***@db1/shop?tls=true`},
		{"url without password", `target mysql://binlane@db2:3306/ ok`, `target mysql://binlane@db2:3306/ ok`},
		{"url with @ in password", `mysql://u:p@ss@h:1/`, `mysql://u:***@h:1/`},
		{"url quoted", `server "mysql://u:pw@h/" 'mysql://v:pw2@h/'`, `server "mysql://u:***@h/" 'mysql://v:***@h/'`},
		{"already hidden", `mysql://u:***@h/`, `mysql://u:***@h/`},
		{"dsn", `u:p@tcp(h:3306)/db`, `u:***@tcp(h:3306)/db`},
		{"dsn in flag", `--source=repl:pw:x@tcp(127.0.0.1:3306)/ refused`, `--source=repl:***@tcp(127.0.0.1:3306)/ refused`},
		{"dsn in json", `{"source":"u:p@tcp6([::1]:3306)/"}`, `{"source":"u:***@tcp6([::1]:3306)/"}`},
		{"dsn unix", `u:p@unix(/run/mysqld.sock)/`, `u:***@unix(/run/mysqld.sock)/`},
		{"dsn without password", `u@tcp(h)/`, `u@tcp(h)/`},
		{"url in a dsn shape", `mysql://u:p@tcp(h:1)/`, `mysql://u:***@tcp(h:1)/`},
		{"e-mail", `mail admin@example.com: dial tcp 127.0.0.1:3306: connection refused`, `mail admin@example.com: dial tcp 127.0.0.1:3306: connection refused`},
		{"statement and address", `mysql://u:pw@h/: CREATE USER x IDENTIFIED BY 'y'`, `mysql://u:***@h/: CREATE USER x IDENTIFIED BY ` + R},
		{"plain", `stream stopped at 0-1-100`, `stream stopped at 0-1-100`},
		// A message may quote a statement cut short: with a backslash it is
		// read in both modes, NO_BACKSLASH_ESCAPES's too.
		{"no backslash escapes, cut short", `near 'CREATE USER a@'\' IDENTIFIED BY 'p1', b@'h' IDENTIFIED BY 'p2' at line 1`,
			`near 'CREATE USER a@'\' IDENTIFIED BY ` + R + `, b@'h' IDENTIFIED BY ` + R + ` at line 1`},
		{"double quoted, both modes", `apply CREATE USER "u"@"h" IDENTIFIED BY "p""w\"" COMMENT 'c': failed`,
			`apply CREATE USER "u"@"h" IDENTIFIED BY ` + R},
		{"two users, both modes", `apply CREATE USER a IDENTIFIED BY 'x\', b IDENTIFIED BY 'secret2': failed`,
			`apply CREATE USER a IDENTIFIED BY ` + R + `: failed`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Text(c.in); got != c.want {
				t.Errorf("Text(%s)\n got %s\nwant %s", c.in, got, c.want)
			}
		})
	}
}

// TestNoAllocation: text without a keyword or address costs a scan only.
func TestNoAllocation(t *testing.T) {
	stmt := "INSERT INTO shop.orders (id, customer, note) VALUES (1, 'alice', 'it''s \\' fine'), (2, 'bob', NULL)"
	for _, f := range []struct {
		name string
		fn   func(string) string
	}{{"Statement", Statement}, {"Text", Text}} {
		if n := testing.AllocsPerRun(100, func() { _ = f.fn(stmt) }); n != 0 {
			t.Errorf("%s: %v allocations for a statement without secrets", f.name, n)
		}
	}
	withKeyword := "CREATE TABLE t (password VARCHAR(10), identified INT)"
	if n := testing.AllocsPerRun(100, func() { _ = Statement(withKeyword) }); n != 0 {
		t.Errorf("Statement: %v allocations for a statement with a keyword but no secret", n)
	}
}

func FuzzStatement(f *testing.F) {
	for _, c := range statementCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, q string) {
		// Addresses' passwords are hidden without a keyword.
		if out := accountSecrets(q); !hasTrigger(q) && out != q {
			t.Fatalf("changed without a keyword: %q → %q", q, out)
		}
		out := Statement(q)
		if again := Statement(out); again != out {
			t.Fatalf("not idempotent: %q → %q → %q", q, out, again)
		}
		_ = Text(q)
	})
}

// TestStatementAddresses: an address with a password inside a statement
// (a FEDERATED table's CONNECTION, a comment) is hidden too.
func TestStatementAddresses(t *testing.T) {
	q := "CREATE TABLE f (id INT) ENGINE=FEDERATED CONNECTION='mysql://app:Secret1@10.0.0.1:3306/db/t' COMMENT 'u:Secret2@tcp(h:1)/d'"
	got := Statement(q)
	if strings.Contains(got, "Secret1") || strings.Contains(got, "Secret2") || !strings.Contains(got, "mysql://app:***@10.0.0.1") {
		t.Fatalf("Statement(%q) = %q", q, got)
	}
}
