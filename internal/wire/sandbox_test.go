package wire

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// One TLS-capable server serves every real-server test of this package: a
// server with a certificate accepts plain connections too.
func TestAgainstMariaDB(t *testing.T) {
	cert := selfSignedCert(t)
	srv := sandbox.StartT(t, sandbox.Options{Extra: []string{"ssl-cert=" + cert.certFile, "ssl-key=" + cert.keyFile}})
	srv.ExecT(t,
		"INSTALL SONAME 'auth_ed25519'",
		"CREATE USER 'pw'@'%' IDENTIFIED BY 'se''cret'",
		"CREATE USER 'ed'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('ed secret, longer than thirty-two bytes')",
		"CREATE USER 'tl'@'%' IDENTIFIED BY 'tls' REQUIRE SSL",
		"CREATE DATABASE d",
		"CREATE PROCEDURE d.two() BEGIN SELECT 1 AS a; SELECT 2 AS b, NULL AS c; END",
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func(cfg Config) (*Conn, error) {
		cfg.Addr = srv.Addr()
		c, err := Dial(ctx, cfg)
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	t.Run("native password", func(t *testing.T) {
		c, err := dial(Config{User: "pw", Password: "se'cret"})
		if err != nil {
			t.Fatal(err)
		}
		if c.AuthPlugin() != pluginNative || !c.IsMariaDB() || strings.HasPrefix(c.ServerVersion(), "5.5.5-") {
			t.Fatalf("plugin %s, version %q", c.AuthPlugin(), c.ServerVersion())
		}
		assertUser(t, ctx, c, "pw@")
	})
	t.Run("ed25519", func(t *testing.T) {
		c, err := dial(Config{User: "ed", Password: "ed secret, longer than thirty-two bytes"})
		if err != nil {
			t.Fatal(err)
		}
		if c.AuthPlugin() != pluginEd25519 {
			t.Fatalf("authenticated with %s", c.AuthPlugin())
		}
		assertUser(t, ctx, c, "ed@")
	})
	t.Run("wrong password", func(t *testing.T) {
		for _, user := range []string{"pw", "ed"} {
			_, err := dial(Config{User: user, Password: "wrong"})
			var ae *AuthError
			if !errors.As(err, &ae) || !IsServerError(err, ErrCodeAccessDenied) || !strings.Contains(err.Error(), "Access denied for user '"+user+"'") {
				t.Fatalf("%s: got %v", user, err)
			}
		}
	})
	t.Run("TLS on", func(t *testing.T) {
		c, err := dial(Config{User: "tl", Password: "tls", TLS: cert.client})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Query(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
		if err != nil || len(res.Rows) != 1 || *res.Rows[0][1] == "" || !c.TLS() {
			t.Fatalf("not encrypted: %v %v", res, err)
		}
	})
	t.Run("TLS off", func(t *testing.T) {
		_, err := dial(Config{User: "tl", Password: "tls"})
		if !IsServerError(err, ErrCodeAccessDenied) {
			t.Fatalf("REQUIRE SSL user without TLS: %v", err)
		}
		if _, err := dial(Config{User: "pw", Password: "se'cret"}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("TLS with an untrusted certificate", func(t *testing.T) {
		_, err := dial(Config{User: "pw", Password: "se'cret", TLS: selfSignedCert(t).client})
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("queries", func(t *testing.T) { testQueries(t, ctx, dial) })
}

func assertUser(t *testing.T, ctx context.Context, c *Conn, prefix string) {
	t.Helper()
	res, err := c.Query(ctx, "SELECT CURRENT_USER()")
	if err != nil || len(res.Rows) != 1 || !strings.HasPrefix(*res.Rows[0][0], prefix) {
		t.Fatalf("CURRENT_USER: %v %v", res, err)
	}
}

func testQueries(t *testing.T, ctx context.Context, dial func(Config) (*Conn, error)) {
	c, err := dial(Config{User: "root"})
	if err != nil {
		t.Fatal(err)
	}
	// A procedure returns two result sets and an OK: all must be drained
	// so the next query finds the connection in step.
	res, err := c.Query(ctx, "CALL d.two()")
	if err != nil || len(res.Rows) != 1 || res.Columns[0] != "a" || *res.Rows[0][0] != "1" {
		t.Fatalf("CALL: %+v %v", res, err)
	}
	res, err = c.Query(ctx, "SELECT NULL AS n, 'x' AS s, @@server_id AS id")
	if err != nil || res.Rows[0][0] != nil || *res.Rows[0][1] != "x" || res.Column("id") != 2 {
		t.Fatalf("SELECT: %+v %v", res, err)
	}
	if err := c.Exec(ctx, "SET @a = 1, @b = 'two'"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Query(ctx, "SELECT @@no_such_variable")
	var se *ServerError
	if !errors.As(err, &se) || se.Code != ErrCodeUnknownSystemVar || se.SQLState != "HY000" {
		t.Fatalf("unknown variable: %v", err)
	}
	// A row of 20 MiB crosses the 16 MiB packet boundary.
	res, err = c.Query(ctx, "SELECT REPEAT('ab', 10*1024*1024) AS big, 'after' AS tail")
	if err != nil || len(*res.Rows[0][0]) != 20<<20 || *res.Rows[0][1] != "after" {
		t.Fatalf("big row: %v", err)
	}
	if err := c.Exec(ctx, "DO 1"); err != nil {
		t.Fatalf("connection out of step after the big row: %v", err)
	}
	// A cancelled query leaves the connection unusable rather than out of
	// step.
	qctx, qcancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer qcancel()
	if _, err := c.Query(qctx, "SELECT SLEEP(5)"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled query: %v", err)
	}
	if err := c.Exec(ctx, "DO 1"); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("after cancel: %v", err)
	}
}
