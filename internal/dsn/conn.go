package dsn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"maps"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/wire"
)

// DriverConfig returns the go-sql-driver configuration of every SQL
// connection to d: its TLS mode, sockets read through a buffer (dial), utf8mb4 (or the address's charset),
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
	cfg.Net, cfg.Addr = d.Network(), d.Addr()
	cfg.DBName = db
	cfg.Timeout = 10 * time.Second
	cfg.DialFunc = dial
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

// OpenDBWith is OpenDB with the driver configuration changed by tune (nil:
// unchanged), such as multi-statement round trips.
func (d DSN) OpenDBWith(db string, tune func(*mysql.Config)) (*sql.DB, error) {
	c, err := d.Connector(db, tune)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}

// Connector returns what OpenDB opens its pool with. tune, when not nil,
// adjusts the driver configuration first: a pool that needs the driver's
// own options (the applier's multi-statement round trips) sets them there
// and keeps everything else, TLS included, from d.
func (d DSN) Connector(db string, tune func(*mysql.Config)) (driver.Connector, error) {
	cfg, err := d.DriverConfig(db)
	if err != nil {
		return nil, err
	}
	if tune != nil {
		tune(cfg)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d, err)
	}
	return &connector{Connector: c, d: d}, nil
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

// WireConfig returns the configuration of binlane's own protocol
// connection to d (package wire), which the replication stream uses
// (replica.Config embeds it): the address, the account and the TLS
// settings (none when the mode is disabled; plaintext accepted from a
// server that offers no TLS in mode preferred). The caller adds what its
// stream needs (server id, start, heartbeats); errors of that connection go
// through AnnotateTLS.
func (d DSN) WireConfig() (wire.Config, error) {
	tc, optional, err := d.tlsConfig()
	if err != nil {
		return wire.Config{}, err
	}
	return wire.Config{Addr: d.Addr(), User: d.User, Password: d.Password, TLS: tc, TLSOptional: optional}, nil
}
