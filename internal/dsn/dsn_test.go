package dsn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseBothForms(t *testing.T) {
	cases := []struct {
		in                   string
		user, pass, host, db string
		port                 int
	}{
		{"mysql://root:s3cr%40t@127.0.0.1:3307/app", "root", "s3cr@t", "127.0.0.1", "app", 3307},
		{"mysql://repl@db.example:3306/", "repl", "", "db.example", "", 3306},
		{"mysql://u:p@localhost", "u", "p", "localhost", "", 3306},
		{"root:pw@tcp(127.0.0.1:3310)/x", "root", "pw", "127.0.0.1", "x", 3310},
		{"root@tcp(10.0.0.1)/", "root", "", "10.0.0.1", "", 3306},
	}
	for _, c := range cases {
		d, err := Parse(c.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.in, err)
		}
		if d.User != c.user || d.Password != c.pass || d.Host != c.host || d.Port != c.port || d.DB != c.db {
			t.Errorf("Parse(%q) = %+v", c.in, d)
		}
	}
}

func TestParseRejects(t *testing.T) {
	for _, in := range []string{"", "mysql://u@h:99999/", "u@unix(tmp/s.sock)/"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

// TestNotAnAddress: what is not an address binlane reads gets the forms
// it reads, not go-sql-driver's view of it ("missing the slash separating
// the database name" for host:port).
func TestNotAnAddress(t *testing.T) {
	cases := []struct{ in, want string }{
		{"127.0.0.1:3306", "not a server address: want mysql://user@host:port/db, user@tcp(host:port)/db or user@unix(/path/to.sock)/db"},
		{"db1", "not a server address: want mysql://"},
		{"postgres://u@h/", "postgres:// is not a MySQL or MariaDB address: want mysql://"},
		{"http://x", "http:// is not a MySQL or MariaDB address: want mysql://"},
		{"u@tcp(h:1", "invalid DSN: missing the slash separating the database name; want mysql://"},
		{"mysql://u@localhost:3307/?socket=/run/mysqld/mysqld.sock", "give a port (TCP) or a socket, not both"},
	}
	for _, c := range cases {
		_, err := Parse(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v, want %q", c.in, err, c.want)
		}
	}
}

func TestPasswordNeverPrinted(t *testing.T) {
	d, _ := Parse("mysql://root:hunter2@127.0.0.1:3306/db")
	if s := d.String(); s != "mysql://root:***@127.0.0.1:3306/db" {
		t.Fatalf("String() = %q", s)
	}
	for _, in := range []string{"root:hunter2@tcp(h:1)/", "mysql://root:hunter2@h:1/"} {
		if r := Redact(in); r == in || contains(r, "hunter2") {
			t.Fatalf("Redact(%q) = %q", in, r)
		}
	}
}

func TestResolvePassword(t *testing.T) {
	t.Setenv("BINLANE_TEST_PW", "from-env")
	d, _ := Parse("mysql://root@h:1/")
	if err := d.ResolvePassword("BINLANE_TEST_PW", ""); err != nil || d.Password != "from-env" {
		t.Fatalf("env: %q %v", d.Password, err)
	}
	f := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(f, []byte("from-file\nignored\n"), 0o600)
	d, _ = Parse("mysql://root@h:1/")
	if err := d.ResolvePassword("BINLANE_UNSET_VAR", f); err != nil || d.Password != "from-file" {
		t.Fatalf("file: %q %v", d.Password, err)
	}
	d, _ = Parse("mysql://root:given@h:1/")
	d.ResolvePassword("BINLANE_TEST_PW", f)
	if d.Password != "given" {
		t.Fatal("explicit password overridden")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestDriverConfigCharsetIsNotASessionVariable(t *testing.T) {
	d, err := Parse("mysql://u@h:1/db?charset=latin1&wait_timeout=100")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := d.DriverConfig("db")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := cfg.Params["charset"]; ok {
		t.Fatal("charset left in Params: go-sql-driver would send it as a session variable")
	}
	if cfg.Params["wait_timeout"] != "100" {
		t.Fatalf("other parameters lost: %v", cfg.Params)
	}
	if f := cfg.FormatDSN(); !strings.Contains(f, "charset=latin1") {
		t.Fatalf("charset not applied: %s", f)
	}
}
