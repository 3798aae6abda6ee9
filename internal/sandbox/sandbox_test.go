package sandbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

func TestSourceStartsWithReplicationSettings(t *testing.T) {
	s := StartT(t, Options{Role: Source, Extra: []string{"binlog-checksum=NONE"}})
	db := s.OpenT(t, "")
	var format, image, meta, checksum string
	var strict, serverID int
	err := db.QueryRow("SELECT @@binlog_format, @@binlog_row_image, @@binlog_row_metadata, @@binlog_checksum, @@gtid_strict_mode, @@server_id").
		Scan(&format, &image, &meta, &checksum, &strict, &serverID)
	if err != nil {
		t.Fatal(err)
	}
	if format != "ROW" || image != "FULL" || meta != "FULL" || strict != 1 || serverID != 1 {
		t.Fatalf("unexpected settings: %s %s %s strict=%d id=%d", format, image, meta, strict, serverID)
	}
	if checksum != "NONE" {
		t.Fatalf("extra option not applied: binlog_checksum=%s", checksum)
	}
}

func TestRestartKeepsDataAndPort(t *testing.T) {
	s := StartT(t, Options{Role: Target})
	s.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	port := s.Port
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if s.Running() {
		t.Fatal("server still running after Kill")
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Port != port {
		t.Fatalf("port changed: %d -> %d", port, s.Port)
	}
	var n int
	if err := s.OpenT(t, "d").QueryRow("SELECT COUNT(*) FROM t").Scan(&n); err != nil || n != 1 {
		t.Fatalf("after restart: n=%d err=%v", n, err)
	}
}

func TestTwoServersRunSideBySide(t *testing.T) {
	a := StartT(t, Options{Role: Source})
	b := StartT(t, Options{Role: Target})
	if a.Port == b.Port || a.Dir == b.Dir {
		t.Fatal("servers share a port or folder")
	}
	var id int
	if err := b.OpenT(t, "").QueryRow("SELECT @@server_id").Scan(&id); err != nil || id != 2 {
		t.Fatalf("target server_id=%d err=%v", id, err)
	}
}

// TestTLSServer starts a server with generated certificates and checks that
// it offers TLS, enforces REQUIRE SSL and REQUIRE X509, and presents a
// certificate for the names asked for, signed by Certs().CA.
func TestTLSServer(t *testing.T) {
	s := StartT(t, Options{TLS: &TLS{ServerNames: []string{"db.invalid"}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var haveSSL string
	if err := s.OpenT(t, "").QueryRow("SELECT @@have_ssl").Scan(&haveSSL); err != nil || haveSSL != "YES" {
		t.Fatalf("have_ssl = %q, %v", haveSSL, err)
	}
	if err := s.CreateUser(ctx, "ssl", "pw'1", RequireSSL); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, "x509", "pw2", RequireX509); err != nil {
		t.Fatal(err)
	}
	c := s.Certs()
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(c.CA)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		t.Fatalf("CA file: %v", err)
	}
	client, err := tls.LoadX509KeyPair(c.ClientCert, c.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	verified := &tls.Config{RootCAs: roots, ServerName: "db.invalid"}
	withCert := &tls.Config{RootCAs: roots, ServerName: "db.invalid", Certificates: []tls.Certificate{client}}
	for _, c := range []struct {
		user, pw string
		tls      *tls.Config
		ok       bool
	}{
		{"ssl", "pw'1", nil, false},
		{"ssl", "pw'1", verified, true},
		{"x509", "pw2", verified, false},
		{"x509", "pw2", withCert, true},
	} {
		cfg := mysql.NewConfig()
		cfg.User, cfg.Passwd, cfg.Net, cfg.Addr, cfg.TLS = c.user, c.pw, "tcp", s.Addr(), c.tls
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(conn)
		var cipher string
		err = db.QueryRowContext(ctx, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME='SSL_CIPHER'").Scan(&cipher)
		db.Close()
		if c.ok && (err != nil || cipher == "") || !c.ok && err == nil {
			t.Errorf("%s with TLS %v: cipher %q, err %v", c.user, c.tls != nil, cipher, err)
		}
	}
}

// TestStartFailureSaysWhy: a server that dies during start-up is reported
// with its exit status and what it wrote (its error log, or its output
// when it died before opening one), not as a bare "exited".
func TestStartFailureSaysWhy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Start(ctx, Options{Role: Target, Extra: []string{"no-such-option-at-all=1"}})
	if err == nil {
		s.Close()
		t.Fatal("a server with an unknown option started")
	}
	msg := err.Error()
	if !strings.Contains(msg, "exit status") || !strings.Contains(msg, "no-such-option-at-all") {
		t.Fatalf("the failure does not say why: %s", msg)
	}
}
