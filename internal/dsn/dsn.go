// Package dsn parses server addresses given on the command line: both
// mysql://user:pass@host:port/db?opts URLs and the go-sql-driver form
// user:pass@tcp(host:port)/db?opts. Passwords may also come from an
// environment variable or a file, so they never have to appear in a process
// listing.
//
// The package owns parsing and redaction only; it must never connect.
package dsn

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DSN is a parsed server address.
type DSN struct {
	User     string
	Password string
	Host     string
	Port     int
	DB       string
	Params   map[string]string
}

// Parse reads either form. A missing port defaults to 3306, a missing host
// to 127.0.0.1.
func Parse(s string) (DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DSN{}, fmt.Errorf("empty server address")
	}
	if strings.HasPrefix(s, "mysql://") || strings.HasPrefix(s, "mariadb://") {
		return parseURL(s)
	}
	cfg, err := mysql.ParseDSN(s)
	if err != nil {
		return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
	}
	if cfg.Net != "tcp" && cfg.Net != "" {
		return DSN{}, fmt.Errorf("server address %q: only tcp is supported, not %s", Redact(s), cfg.Net)
	}
	d := DSN{User: cfg.User, Password: cfg.Passwd, DB: cfg.DBName, Params: cfg.Params}
	if err := d.setAddr(cfg.Addr); err != nil {
		return DSN{}, err
	}
	return d, nil
}

func parseURL(s string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
	}
	d := DSN{DB: strings.TrimPrefix(u.Path, "/"), Params: map[string]string{}}
	if u.User != nil {
		d.User = u.User.Username()
		d.Password, _ = u.User.Password()
	}
	for k, v := range u.Query() {
		if len(v) > 0 {
			d.Params[k] = v[len(v)-1]
		}
	}
	if err := d.setAddr(u.Host); err != nil {
		return DSN{}, err
	}
	return d, nil
}

func (d *DSN) setAddr(addr string) error {
	d.Host, d.Port = "127.0.0.1", 3306
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		d.Host = addr
		return nil
	}
	if host != "" {
		d.Host = host
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("server address: bad port %q", port)
	}
	d.Port = p
	return nil
}

// ResolvePassword fills an empty password from the environment variable
// env or, failing that, from the first line of file (either may be empty).
func (d *DSN) ResolvePassword(env, file string) error {
	if d.Password != "" {
		return nil
	}
	if env != "" {
		if v, ok := os.LookupEnv(env); ok {
			d.Password = v
			return nil
		}
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("password file: %w", err)
		}
		d.Password = strings.TrimRight(strings.SplitN(string(b), "\n", 2)[0], "\r")
	}
	return nil
}

// Addr returns host:port.
func (d DSN) Addr() string { return net.JoinHostPort(d.Host, strconv.Itoa(d.Port)) }

// DriverConfig returns a go-sql-driver configuration for this address with
// the settings every binlane connection needs: utf8mb4, parsed time off
// (temporals stay text), and the given database.
func (d DSN) DriverConfig(db string) *mysql.Config {
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = d.User, d.Password
	cfg.Net, cfg.Addr = "tcp", d.Addr()
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	// Params become session variables in go-sql-driver, except the ones
	// it knows; charset and collation must go through their options.
	cfg.Params = map[string]string{}
	charset, collation := "utf8mb4", ""
	for k, v := range d.Params {
		switch k {
		case "charset":
			charset = v
		case "collation":
			collation = v
		default:
			cfg.Params[k] = v
		}
	}
	_ = cfg.Apply(mysql.Charset(charset, collation))
	return cfg
}

// String formats the address with the password hidden.
func (d DSN) String() string {
	user := d.User
	if d.Password != "" {
		user += ":***"
	}
	return fmt.Sprintf("mysql://%s@%s/%s", user, d.Addr(), d.DB)
}

// Redact hides the password in a raw address string for error messages.
func Redact(s string) string {
	at := strings.LastIndex(s, "@")
	if at < 0 {
		return s
	}
	head := s[:at]
	start := strings.Index(head, "://")
	if start >= 0 {
		start += 3
	} else {
		start = 0
	}
	colon := strings.Index(head[start:], ":")
	if colon < 0 {
		return s
	}
	return head[:start+colon] + ":***" + s[at:]
}
