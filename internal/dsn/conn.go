package dsn

import (
	"context"
	"crypto/tls"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"maps"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DriverConfig returns the go-sql-driver configuration of every SQL
// connection to d: its TLS mode, utf8mb4 (or the address's charset),
// parsed time off (temporals stay text), the address's session variables,
// and the given database. Use it with mysql.NewConnector, never through
// FormatDSN: a DSN string cannot carry the *tls.Config.
func (d DSN) DriverConfig(db string) (*mysql.Config, error) {
	tc, optional, err := d.tlsConfig()
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = d.User, d.Password
	cfg.Net, cfg.Addr = "tcp", d.Addr()
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	cfg.TLS = tc
	cfg.AllowFallbackToPlaintext = optional
	if optional {
		// go-sql-driver records a fallback to plaintext by clearing TLS in
		// the configuration its connector shares between connections: one
		// connection to a server without TLS would then turn TLS off for
		// every later one (and race with those being made). A
		// BeforeConnect hook makes it give each connection its own copy.
		if err := cfg.Apply(mysql.BeforeConnect(func(context.Context, *mysql.Config) error { return nil })); err != nil {
			return nil, err
		}
	}
	// Params become session variables in go-sql-driver, except the ones
	// it knows; charset and collation must go through their options.
	cfg.Params = maps.Clone(d.Params)
	delete(cfg.Params, "charset")
	delete(cfg.Params, "collation")
	charset := "utf8mb4"
	if v := d.Params["charset"]; v != "" {
		charset = v
	}
	if err := cfg.Apply(mysql.Charset(charset, d.Params["collation"])); err != nil {
		return nil, err
	}
	return cfg, nil
}

// OpenDB returns a pool of SQL connections to database db (may be empty)
// made with DriverConfig. It does not connect; a connection that fails
// because of TLS fails with a *TLSError naming d and its mode.
func (d DSN) OpenDB(db string) (*sql.DB, error) {
	return d.OpenDBWith(db, nil)
}

// OpenDBWith is OpenDB with the driver configuration changed by adjust
// (nil: unchanged), such as multi-statement round trips.
func (d DSN) OpenDBWith(db string, adjust func(*mysql.Config)) (*sql.DB, error) {
	cfg, err := d.DriverConfig(db)
	if err != nil {
		return nil, err
	}
	if adjust != nil {
		adjust(cfg)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	return sql.OpenDB(&connector{Connector: c, d: d}), nil
}

// connector names the server and the mode in TLS failures.
type connector struct {
	driver.Connector
	d DSN
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, c.d.AnnotateTLS(err)
	}
	return conn, nil
}

// WireTLS returns the TLS configuration of binlane's own replication
// connection to d (package wire): nil when the mode is disabled, and
// optional when plaintext is acceptable from a server that offers no TLS
// (preferred). Errors from that connection go through AnnotateTLS.
func (d DSN) WireTLS() (cfg *tls.Config, optional bool, err error) {
	return d.tlsConfig()
}
