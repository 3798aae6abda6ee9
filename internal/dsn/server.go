package dsn

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/sqlerr"
)

// Server is what binlane reads of a server once, when it first reaches
// it, and hands on to whatever depends on the server's kind: its version
// and flavor.
type Server struct {
	Version string // VERSION()
	Flavor  sqlerr.Flavor
}

// rowQuerier is a pool, a connection or a transaction.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// ReadServer reads a server's version over a connection of the caller's.
func ReadServer(ctx context.Context, db rowQuerier) (Server, error) {
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return Server{}, fmt.Errorf("read the server's version: %w", err)
	}
	return ServerOf(version), nil
}

// ServerOf is the server whose VERSION() is version: MariaDB says so in it
// (10.11.6-MariaDB-log), MySQL does not (8.0.36).
func ServerOf(version string) Server {
	s := Server{Version: version, Flavor: sqlerr.MySQL}
	if strings.Contains(strings.ToLower(version), "mariadb") {
		s.Flavor = sqlerr.MariaDB
	}
	return s
}

// MariaDB tells whether the server is a MariaDB.
func (s Server) MariaDB() bool { return s.Flavor == sqlerr.MariaDB }
