package sandbox

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/binlane/binlane/internal/sqlquote"
)

// TLS makes a sandbox server offer TLS with certificates generated for it
// (see Certs).
type TLS struct {
	// ServerNames are the host names and IP addresses the server's
	// certificate is valid for; default 127.0.0.1 and localhost. Names
	// clients do not connect to (such as "db.invalid") give a certificate
	// that passes verify-ca and fails verify-identity.
	ServerNames []string
}

// Certs are PEM files of a throwaway certificate authority, a server
// certificate and a client certificate it signed. Keys are ECDSA P-256.
type Certs struct {
	CA         string // the CA certificate
	ServerCert string
	ServerKey  string
	ClientCert string // for accounts that REQUIRE X509
	ClientKey  string
}

// NewCerts writes a new CA, a server certificate for names and a client
// certificate into dir.
func NewCerts(dir string, names []string) (*Certs, error) {
	if len(names) == 0 {
		names = []string{"127.0.0.1", "localhost"}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("sandbox certificates: %w", err)
	}
	c := &Certs{
		CA:         filepath.Join(dir, "ca.pem"),
		ServerCert: filepath.Join(dir, "server-cert.pem"), ServerKey: filepath.Join(dir, "server-key.pem"),
		ClientCert: filepath.Join(dir, "client-cert.pem"), ClientKey: filepath.Join(dir, "client-key.pem"),
	}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "binlane sandbox CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := issue(caTmpl, caTmpl, caKey, caKey, c.CA, "")
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	srv := &x509.Certificate{
		Subject:   pkix.Name{CommonName: names[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			srv.IPAddresses = append(srv.IPAddresses, ip)
		} else {
			srv.DNSNames = append(srv.DNSNames, n)
		}
	}
	cli := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "binlane sandbox client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, leaf := range []struct {
		tmpl              *x509.Certificate
		certFile, keyFile string
	}{{srv, c.ServerCert, c.ServerKey}, {cli, c.ClientCert, c.ClientKey}} {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		if _, err := issue(leaf.tmpl, ca, key, caKey, leaf.certFile, leaf.keyFile); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// issue signs tmpl for key's public half with parent and signer, and writes
// the certificate and (when keyFile is set) the key.
func issue(tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey, certFile, keyFile string) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("sandbox certificates: %w", err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return nil, fmt.Errorf("sandbox certificates: %w", err)
	}
	if keyFile == "" {
		return der, nil
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, fmt.Errorf("sandbox certificates: %w", err)
	}
	return der, nil
}

// Certs returns the server's certificate files, nil when it was started
// without Options.TLS.
func (s *Server) Certs() *Certs { return s.certs }

// tlsArgs are mariadbd's options for the certificates: with them the
// server offers TLS (have_ssl=YES) and still accepts plaintext from
// accounts that do not REQUIRE it.
func (c *Certs) tlsArgs() []string {
	return []string{"--ssl-ca=" + c.CA, "--ssl-cert=" + c.ServerCert, "--ssl-key=" + c.ServerKey}
}

// Require is an account's REQUIRE clause.
type Require string

const (
	RequireNone Require = "NONE"
	RequireSSL  Require = "SSL"  // refused without TLS
	RequireX509 Require = "X509" // and without a client certificate the server's CA signed
)

// CreateUser creates user@'%' with password and the REQUIRE clause, with
// the privileges the README documents for binlane's account on a server of
// this role, on the databases dbs.
func (s *Server) CreateUser(ctx context.Context, user, password string, req Require, dbs ...string) error {
	acct := sqlquote.Account(user, "%")
	grants := SourceGrants(acct, dbs...)
	if s.opts.Role == Target {
		grants = TargetGrants(acct, dbs...)
	}
	return s.Exec(ctx, append([]string{"SET SESSION sql_log_bin = 0",
		fmt.Sprintf("CREATE USER %s IDENTIFIED BY %s REQUIRE %s", acct, sqlquote.String(password), req)}, grants...)...)
}
