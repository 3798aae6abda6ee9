package dsn

import (
	"fmt"
	"os"
	"strconv"
)

// Resolve says how an address given on the command line is completed.
type Resolve struct {
	// Role is the server's role ("source", "target"): option files'
	// [binlane-ROLE] group applies to it.
	Role string
	// PasswordFile, when set, holds the password (first line);
	// PasswordEnv names an environment variable that may hold it.
	PasswordFile, PasswordEnv string
	// Files are the option files to read.
	Files OptionFiles
	// TLS overrides the address's TLS settings (command-line flags).
	TLS TLSOptions
	// LookupEnv reads the environment (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// ResolveAddr parses addr and completes it the way the MySQL clients
// complete theirs, the explicit before the implicit:
//   - user, host, port and socket: the address, else the option files
//     ([client], [client-server], [client-mariadb], [binlane],
//     [binlane-ROLE]; a later file or group wins), else 127.0.0.1:3306;
//     a socket applies only to host localhost (or none), as in the
//     clients, and never to an address that gives a port;
//   - password: the address, else PasswordFile, else the variable
//     PasswordEnv, else the option files;
//   - TLS: the flags (r.TLS), else the address, else the option files.
func ResolveAddr(addr string, r Resolve) (DSN, error) {
	d, err := parse(addr)
	if err != nil {
		return DSN{}, err
	}
	opts, err := r.Files.read(r.Role)
	if err != nil {
		return DSN{}, err
	}
	get := func(name string) string { return opts[name].value }
	// A port in the address means TCP: unlike the MySQL clients of old,
	// which dropped it for the option files' socket when no host was
	// given, mysql://:3307/ reaches 127.0.0.1:3307 (or the files' host).
	tcp := d.Port != 0
	if d.User == "" {
		d.User = get("user")
	}
	if d.Host == "" && d.Socket == "" {
		d.Host = get("host")
	}
	if d.Port == 0 && get("port") != "" {
		p, err := strconv.Atoi(get("port"))
		if err != nil || p <= 0 || p > 65535 {
			return DSN{}, fmt.Errorf("%s: port %q: want 1 to 65535", opts["port"].origin, get("port"))
		}
		d.Port = p
	}
	if d.Socket == "" && !tcp && get("socket") != "" && (d.Host == "" || d.Host == "localhost") {
		if err := d.setSocket(get("socket")); err != nil {
			return DSN{}, fmt.Errorf("%s: %w", opts["socket"].origin, err)
		}
	}
	d.fillDefaults()
	if d.Password == "" {
		if err := d.resolvePassword(r.PasswordEnv, r.PasswordFile, r.LookupEnv); err != nil {
			return DSN{}, err
		}
	}
	if d.Password == "" {
		d.Password = get("password")
	}
	fromFiles := TLSOptions{CA: get("ssl-ca"), Cert: get("ssl-cert"), Key: get("ssl-key")}
	if m := get("ssl-mode"); m != "" {
		if fromFiles.Mode, err = ParseSSLMode(m); err != nil {
			return DSN{}, fmt.Errorf("%s: %w", opts["ssl-mode"].origin, err)
		}
	}
	fromFiles.Override(d.TLS)
	fromFiles.Override(r.TLS)
	d.TLS = fromFiles
	return d, nil
}

// ResolvePassword fills an empty password from the first line of file
// or, when no file is given, from the environment variable env (either
// may be empty): a file named explicitly wins over a variable that may
// only be set by default.
func (d *DSN) ResolvePassword(env, file string) error { return d.resolvePassword(env, file, nil) }

func (d *DSN) resolvePassword(env, file string, lookup func(string) (string, bool)) error {
	if d.Password != "" {
		return nil
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("password file: %w", err)
		}
		line := string(b)
		for i, c := range line {
			if c == '\n' || c == '\r' {
				line = line[:i]
				break
			}
		}
		d.Password = line
		return nil
	}
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if env != "" {
		if v, ok := lookup(env); ok {
			d.Password = v
		}
	}
	return nil
}
