package dsn

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketAddresses: a local server's Unix socket in both address forms;
// ?socket= is never a session variable, and the socket is plaintext unless
// TLS is asked for.
func TestSocketAddresses(t *testing.T) {
	for _, in := range []string{
		"binlane:pw@unix(/run/mysqld/mysqld.sock)/app",
		"mysql://binlane:pw@localhost/app?socket=/run/mysqld/mysqld.sock",
		"mysql://binlane:pw@/app?socket=%2Frun%2Fmysqld%2Fmysqld.sock",
	} {
		d, err := Parse(in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", in, err)
		}
		if d.Socket != "/run/mysqld/mysqld.sock" || d.Network() != "unix" || d.Addr() != d.Socket || d.DB != "app" || d.User != "binlane" {
			t.Errorf("Parse(%q) = %+v", in, d)
		}
		cfg, err := d.DriverConfig("app")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Net != "unix" || cfg.Addr != "/run/mysqld/mysqld.sock" || cfg.TLS != nil || len(cfg.Params) != 0 {
			t.Errorf("%q: driver config net %s addr %s tls %v params %v", in, cfg.Net, cfg.Addr, cfg.TLS, cfg.Params)
		}
		if s := d.String(); s != "mysql://binlane:***@localhost/app?socket=/run/mysqld/mysqld.sock" {
			t.Errorf("String() = %s", s)
		}
	}
	d, err := Parse("mysql://u@localhost/?socket=/s.sock&ssl-mode=required")
	if err != nil {
		t.Fatal(err)
	}
	if rc, err := d.WireConfig(); err != nil || rc.TLS == nil || rc.Addr != "/s.sock" {
		t.Errorf("ssl-mode required over a socket: TLS %v, address %s, %v", rc.TLS, rc.Addr, err)
	}
	for _, in := range []string{"mysql://u@db1:3306/?socket=/s.sock", "u@unix(s.sock)/", "mysql://u@localhost/?socket=s.sock"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestResolveOptionFiles completes addresses from option files as the
// MySQL clients do, with the explicit before the implicit.
func TestResolveOptionFiles(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	writeFile(t, filepath.Join(home, ".my.cnf"), `# the DBA's file
[mysql]
pager = less
[client]
user = dba
password = "from \"home\""
socket = /run/mysqld/mysqld.sock
default-character-set = utf8mb4
[binlane]
!includedir `+filepath.Join(dir, "conf.d")+`
`, 0o600)
	writeFile(t, filepath.Join(dir, "conf.d", "10-target.cnf"), "[binlane-target]\nuser=binlane_tgt\nloose-ssl_mode = REQUIRED\n", 0o600)
	writeFile(t, filepath.Join(dir, "conf.d", "ignored.txt"), "[binlane]\nnot-an-option=1\n", 0o600)
	only := writeFile(t, filepath.Join(dir, "only.cnf"), "[binlane]\nhost=db9\nport=3310\npassword=only # comment\n", 0o600)
	pwFile := writeFile(t, filepath.Join(dir, "pw"), "from-file\n", 0o600)
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	home1 := OptionFiles{Home: home}
	cases := []struct {
		name, addr string
		r          Resolve
		want       string // String() plus the password
		pw         string
		mode       SSLMode
	}{
		{name: "socket and user from [client]", addr: "mysql://localhost/app", r: Resolve{Role: "source", Files: home1},
			want: "mysql://dba:***@localhost/app?socket=/run/mysqld/mysqld.sock", pw: `from "home"`},
		{name: "a TCP host ignores the socket", addr: "mysql://repl@10.0.0.5/", r: Resolve{Role: "source", Files: home1},
			want: "mysql://repl:***@10.0.0.5:3306/", pw: `from "home"`},
		{name: "role group", addr: "mysql://127.0.0.1:3307/", r: Resolve{Role: "target", Files: home1},
			want: "mysql://binlane_tgt:***@127.0.0.1:3307/", pw: `from "home"`, mode: SSLRequired},
		{name: "the address wins", addr: "mysql://me:given@localhost/?socket=/other.sock&ssl-mode=disabled", r: Resolve{Role: "target", Files: home1},
			want: "mysql://me:***@localhost/?socket=/other.sock", pw: "given", mode: SSLDisabled},
		{name: "flags win over the address", addr: "mysql://me@h/?ssl-mode=disabled", r: Resolve{Role: "target", Files: home1, TLS: TLSOptions{Mode: SSLVerifyCA}},
			want: "mysql://me:***@h:3306/", pw: `from "home"`, mode: SSLVerifyCA},
		{name: "environment over option file", addr: "mysql://me@h/", r: Resolve{Files: home1, PasswordEnv: "PW", LookupEnv: env(map[string]string{"PW": "env"})},
			want: "mysql://me:***@h:3306/", pw: "env"},
		{name: "an explicit file over the environment", addr: "mysql://me@h/",
			r:    Resolve{Files: home1, PasswordEnv: "PW", PasswordFile: pwFile, LookupEnv: env(map[string]string{"PW": "env"})},
			want: "mysql://me:***@h:3306/", pw: "from-file"},
		{name: "--defaults-file replaces the defaults", addr: "mysql://me@/", r: Resolve{Files: OptionFiles{Home: home, File: only}},
			want: "mysql://me:***@db9:3310/", pw: "only"},
		{name: "--defaults-extra-file comes last", addr: "mysql://me@/", r: Resolve{Files: OptionFiles{Home: home, Extra: only}},
			want: "mysql://me:***@db9:3310/", pw: "only"},
		{name: "a port without a host is TCP, not the socket", addr: "mysql://:1/", r: Resolve{Role: "source", Files: home1},
			want: "mysql://dba:***@127.0.0.1:1/", pw: `from "home"`},
		{name: "a port with host localhost is TCP", addr: "mysql://localhost:3307/", r: Resolve{Role: "source", Files: home1},
			want: "mysql://dba:***@localhost:3307/", pw: `from "home"`},
		{name: "--no-defaults", addr: "mysql://me@localhost/", r: Resolve{Files: OptionFiles{Home: home, NoDefaults: true}},
			want: "mysql://me@localhost:3306/"},
	}
	for _, c := range cases {
		d, err := ResolveAddr(c.addr, c.r)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d.String() != c.want || d.Password != c.pw {
			t.Errorf("%s: %s password %q, want %s password %q", c.name, d, d.Password, c.want, c.pw)
		}
		if c.mode != "" && d.SSLMode() != c.mode {
			t.Errorf("%s: ssl-mode %s, want %s", c.name, d.SSLMode(), c.mode)
		}
	}

	bad := []struct{ file, want string }{
		{"[binlane]\nusr = x\n", `bad.cnf:2: [binlane] option "usr" is not one binlane reads`},
		{"[client]\nport = many\n", `bad.cnf:2: port "many": want 1 to 65535`},
		{"[binlane-source]\npassword = 'open\n", "bad.cnf:2: password: a quoted value without its closing quote"},
		{"[client\n", "bad.cnf:1: a group name without its ]"},
	}
	for _, b := range bad {
		path := writeFile(t, filepath.Join(dir, "bad.cnf"), b.file, 0o600)
		_, err := ResolveAddr("mysql://u@h/", Resolve{Role: "source", Files: OptionFiles{File: path}})
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%q: error %v, want %q", b.file, err, b.want)
		}
	}
	open := writeFile(t, filepath.Join(dir, "open.cnf"), "[client]\nuser=x\n", 0o666)
	os.Chmod(open, 0o666)
	if _, err := ResolveAddr("mysql://u@h/", Resolve{Files: OptionFiles{File: open}}); err == nil || !strings.Contains(err.Error(), "world-writable") {
		t.Errorf("world-writable file: %v", err)
	}
	if _, err := ResolveAddr("mysql://u@h/", Resolve{Files: OptionFiles{File: filepath.Join(dir, "absent.cnf")}}); err == nil {
		t.Error("a missing --defaults-file was accepted")
	}
}
