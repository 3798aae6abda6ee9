package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/config"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/wire"
)

// tlsPW is the password of the accounts in these tests: it must never
// show in an output or an error.
const tlsPW = "S3cretCanaryPW"

func noSecret(t *testing.T, what string, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, tlsPW) {
			t.Errorf("%s shows the password: %s", what, s)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// wantTLSError checks that err is a TLS refusal naming the server's
// address and the mode, and not the password.
func wantTLSError(t *testing.T, what string, err error, addr string, mode string, noTLS bool) {
	t.Helper()
	var te *dsn.TLSError
	if !errors.As(err, &te) {
		t.Errorf("%s: got %v, want a TLS error", what, err)
		return
	}
	msg := err.Error()
	if te.NoTLS() != noTLS || !strings.Contains(msg, addr) || !strings.Contains(msg, "ssl-mode "+mode) {
		t.Errorf("%s: message does not name the address %s and ssl-mode %s (no TLS: %v): %s", what, addr, mode, te.NoTLS(), msg)
	}
	noSecret(t, what, msg)
}

func addrOf(s *sandbox.Server, user string) string {
	return fmt.Sprintf("mysql://%s:%s@%s/", user, tlsPW, s.Addr())
}

// TestTLSEverywhere replicates between two TLS servers whose binlane
// accounts REQUIRE SSL, so every connection binlane makes (replication,
// target metadata, workers, status, verify, binlog dump) is refused unless
// it is encrypted; the TLS settings come from flags and from the address.
func TestTLSEverywhere(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, TLS: &sandbox.TLS{}})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, TLS: &sandbox.TLS{}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, s := range []*sandbox.Server{src, dst} {
		if err := s.CreateUser(ctx, "binlane", tlsPW, sandbox.RequireSSL, "app"); err != nil {
			t.Fatal(err)
		}
	}
	if err := src.CreateUser(ctx, "certified", tlsPW, sandbox.RequireX509, "app"); err != nil {
		t.Fatal(err)
	}
	srcCA, dstCA := src.Certs().CA, dst.Certs().CA
	srcAddr, dstAddr := addrOf(src, "binlane"), addrOf(dst, "binlane")
	srcDB := src.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.t VALUES (1, 'a'), (2, 'b')", "UPDATE app.t SET v = 'c' WHERE id = 2")
	stop := sourcePos(t, srcDB)

	// The accounts do refuse plaintext: what succeeds below was encrypted.
	if _, err := runStatusCmd(t, "--target", dstAddr, "--target-ssl-mode", "disabled"); err == nil || !strings.Contains(err.Error(), "Access denied") {
		t.Fatalf("plaintext connection of a REQUIRE SSL account: %v", err)
	}

	t.Run("replicate", func(t *testing.T) {
		out, err := runReplicateCmd(ctx, "--source", srcAddr, "--source-ssl-mode", "verify-ca", "--source-ssl-ca", srcCA,
			"--target", dstAddr+"?ssl-mode=VERIFY_IDENTITY&ssl-ca="+dstCA,
			"--stream", "tls", "--start-gtid", start, "--stop-at-gtid", stop, "--databases", "app", "--workers", "2", "--heartbeat", "500ms")
		noSecret(t, "replicate", out, errText(err))
		if err != nil {
			t.Fatalf("replicate: %v\n%s", err, out)
		}
		var v string
		if err := dst.OpenT(t, "").QueryRow("SELECT GROUP_CONCAT(v ORDER BY id) FROM app.t").Scan(&v); err != nil || v != "a,c" {
			t.Fatalf("target rows %q, %v", v, err)
		}
	})

	t.Run("status", func(t *testing.T) {
		goSQLDriverForm := func(q string) string { return fmt.Sprintf("binlane:%s@tcp(%s)/?%s", tlsPW, dst.Addr(), q) }
		for _, args := range [][]string{
			{"--target", dstAddr, "--target-ssl-mode", "verify-ca", "--target-ssl-ca", dstCA},
			{"--target", dstAddr + "?ssl-mode=verify-identity&ssl-ca=" + dstCA},
			{"--target", goSQLDriverForm("ssl-mode=verify-ca&ssl-ca=" + dstCA)},
			// go-sql-driver's own spellings: once dropped (plaintext, so
			// refused) from the DSN form, and sent as SET tls=... (error
			// 1193) from a URL.
			{"--target", goSQLDriverForm("tls=skip-verify")},
			{"--target", goSQLDriverForm("tls=true&ssl-ca=" + dstCA)},
			{"--target", dstAddr + "?tls=true&ssl-ca=" + dstCA},
			{"--target", dstAddr + "?tls=skip-verify"},
			// A flag wins over the address.
			{"--target", dstAddr + "?tls=false", "--target-ssl-mode", "required"},
		} {
			out, err := runStatusCmd(t, args...)
			noSecret(t, "status", out, errText(err))
			if err != nil || !strings.Contains(out, "stream tls: stopped") {
				t.Errorf("status %v: %v\n%s", args[1:], err, out)
			}
		}
	})

	t.Run("verify", func(t *testing.T) {
		for _, args := range [][]string{
			{"--source", srcAddr, "--source-ssl-mode", "verify-ca", "--source-ssl-ca", srcCA,
				"--target", dstAddr, "--target-ssl-mode", "verify-identity", "--target-ssl-ca", dstCA},
			{"--source", srcAddr + "?ssl-mode=verify-identity&ssl-ca=" + srcCA, "--target", dstAddr + "?ssl-ca=" + dstCA},
		} {
			out, err := runVerifyCmd(t, append(args, "--databases", "app")...)
			noSecret(t, "verify", out, errText(err))
			if err != nil || !strings.Contains(out, "app.t") {
				t.Errorf("verify %v: %v\n%s", args, err, out)
			}
		}
	})

	t.Run("binlog dump", func(t *testing.T) {
		certified := addrOf(src, "certified")
		for _, args := range [][]string{
			{"--source", srcAddr, "--ssl-mode", "verify-ca", "--ssl-ca", srcCA},
			{"--source", srcAddr + "?ssl-mode=verify-identity&ssl-ca=" + srcCA},
			{"--source", certified, "--ssl-ca", srcCA, "--ssl-cert", src.Certs().ClientCert, "--ssl-key", src.Certs().ClientKey},
		} {
			out, err := runBinlogCmd(t, append([]string{"dump", "--from-gtid", start, "--non-blocking"}, args...)...)
			noSecret(t, "binlog dump", out, errText(err))
			if err != nil || !strings.Contains(out, "### UPDATE `app`.`t`") {
				t.Errorf("binlog dump %v: %v\n%s", args, err, out)
			}
		}
		// REQUIRE X509 without a client certificate: refused.
		_, err := runBinlogCmd(t, "dump", "--source", certified, "--ssl-mode", "required", "--non-blocking")
		if err == nil || !strings.Contains(err.Error(), "Access denied") {
			t.Errorf("REQUIRE X509 account without a certificate: %v", err)
		}
	})
}

// noBinlaneSchema fails the test when binlane created its schema on s.
func noBinlaneSchema(t *testing.T, s *sandbox.Server) {
	t.Helper()
	var n int
	if err := s.OpenT(t, "").QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'binlane'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("binlane schema on %s: %d, %v", s.Name, n, err)
	}
}

// TestTLSRequiredWithoutTLS: against servers without TLS, required and
// stronger modes refuse every connection with an error naming the server
// and the mode, and replicate writes nothing to the target; preferred (the
// default) connects in plaintext.
func TestTLSRequiredWithoutTLS(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, s := range []*sandbox.Server{src, dst} {
		if err := s.CreateUser(ctx, "binlane", tlsPW, sandbox.RequireNone, "app"); err != nil {
			t.Fatal(err)
		}
	}
	certs, err := sandbox.NewCerts(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	srcAddr, dstAddr := addrOf(src, "binlane"), addrOf(dst, "binlane")
	srcDB := src.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)")
	stop := sourcePos(t, srcDB)
	replicate := func(extra ...string) error {
		args := append([]string{"--source", srcAddr, "--target", dstAddr, "--stream", "plain", "--start-gtid", start,
			"--stop-at-gtid", stop, "--heartbeat", "500ms"}, extra...)
		out, err := runReplicateCmd(ctx, args...)
		noSecret(t, "replicate", out, errText(err))
		return err
	}

	for _, mode := range []string{"required", "verify-ca", "verify-identity"} {
		t.Run(mode, func(t *testing.T) {
			err := replicate("--source-ssl-mode", "disabled", "--target-ssl-mode", mode, "--target-ssl-ca", certs.CA)
			wantTLSError(t, "replicate, target", err, dst.Addr(), mode, true)
			noBinlaneSchema(t, dst)
			err = replicate("--source-ssl-mode", mode, "--source-ssl-ca", certs.CA, "--target-ssl-mode", "preferred")
			wantTLSError(t, "replicate, source", err, src.Addr(), mode, true)
			noBinlaneSchema(t, dst)

			_, err = runStatusCmd(t, "--target", dstAddr+"?ssl-mode="+mode+"&ssl-ca="+certs.CA)
			wantTLSError(t, "status", err, dst.Addr(), mode, true)
			_, err = runVerifyCmd(t, "--source", srcAddr, "--source-ssl-mode", mode, "--source-ssl-ca", certs.CA,
				"--target", dstAddr, "--databases", "app")
			wantTLSError(t, "verify", err, src.Addr(), mode, true)
			_, err = runBinlogCmd(t, "dump", "--source", srcAddr, "--ssl-mode", mode, "--ssl-ca", certs.CA, "--non-blocking")
			wantTLSError(t, "binlog dump", err, src.Addr(), mode, true)
		})
	}

	t.Run("preferred", func(t *testing.T) {
		if err := replicate(); err != nil { // the default mode
			t.Fatalf("replicate: %v", err)
		}
		if out, err := runStatusCmd(t, "--target", dstAddr+"?ssl-mode=preferred"); err != nil || !strings.Contains(out, "stream plain: stopped") {
			t.Fatalf("status: %v\n%s", err, out)
		}
		if out, err := runBinlogCmd(t, "dump", "--source", srcAddr, "--from-gtid", start, "--non-blocking"); err != nil ||
			!strings.Contains(out, "INSERT INTO `app`.`t`") {
			t.Fatalf("binlog dump: %v\n%s", err, out)
		}
		for _, s := range []*sandbox.Server{src, dst} {
			if sqlTLS(t, ctx, addrOf(s, "binlane")) || wireTLS(t, ctx, addrOf(s, "binlane")) {
				t.Errorf("%s offers no TLS, yet the connection is encrypted", s.Name)
			}
		}
	})
}

// TestTLSHostNameMismatch: a server whose certificate names another host
// fails verify-identity on every kind of connection and passes verify-ca;
// preferred encrypts with a server that offers TLS.
func TestTLSHostNameMismatch(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, TLS: &sandbox.TLS{ServerNames: []string{"db.invalid"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := srv.CreateUser(ctx, "binlane", tlsPW, sandbox.RequireSSL, "app"); err != nil {
		t.Fatal(err)
	}
	// The server is read as a target too (status).
	srv.ExecT(t, sandbox.TargetGrants("'binlane'@'%'")...)
	addr, ca := addrOf(srv, "binlane"), srv.Certs().CA
	srv.ExecT(t, "CREATE DATABASE marker")

	for _, identity := range [][]string{
		{"--target", addr, "--target-ssl-mode", "verify-identity", "--target-ssl-ca", ca},
		{"--target", addr + "?tls=true&ssl-ca=" + ca},
	} {
		_, err := runStatusCmd(t, identity...)
		wantTLSError(t, "status, verify-identity", err, srv.Addr(), "verify-identity", false)
	}
	_, err := runBinlogCmd(t, "dump", "--source", addr, "--ssl-mode", "verify-identity", "--ssl-ca", ca, "--non-blocking")
	wantTLSError(t, "binlog dump, verify-identity", err, srv.Addr(), "verify-identity", false)
	if err != nil && !strings.Contains(err.Error(), "certificate for 127.0.0.1") {
		t.Errorf("the error does not say what failed: %v", err)
	}

	if out, err := runStatusCmd(t, "--target", addr, "--target-ssl-mode", "verify-ca", "--target-ssl-ca", ca); err != nil {
		t.Errorf("status, verify-ca: %v\n%s", err, out)
	}
	if out, err := runBinlogCmd(t, "dump", "--source", addr, "--ssl-mode", "verify-ca", "--ssl-ca", ca, "--from-gtid=", "--non-blocking"); err != nil ||
		!strings.Contains(out, "CREATE DATABASE marker") {
		t.Errorf("binlog dump, verify-ca: %v\n%s", err, out)
	}
	// A CA that did not sign the server's certificate fails verify-ca.
	other, err := sandbox.NewCerts(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runStatusCmd(t, "--target", addr, "--target-ssl-mode", "verify-ca", "--target-ssl-ca", other.CA)
	wantTLSError(t, "status, verify-ca with another CA", err, srv.Addr(), "verify-ca", false)

	if !sqlTLS(t, ctx, addr) || !wireTLS(t, ctx, addr) {
		t.Error("preferred did not encrypt with a server that offers TLS")
	}
}

// sqlTLS reports whether SQL connections to addr (through the DSN mapping)
// are encrypted, from several connections made at once: with preferred,
// go-sql-driver's fallback to plaintext must not leak from one connection
// into another (the race detector watches).
func sqlTLS(t *testing.T, ctx context.Context, addr string) bool {
	t.Helper()
	d, err := dsn.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	db, err := d.OpenDB("")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 4
	db.SetMaxOpenConns(n)
	ciphers := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var conn *sql.Conn
			if conn, errs[i] = db.Conn(ctx); errs[i] != nil {
				return
			}
			defer conn.Close()
			errs[i] = conn.QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_CIPHER'").Scan(&ciphers[i])
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, c := range ciphers[1:] {
		if (c == "") != (ciphers[0] == "") {
			t.Fatalf("connections of one pool differ: ciphers %q", ciphers)
		}
	}
	return ciphers[0] != ""
}

// wireTLS reports whether binlane's replication connection to addr is
// encrypted.
func wireTLS(t *testing.T, ctx context.Context, addr string) bool {
	t.Helper()
	d, err := dsn.Parse(addr)
	if err != nil {
		t.Fatal(err)
	}
	wc, err := d.WireConfig()
	if err != nil {
		t.Fatal(err)
	}
	c, err := wire.Dial(ctx, wc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Query(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
	if err != nil || len(res.Rows) != 1 {
		t.Fatalf("Ssl_cipher: %v", err)
	}
	if encrypted := *res.Rows[0][1] != ""; encrypted != c.TLS() {
		t.Fatalf("the server says encrypted=%v, the connection says %v", encrypted, c.TLS())
	}
	return c.TLS()
}

// TestTLSFlags: the --ROLE-ssl-* flags (and their config-file keys) win
// over the address, setting only what they give.
func TestTLSFlags(t *testing.T) {
	cmd := newReplicateCmd()
	file := configFile(t, "target-ssl-ca: /file/ca.pem\n")
	if err := cmd.ParseFlags([]string{"--source-ssl-mode", "VERIFY_CA", "--source-ssl-ca", "/flag/ca.pem", "--config", file}); err != nil {
		t.Fatal(err)
	}
	if err := config.Load(cmd.Flags(), config.Options{ConfigFlag: "config", EnvPrefix: "BINLANE_", Environ: func() []string { return nil }}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) string { return cmd.Flags().Lookup(name).Value.String() }
	src, err := resolveServer("source", "mysql://u@h:1/?tls=true&ssl-ca=/addr/ca.pem&ssl-cert=/c&ssl-key=/k", "", "",
		tlsFlags{prefix: "source-", mode: get("source-ssl-mode"), ca: get("source-ssl-ca")})
	if err != nil {
		t.Fatal(err)
	}
	if src.SSLMode() != dsn.SSLVerifyCA || src.TLS.CA != "/flag/ca.pem" || src.TLS.Cert != "/c" || src.TLS.Key != "/k" {
		t.Errorf("source: mode %s, %+v", src.SSLMode(), src.TLS)
	}
	dst, err := resolveServer("target", "t@tcp(h:2)/", "", "", tlsFlags{prefix: "target-", ca: get("target-ssl-ca")})
	if err != nil {
		t.Fatal(err)
	}
	if dst.SSLMode() != dsn.SSLVerifyCA || dst.TLS.CA != "/file/ca.pem" {
		t.Errorf("target: mode %s, %+v", dst.SSLMode(), dst.TLS)
	}
	_, err = resolveServer("source", "mysql://u@h:1/", "", "", tlsFlags{prefix: "source-", mode: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "--source-ssl-mode") {
		t.Errorf("bad mode: %v", err)
	}
}
