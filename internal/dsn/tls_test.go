package dsn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/wire/wiretest"
)

func TestTLSParameters(t *testing.T) {
	cases := []struct {
		in        string
		mode      SSLMode
		ca        string
		cert, key string
		db        string
	}{
		{in: "mysql://u@h/", mode: SSLPreferred},
		{in: "u@tcp(h:1)/", mode: SSLPreferred},
		// go-sql-driver's tls= values, in both forms.
		{in: "mysql://u@h/?tls=false", mode: SSLDisabled},
		{in: "mysql://u@h/?tls=preferred", mode: SSLPreferred},
		{in: "mysql://u@h/?tls=skip-verify", mode: SSLRequired},
		{in: "mysql://u@h/?tls=true", mode: SSLVerifyIdentity},
		{in: "u:p@tcp(h:1)/?tls=false", mode: SSLDisabled},
		{in: "u:p@tcp(h:1)/?tls=preferred", mode: SSLPreferred},
		{in: "u:p@tcp(h:1)/?tls=skip-verify", mode: SSLRequired},
		{in: "u:p@tcp(h:1)/db?tls=true", mode: SSLVerifyIdentity, db: "db"},
		// ssl-mode in the MySQL clients' spellings.
		{in: "mysql://u@h/?ssl-mode=DISABLED", mode: SSLDisabled},
		{in: "mysql://u@h/?ssl-mode=Preferred", mode: SSLPreferred},
		{in: "mysql://u@h/?ssl-mode=required", mode: SSLRequired},
		{in: "mysql://u@h/?ssl-mode=VERIFY_CA", mode: SSLVerifyCA},
		{in: "mysql://u@h/?ssl_mode=verify-identity", mode: SSLVerifyIdentity},
		{in: "u@tcp(h:1)/?ssl-mode=VERIFY_IDENTITY", mode: SSLVerifyIdentity},
		{in: "mysql://u@h/?tls=true&ssl-mode=verify-identity", mode: SSLVerifyIdentity},
		// A CA without a mode is checked against.
		{in: "mysql://u@h/?ssl-ca=/etc/ca.pem", mode: SSLVerifyCA, ca: "/etc/ca.pem"},
		{in: "mysql://u@h/?ssl-ca=/etc/ca.pem&ssl-mode=required", mode: SSLRequired, ca: "/etc/ca.pem"},
		// Raw slashes in a go-sql-driver DSN's values.
		{in: "u:p/w@tcp(h:1)/app?ssl-ca=/etc/ssl/ca.pem&ssl-mode=verify-identity", mode: SSLVerifyIdentity, ca: "/etc/ssl/ca.pem", db: "app"},
		{in: "mysql://u@h/app?ssl-cert=/c.pem&ssl-key=/k.pem&ssl-mode=verify-ca", mode: SSLVerifyCA, cert: "/c.pem", key: "/k.pem", db: "app"},
		{in: "mysql://u@h/?ssl-ca=%2Fa%20b%2Fca.pem", mode: SSLVerifyCA, ca: "/a b/ca.pem"},
	}
	for _, c := range cases {
		d, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if d.SSLMode() != c.mode || d.TLS.CA != c.ca || d.TLS.Cert != c.cert || d.TLS.Key != c.key || d.DB != c.db {
			t.Errorf("Parse(%q): mode %s, TLS %+v, db %q", c.in, d.SSLMode(), d.TLS, d.DB)
		}
		for k := range d.Params {
			if strings.HasPrefix(k, "ssl") || k == "tls" {
				t.Errorf("Parse(%q): %s left among the session variables", c.in, k)
			}
		}
	}
}

func TestParameterErrors(t *testing.T) {
	cases := map[string]string{
		"mysql://u@h/?tls=custom":                 "registered TLS configurations are not supported",
		"u@tcp(h:1)/?tls=custom":                  "registered TLS configurations are not supported",
		"mysql://u@h/?ssl-mode=sometimes":         "want disabled, preferred, required, verify-ca or verify-identity",
		"mysql://u@h/?tls=true&ssl-mode=disabled": "disagree",
		"mysql://u@h/?ssl-moode=required":         "unknown TLS parameter ssl-moode",
		"mysql://u@h/?sslca=/x":                   "unknown TLS parameter sslca",
		"mysql://u@h/?parseTime=true":             "parseTime is a go-sql-driver option",
		"u@tcp(h:1)/?timeout=5s":                  "timeout is a go-sql-driver option",
		"mysql://u@h/?wait-timeout=5":             "parameter name is not valid",
	}
	for in, want := range cases {
		_, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, want)
		}
	}
}

func TestFlagsOverrideTheAddress(t *testing.T) {
	cases := []struct {
		in   string
		over TLSOptions
		mode SSLMode
		ca   string
	}{
		{"mysql://u@h/?ssl-mode=verify-identity&ssl-ca=/a", TLSOptions{Mode: SSLRequired}, SSLRequired, "/a"},
		{"mysql://u@h/?ssl-mode=verify-identity&ssl-ca=/a", TLSOptions{CA: "/b"}, SSLVerifyIdentity, "/b"},
		{"mysql://u@h/?tls=false", TLSOptions{Mode: SSLVerifyCA, CA: "/b"}, SSLVerifyCA, "/b"},
		{"u@tcp(h:1)/?tls=true", TLSOptions{Mode: SSLDisabled}, SSLDisabled, ""},
		{"mysql://u@h/", TLSOptions{CA: "/c"}, SSLVerifyCA, "/c"},
		{"mysql://u@h/?ssl-mode=required", TLSOptions{}, SSLRequired, ""},
	}
	for _, c := range cases {
		d, err := Parse(c.in)
		if err != nil {
			t.Fatal(err)
		}
		d.TLS.Override(c.over)
		if d.SSLMode() != c.mode || d.TLS.CA != c.ca {
			t.Errorf("%s with %+v: mode %s, CA %q", c.in, c.over, d.SSLMode(), d.TLS.CA)
		}
	}
}

// TestDriverConfigModes checks what each mode becomes in go-sql-driver's
// configuration; WireConfig returns the same *tls.Config shape.
func TestDriverConfigModes(t *testing.T) {
	certs := newCerts(t, "127.0.0.1")
	cases := []struct {
		mode              SSLMode
		tls, skipVerify   bool
		chainCheck, roots bool
		fallback          bool
	}{
		{mode: SSLDisabled},
		{mode: SSLPreferred, tls: true, skipVerify: true, fallback: true},
		{mode: SSLRequired, tls: true, skipVerify: true},
		{mode: SSLVerifyCA, tls: true, skipVerify: true, chainCheck: true},
		{mode: SSLVerifyIdentity, tls: true, roots: true},
	}
	for _, c := range cases {
		d, err := Parse("mysql://u:pw@db.example:3307/?tls=true&wait_timeout=5")
		if err != nil {
			t.Fatal(err)
		}
		d.TLS.Override(TLSOptions{Mode: c.mode})
		if c.mode != SSLDisabled {
			d.TLS.Override(TLSOptions{CA: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey})
		}
		cfg, err := d.DriverConfig("app")
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		rc, err := d.WireConfig()
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		wcfg, optional := rc.TLS, rc.TLSOptional
		if (cfg.TLS != nil) != c.tls || (wcfg != nil) != c.tls || cfg.AllowFallbackToPlaintext != c.fallback || optional != c.fallback {
			t.Fatalf("%s: TLS %v/%v, fallback %v/%v", c.mode, cfg.TLS != nil, wcfg != nil, cfg.AllowFallbackToPlaintext, optional)
		}
		if _, ok := cfg.Params["tls"]; ok || cfg.Params["wait_timeout"] != "5" || cfg.DBName != "app" {
			t.Errorf("%s: params %v, db %q", c.mode, cfg.Params, cfg.DBName)
		}
		if !c.tls {
			continue
		}
		for _, tc := range []*tls.Config{cfg.TLS, wcfg} {
			if tc.InsecureSkipVerify != c.skipVerify || (tc.VerifyConnection != nil) != c.chainCheck ||
				(tc.RootCAs != nil) != c.roots || tc.ServerName != "db.example" || len(tc.Certificates) != 1 {
				t.Errorf("%s: skip verify %v, chain check %v, roots %v, server name %q, %d client certificates", c.mode,
					tc.InsecureSkipVerify, tc.VerifyConnection != nil, tc.RootCAs != nil, tc.ServerName, len(tc.Certificates))
			}
		}
	}
}

// TestVerifyModesHandshake runs TLS handshakes against a server whose
// certificate names db.invalid: verify-ca passes where verify-identity
// fails, an unknown CA fails both, required checks nothing.
func TestVerifyModesHandshake(t *testing.T) {
	certs := newCerts(t, "db.invalid")
	other := newCerts(t, "127.0.0.1")
	pair, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	pem, _ := os.ReadFile(certs.CA)
	clientCAs.AppendCertsFromPEM(pem)
	cases := []struct {
		addr      string
		requireCl bool // the server asks for a client certificate
		ok        bool
		errType   any
	}{
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=verify-ca&ssl-ca=" + certs.CA, ok: true},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=verify-identity&ssl-ca=" + certs.CA, errType: x509.HostnameError{}},
		{addr: "mysql://u:S3cretCanaryPW@db.invalid:1/?ssl-mode=verify-identity&ssl-ca=" + certs.CA, ok: true},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=verify-ca&ssl-ca=" + other.CA, errType: x509.UnknownAuthorityError{}},
		{addr: "mysql://u:S3cretCanaryPW@db.invalid:1/?ssl-mode=verify-identity&ssl-ca=" + other.CA, errType: x509.UnknownAuthorityError{}},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=required", ok: true},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=preferred&ssl-ca=" + other.CA, ok: true},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=verify-ca&ssl-ca=" + certs.CA +
			"&ssl-cert=" + certs.ClientCert + "&ssl-key=" + certs.ClientKey, requireCl: true, ok: true},
		{addr: "mysql://u:S3cretCanaryPW@127.0.0.1:1/?ssl-mode=verify-ca&ssl-ca=" + certs.CA, requireCl: true},
	}
	for _, c := range cases {
		d, err := Parse(c.addr)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := d.WireConfig()
		if err != nil {
			t.Fatal(err)
		}
		cfg := rc.TLS
		srvCfg := &tls.Config{Certificates: []tls.Certificate{pair}}
		if c.requireCl {
			srvCfg.ClientAuth, srvCfg.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
		}
		err = handshake(t, cfg, srvCfg)
		if c.ok {
			if err != nil {
				t.Errorf("%s: %v", c.addr, err)
			}
			continue
		}
		var te *TLSError
		annotated := d.AnnotateTLS(err)
		if !errors.As(annotated, &te) || te.NoTLS() {
			t.Fatalf("%s: %v is not a TLS failure", c.addr, err)
		}
		msg := annotated.Error()
		if !strings.Contains(msg, "ssl-mode "+string(d.SSLMode())) || !strings.Contains(msg, "127.0.0.1:1") && !strings.Contains(msg, "db.invalid:1") ||
			strings.Contains(msg, "S3cretCanaryPW") {
			t.Errorf("%s: message %q", c.addr, msg)
		}
		switch c.errType.(type) {
		case x509.HostnameError:
			var he x509.HostnameError
			if !errors.As(err, &he) {
				t.Errorf("%s: %v, want a host name error", c.addr, err)
			}
		case x509.UnknownAuthorityError:
			var ue x509.UnknownAuthorityError
			if !errors.As(err, &ue) {
				t.Errorf("%s: %v, want an unknown authority error", c.addr, err)
			}
		}
	}
}

// handshake runs a TLS handshake between cli and srv over loopback TCP
// (net.Pipe has no buffer: a client that stops reading mid-flight to send
// an alert would deadlock with the server) and returns the client's error.
func handshake(t *testing.T, cli, srv *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	deadline := time.Now().Add(10 * time.Second)
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		nc.SetDeadline(deadline)
		s := tls.Server(nc, srv)
		if s.Handshake() == nil {
			s.Write([]byte{1})
		}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(deadline)
	c := tls.Client(nc, cli)
	err = c.Handshake()
	if err == nil {
		// A server refusing the client certificate says so after the
		// client's side of a TLS 1.3 handshake is done.
		_, err = c.Read(make([]byte, 1))
	}
	nc.Close()
	<-done
	return err
}

func TestAnnotateTLSLeavesOtherErrors(t *testing.T) {
	d, _ := Parse("mysql://u:pw@h:1/")
	plain := errors.New("connection refused")
	if got := d.AnnotateTLS(plain); got != plain {
		t.Fatalf("AnnotateTLS changed %v into %v", plain, got)
	}
	if d.AnnotateTLS(nil) != nil {
		t.Fatal("AnnotateTLS(nil) != nil")
	}
}

// TestNoSecretInErrors feeds addresses that fail to parse, or whose TLS
// settings fail, with a canary password (also split by characters that
// break URL parsing, and next to a bad %-escape): no error may contain any
// part of it.
func TestNoSecretInErrors(t *testing.T) {
	const pw = "S3cretCanaryPW"
	bad := []string{
		"mysql://repl:" + pw + "@bad host:31306/",
		"mysql://repl:S3cret%zzCanaryPW@h:1/",
		"mysql://repl:" + pw + "%zz@h:1/",
		"mysql://repl:" + pw + "@h:99999/",
		"mysql://repl:" + pw + "@h:abc/",
		"mysql://repl:S3cret/CanaryPW@h:1/",
		"mysql://repl:12/S3cretCanaryPW@h:1/",
		"mysql://repl:12?S3cretCanaryPW@h:1/",
		"mysql://repl:12#S3cretCanaryPW@h:1/",
		"mysql://repl:S3cret?CanaryPW@h:1/",
		"mysql://repl:" + pw + "@h:1/?tls=custom",
		"mysql://repl:" + pw + "@h:1/?ssl-mode=sometimes",
		"mysql://repl:" + pw + "@h:1/?parseTime=true",
		"mysql://repl:" + pw + "@h:1/?a%zz=1",
		"mysql://repl:" + pw + "@[::1/",
		"repl:" + pw + "@tcp(bad host:3306)/",
		"repl:" + pw + "@tcp(h:99999)/",
		"repl:" + pw + "@unix(tmp/s.sock)/",
		"repl:S3cret)/CanaryPW@tcp(h:1",
		"repl:S3cret)/CanaryPW@tcp(h:1)/%zz",
		"repl:" + pw + "@tcp(h:1)/?tls=custom",
		"repl:" + pw + "@tcp(h:1)/?a%zz",
		"repl:" + pw + "@bogus(h:1)/",
		"repl:" + pw + "@tcp(h:1)",
		"repl:S3cret:CanaryPW@tcp(h:1)x/",
	}
	check := func(in string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%q accepted", in)
			return
		}
		pieces := []string{"S3cret", "CanaryPW"}
		if strings.Contains(in, "S3cret%zz") || strings.Contains(in, pw+"%zz") {
			pieces = append(pieces, "zz") // a piece of the password here
		}
		for _, piece := range pieces {
			if strings.Contains(err.Error(), piece) {
				t.Errorf("%q: error shows %q: %v", in, piece, err)
			}
		}
	}
	for _, in := range bad {
		_, err := Parse(in)
		check(in, err)
	}
	// The error still says where the problem is.
	_, err := Parse("mysql://repl:S3cretReplPW@bad host:31306/")
	if err == nil || !strings.Contains(err.Error(), "bad host:31306") || strings.Contains(err.Error(), "S3cretReplPW") {
		t.Errorf("bad host: %v", err)
	}

	// TLS settings that fail when the configuration is built.
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)
	for _, q := range []string{
		"ssl-mode=verify-ca&ssl-ca=" + filepath.Join(dir, "missing.pem"),
		"ssl-ca=" + notPEM,
		"ssl-mode=required&ssl-cert=" + notPEM,
		"ssl-mode=required&ssl-cert=" + notPEM + "&ssl-key=" + notPEM,
		"ssl-mode=disabled&ssl-ca=" + notPEM,
	} {
		for _, in := range []string{"mysql://repl:" + pw + "@h:1/?" + q, "repl:" + pw + "@tcp(h:1)/?" + q} {
			d, err := Parse(in)
			if err != nil {
				t.Fatalf("%q: %v", in, err)
			}
			_, err = d.DriverConfig("")
			check(in, err)
			if err != nil && (!strings.Contains(err.Error(), "ssl-mode "+string(d.SSLMode())) || !strings.Contains(err.Error(), "h:1")) {
				t.Errorf("%q: error does not name the address and the mode: %v", in, err)
			}
			_, err = d.WireConfig()
			check(in, err)
			_, err = d.OpenDB("")
			check(in, err)
		}
	}
}

func newCerts(t *testing.T, names ...string) *sandbox.Certs {
	t.Helper()
	c, err := sandbox.NewCerts(t.TempDir(), names)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPreferredFallbackIsPerConnection: with ssl-mode preferred,
// go-sql-driver records a fallback to plaintext in the configuration its
// connector shares; DriverConfig must keep that to the one connection. The
// first connection goes to a server without TLS, the second to one that
// offers TLS and only lets the password through over TLS (caching_sha2's
// full authentication without an RSA key).
func TestPreferredFallbackIsPerConnection(t *testing.T) {
	certs := newCerts(t, "127.0.0.1")
	pair, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	plain := wiretest.Start(t, wiretest.Config{User: "u", Password: "pw"})
	withTLS := wiretest.Start(t, wiretest.Config{User: "u", Password: "pw", CacheMiss: true,
		TLS: &tls.Config{Certificates: []tls.Certificate{pair}}})
	d, err := Parse("mysql://u:pw@127.0.0.1:1/?ssl-mode=preferred")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := d.DriverConfig("")
	if err != nil {
		t.Fatal(err)
	}
	dials := 0
	cfg.DialFunc = func(ctx context.Context, network, _ string) (net.Conn, error) {
		dials++
		addr := plain.Addr()
		if dials > 1 {
			addr = withTLS.Addr()
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i, what := range []string{"plaintext to the server without TLS", "TLS to the server that offers it"} {
		conn, err := c.Connect(ctx)
		if err != nil {
			t.Fatalf("connection %d (%s): %v", i+1, what, err)
		}
		conn.Close()
	}
}
