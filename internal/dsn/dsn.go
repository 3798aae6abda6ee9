// Package dsn owns the mapping from a server address given on the command
// line to every connection binlane makes to that server: it parses both
// mysql://user:pass@host:port/db?opts URLs and the go-sql-driver form
// user:pass@tcp(host:port)/db?opts (or unix(/path/to.sock) and ?socket=
// for a local server's Unix socket), completes them from MySQL option
// files as the MySQL clients do (Resolve), carries the TLS settings
// (ssl-mode and certificates, from the address or from flags), and builds
// the go-sql-driver configuration and pools (DriverConfig, OpenDB) and the
// TLS configuration of the replication connection (WireConfig) from them, so
// that every connection to a server honours the same settings. Passwords
// may also come from an environment variable, a file or an option file,
// so they never have to appear in a process listing.
//
// It also owns the session of each role's connections (session.go: apply,
// verify, copy read, cut-over, throttle), set up as the driver's
// parameters on every connection of a role's own pool (OpenSession) or by
// statements on a connection borrowed from a shared one (Session.Set), and
// what binlane reads of a server once and hands on (Server: its version
// and flavor).
//
// The package must never connect by itself (it only builds what callers
// connect with, and reads a server only over a connection they hand it),
// never put a password in an error or a String, and never
// pass a parameter it does not understand to the server as a session
// variable unless it can be one. It sits below every package that
// connects: it must never import one (the replication stream's
// configuration, replica.Config, embeds the wire.Config it builds).
package dsn

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// DSN is a parsed server address.
type DSN struct {
	User     string
	Password string
	Host     string
	Port     int
	// Socket is the path of a local server's Unix socket; connections go
	// there instead of Host and Port.
	Socket string
	DB     string
	// Params are the address's other parameters: charset and collation,
	// and session variables (set on every SQL connection). The TLS
	// parameters are in TLS, never here.
	Params map[string]string
	TLS    TLSOptions
}

// acceptedForms ends the error of an address binlane cannot read: a user
// who typed host:port, or another program's URL, learns what to write.
const acceptedForms = "want mysql://user@host:port/db, user@tcp(host:port)/db or user@unix(/path/to.sock)/db"

// schemeRE finds a URL scheme at the start of an address. A password with
// "://" in it never matches: the user name's ":" comes first.
var schemeRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*)://`)

// Parse reads either form. A missing port defaults to 3306, a missing host
// to 127.0.0.1. Errors show the address with its password hidden.
func Parse(s string) (DSN, error) {
	d, err := parse(s)
	if err != nil {
		return DSN{}, err
	}
	d.fillDefaults()
	return d, nil
}

// parse reads either form, leaving out what the address does not say
// (Host "", Port 0) for option files to complete.
func parse(s string) (DSN, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return DSN{}, fmt.Errorf("empty server address")
	}
	var d DSN
	var err error
	if m := schemeRE.FindStringSubmatch(s); m != nil {
		if scheme := strings.ToLower(m[1]); scheme != "mysql" && scheme != "mariadb" {
			return DSN{}, fmt.Errorf("server address %q: %s:// is not a MySQL or MariaDB address: %s", Redact(s), m[1], acceptedForms)
		}
		d, err = parseURL(s)
	} else {
		d, err = parseDriverDSN(s)
	}
	if err != nil {
		return DSN{}, err
	}
	switch {
	case d.Socket != "" && d.Host != "" && d.Host != "localhost":
		return DSN{}, fmt.Errorf("server address %q: a socket is for a server on this machine: give host localhost, or no socket", Redact(s))
	case d.Socket != "" && d.Port != 0:
		// The port would be ignored: say so rather than connect elsewhere.
		return DSN{}, fmt.Errorf("server address %q: give a port (TCP) or a socket, not both", Redact(s))
	}
	return d, nil
}

// fillDefaults gives a missing host and port their defaults.
func (d *DSN) fillDefaults() {
	if d.Socket != "" {
		d.Host = "localhost"
	}
	if d.Host == "" {
		d.Host = "127.0.0.1"
	}
	if d.Port == 0 {
		d.Port = 3306
	}
}

// parseDriverDSN reads user:pass@tcp(host:port)/db?params. The parameters
// are split off first and read like a URL's: go-sql-driver would keep only
// the ones it knows (dropping tls= in binlane's hands) and wants values
// such as file paths escaped.
func parseDriverDSN(s string) (DSN, error) {
	base, query := s, ""
	// The address ends with ")/"; the last one is taken because a password
	// may contain one too. Without an address, the query starts at the
	// first '?' after the last '/', as go-sql-driver has it.
	if i := strings.LastIndex(s, ")/"); i >= 0 {
		if q := strings.IndexByte(s[i+2:], '?'); q >= 0 {
			base, query = s[:i+2+q], s[i+3+q:]
		}
	} else if i := strings.LastIndexByte(s, '/'); i >= 0 {
		if q := strings.IndexByte(s[i:], '?'); q >= 0 {
			base, query = s[:i+q], s[i+q+1:]
		}
	}
	cfg, err := mysql.ParseDSN(base)
	if err != nil {
		// go-sql-driver's messages can quote parts of the input, which may
		// hold the password; only its fixed messages are shown, and only
		// for what was meant as its form: for "db1:3306" its "missing the
		// slash separating the database name" helps nobody.
		msg := "not a server address: " + acceptedForms
		if strings.Contains(base, "(") && strings.HasPrefix(err.Error(), "invalid DSN:") {
			msg = err.Error() + "; " + acceptedForms
		}
		return DSN{}, fmt.Errorf("server address %q: %s", Redact(s), msg)
	}
	if cfg.Net != "tcp" && cfg.Net != "unix" && cfg.Net != "" {
		return DSN{}, fmt.Errorf("server address %q: only tcp(host:port) and unix(/path/to.sock) addresses are supported", Redact(s))
	}
	if len(cfg.Params) > 0 || cfg.TLSConfig != "" {
		return DSN{}, fmt.Errorf("server address %q: parameters must follow the database name, as in user@tcp(host:port)/db?name=value", Redact(s))
	}
	d := DSN{User: cfg.User, Password: cfg.Passwd, DB: cfg.DBName}
	switch {
	case cfg.Net == "unix":
		if err := d.setSocket(cfg.Addr); err != nil {
			return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
		}
	case strings.Contains(base[:strings.LastIndexByte(base, '/')+1], "("):
		// go-sql-driver fills in 127.0.0.1:3306 for a missing address:
		// only an address written out is taken.
		if err := d.setAddr(cfg.Addr); err != nil {
			return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
		}
	}
	params, err := url.ParseQuery(query)
	if err != nil {
		return DSN{}, fmt.Errorf("server address %q: parameters: a %%-escape is invalid (write %% as %%25)", Redact(s))
	}
	if err := d.setParams(params); err != nil {
		return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
	}
	return d, nil
}

func parseURL(s string) (DSN, error) {
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the whole input, and its inner errors quote
		// the piece that failed, which can be (part of) the password.
		msg := "not a valid URL (characters such as @ : / ? # % in the user or password must be percent-encoded)"
		var ee url.EscapeError
		var he url.InvalidHostError
		switch {
		case errors.As(err, &ee):
			msg = "a %-escape is invalid (write % as %25, also in a password)"
		case errors.As(err, &he):
			msg = "invalid character in the host name"
		}
		return DSN{}, fmt.Errorf("server address %q: %s", Redact(s), msg)
	}
	if u.User == nil && strings.Contains(s[strings.Index(s, "://"):], "@") || u.Opaque != "" || u.Fragment != "" {
		// mysql://u:12/ss@h/ parses as host "u", port "12", path
		// "/ss@h/": a password with a raw / ? or # in it.
		return DSN{}, fmt.Errorf("server address %q: characters such as / ? # in the user or password must be percent-encoded", Redact(s))
	}
	d := DSN{DB: strings.TrimPrefix(u.Path, "/")}
	if u.User != nil {
		d.User = u.User.Username()
		d.Password, _ = u.User.Password()
	}
	if err := d.setAddr(u.Host); err != nil {
		return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
	}
	params, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return DSN{}, fmt.Errorf("server address %q: parameters: a %%-escape is invalid (write %% as %%25)", Redact(s))
	}
	if err := d.setParams(params); err != nil {
		return DSN{}, fmt.Errorf("server address %q: %w", Redact(s), err)
	}
	return d, nil
}

// setAddr takes host[:port]; what it lacks stays empty (fillDefaults).
func (d *DSN) setAddr(addr string) error {
	if addr == "" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil { // no port
		host, port = strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]"), ""
	}
	if host != "" {
		if strings.ContainsAny(host, " \t\r\n/@?#()\\'\"") {
			return errors.New("bad host name")
		}
		d.Host = host
	}
	if port == "" {
		return nil
	}
	p, err := strconv.Atoi(port)
	if err != nil || p <= 0 || p > 65535 {
		return fmt.Errorf("bad port %q: want 1 to 65535", port)
	}
	d.Port = p
	return nil
}

// setSocket takes the path of a Unix socket.
func (d *DSN) setSocket(path string) error {
	if !strings.HasPrefix(path, "/") {
		return errors.New("the socket must be an absolute path, as in unix(/run/mysqld/mysqld.sock)")
	}
	d.Socket = path
	return nil
}

// driverOptions are go-sql-driver's own DSN parameters. binlane sets what it
// needs of them itself (time parsing off, multi-statements per pool...);
// taken from an address they would be ignored or, in a URL, sent to the
// server as unknown session variables.
var driverOptions = map[string]bool{
	"allowAllFiles": true, "allowCleartextPasswords": true, "allowFallbackToPlaintext": true,
	"allowNativePasswords": true, "allowOldPasswords": true, "checkConnLiveness": true,
	"clientFoundRows": true, "columnsWithAlias": true, "compress": true, "interpolateParams": true,
	"loc": true, "multiStatements": true, "parseTime": true, "timeTruncate": true, "readTimeout": true,
	"rejectReadOnly": true, "serverPubKey": true, "strict": true, "timeout": true, "writeTimeout": true,
	"maxAllowedPacket": true, "connectionAttributes": true,
}

// sessionVarRE is what a system variable's name looks like: anything else
// (ssl-mdoe=..., a typo) is refused here rather than sent as SET.
var sessionVarRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// setParams sorts the address's parameters into TLS settings, charset and
// collation, and session variables.
func (d *DSN) setParams(q url.Values) error {
	d.Params = map[string]string{}
	var tlsValue string
	for k, vs := range q {
		v := vs[len(vs)-1]
		switch norm := strings.ReplaceAll(strings.ToLower(k), "_", "-"); norm {
		case "tls":
			tlsValue = v
		case "ssl-mode":
			m, err := ParseSSLMode(v)
			if err != nil {
				return err
			}
			d.TLS.Mode = m
		case "ssl-ca":
			d.TLS.CA = v
		case "ssl-cert":
			d.TLS.Cert = v
		case "ssl-key":
			d.TLS.Key = v
		case "charset", "collation":
			d.Params[norm] = v
		case "socket":
			// The MySQL clients' --socket; never a session variable.
			if err := d.setSocket(v); err != nil {
				return err
			}
		default:
			switch {
			case driverOptions[k]:
				return fmt.Errorf("parameter %s is a go-sql-driver option binlane sets itself: remove it", k)
			case strings.HasPrefix(norm, "ssl") || strings.HasPrefix(norm, "tls"):
				return fmt.Errorf("unknown TLS parameter %s: use ssl-mode, ssl-ca, ssl-cert, ssl-key or tls", k)
			case !sessionVarRE.MatchString(k):
				// Not quoted: in a mangled address it could be a piece of
				// the password.
				return errors.New("a parameter name is not valid: parameters other than ssl-mode, ssl-ca, ssl-cert, ssl-key, tls, charset and collation are session variables")
			}
			d.Params[k] = v
		}
	}
	if tlsValue != "" {
		m, err := modeFromTLSParam(tlsValue)
		if err != nil {
			return err
		}
		if d.TLS.Mode != "" && d.TLS.Mode != m {
			return fmt.Errorf("tls=%s and ssl-mode=%s disagree: give one of them", tlsValue, d.TLS.Mode)
		}
		d.TLS.Mode = m
	}
	return nil
}

// Addr returns host:port, or the socket's path for a socket address
// (package wire dials a path as a Unix socket).
func (d DSN) Addr() string {
	if d.Socket != "" {
		return d.Socket
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// Network is "unix" for a socket address and "tcp" otherwise.
func (d DSN) Network() string {
	if d.Socket != "" {
		return "unix"
	}
	return "tcp"
}

// String formats the address with the password hidden.
func (d DSN) String() string {
	user := d.User
	if d.Password != "" {
		user += ":***"
	}
	if d.Socket != "" {
		return fmt.Sprintf("mysql://%s@localhost/%s?socket=%s", user, d.DB, d.Socket)
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
