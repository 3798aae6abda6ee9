package dsn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/wire"
)

// SSLMode says whether a connection is encrypted and what is checked, with
// the names the MySQL clients use (--ssl-mode).
type SSLMode string

const (
	// SSLDisabled connects in plaintext.
	SSLDisabled SSLMode = "disabled"
	// SSLPreferred encrypts when the server offers TLS and connects in
	// plaintext otherwise; the certificate is not checked. The default.
	SSLPreferred SSLMode = "preferred"
	// SSLRequired encrypts or fails; the certificate is not checked.
	SSLRequired SSLMode = "required"
	// SSLVerifyCA encrypts and checks the server's certificate chain
	// against ssl-ca (or the system's roots), not its host name.
	SSLVerifyCA SSLMode = "verify-ca"
	// SSLVerifyIdentity checks the chain and that the certificate names
	// the host binlane connects to.
	SSLVerifyIdentity SSLMode = "verify-identity"
)

// ParseSSLMode reads a mode in any case, with - or _ (VERIFY_CA,
// verify-ca).
func ParseSSLMode(s string) (SSLMode, error) {
	m := SSLMode(strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "_", "-"))
	switch m {
	case SSLDisabled, SSLPreferred, SSLRequired, SSLVerifyCA, SSLVerifyIdentity:
		return m, nil
	}
	return "", fmt.Errorf("ssl-mode %q: want disabled, preferred, required, verify-ca or verify-identity", s)
}

// modeFromTLSParam maps go-sql-driver's tls= values onto the modes.
func modeFromTLSParam(v string) (SSLMode, error) {
	switch strings.ToLower(v) {
	case "false", "0":
		return SSLDisabled, nil
	case "preferred":
		return SSLPreferred, nil
	case "skip-verify":
		return SSLRequired, nil
	case "true", "1":
		return SSLVerifyIdentity, nil
	}
	return "", fmt.Errorf("tls=%s: registered TLS configurations are not supported; use tls=true, skip-verify, preferred or false, or ssl-mode with ssl-ca, ssl-cert and ssl-key", v)
}

// TLSOptions are a server's TLS settings. Files are PEM.
type TLSOptions struct {
	// Mode is empty when neither the address nor a flag gave one: see
	// DSN.SSLMode for the default.
	Mode SSLMode
	CA   string // CA certificates the server's chain is checked against
	Cert string // client certificate, for accounts that REQUIRE X509
	Key  string // its private key
}

// Override replaces each setting of o with the one over has, if any:
// command-line flags win over the address.
func (o *TLSOptions) Override(over TLSOptions) {
	if over.Mode != "" {
		o.Mode = over.Mode
	}
	if over.CA != "" {
		o.CA = over.CA
	}
	if over.Cert != "" {
		o.Cert = over.Cert
	}
	if over.Key != "" {
		o.Key = over.Key
	}
}

// SSLMode returns the mode connections to d use. Without one given, it is
// preferred, as in the MySQL clients: encrypted whenever the server can,
// and a server without TLS still works. A CA given without a mode means
// verify-ca: a CA that is not checked against would be a false promise.
func (d DSN) SSLMode() SSLMode {
	switch {
	case d.TLS.Mode != "":
		return d.TLS.Mode
	case d.TLS.CA != "":
		return SSLVerifyCA
	}
	return SSLPreferred
}

// tlsConfig builds the TLS configuration of d's mode: nil for disabled,
// and optional when plaintext is acceptable from a server that offers no
// TLS (preferred).
func (d DSN) tlsConfig() (cfg *tls.Config, optional bool, err error) {
	mode := d.SSLMode()
	fail := func(err error) (*tls.Config, bool, error) {
		return nil, false, fmt.Errorf("%s: ssl-mode %s: %w", d, mode, err)
	}
	if mode == SSLPreferred && d.Socket != "" {
		// A Unix socket never leaves the machine: the MySQL clients do not
		// encrypt it unless asked to (required and above).
		return nil, false, nil
	}
	if mode == SSLDisabled {
		if d.TLS.CA != "" || d.TLS.Cert != "" || d.TLS.Key != "" {
			return fail(errors.New("ssl-ca, ssl-cert and ssl-key need TLS: drop them or choose another mode"))
		}
		return nil, false, nil
	}
	// ServerName also goes out as SNI, so it is set in every mode.
	cfg = &tls.Config{ServerName: d.Host, MinVersion: tls.VersionTLS12}
	if (d.TLS.Cert == "") != (d.TLS.Key == "") {
		return fail(errors.New("ssl-cert and ssl-key go together: give both or neither"))
	}
	if d.TLS.Cert != "" {
		pair, err := tls.LoadX509KeyPair(d.TLS.Cert, d.TLS.Key)
		if err != nil {
			return fail(fmt.Errorf("client certificate: %w", err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	var roots *x509.CertPool // nil: the system's
	if d.TLS.CA != "" {
		pem, err := os.ReadFile(d.TLS.CA)
		if err != nil {
			return fail(fmt.Errorf("ssl-ca: %w", err))
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return fail(fmt.Errorf("ssl-ca %s: no PEM certificate in it", d.TLS.CA))
		}
	}
	switch mode {
	case SSLPreferred, SSLRequired:
		// Encryption without authenticating the server, as the MySQL
		// clients do in these modes (and go-sql-driver's tls=skip-verify).
		cfg.InsecureSkipVerify = true
	case SSLVerifyCA:
		// crypto/tls checks the chain and the name together or not at
		// all: the name check is turned off and the chain checked here.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = verifyChain(roots)
	case SSLVerifyIdentity:
		cfg.RootCAs = roots
	}
	return cfg, mode == SSLPreferred, nil
}

// verifyChain checks the server's certificate chain against roots without
// looking at the names in it.
func verifyChain(roots *x509.CertPool) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
		for _, c := range cs.PeerCertificates[1:] {
			opts.Intermediates.AddCert(c)
		}
		if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
			return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
		}
		return nil
	}
}

// TLSError is a connection that could not be made in its TLS mode: the
// server offers no TLS, or its certificate failed the mode's checks.
// Retrying cannot fix it.
type TLSError struct {
	Server string // the address, password hidden
	Mode   SSLMode
	Err    error
}

func (e *TLSError) Error() string {
	if e.NoTLS() {
		return fmt.Sprintf("%s does not offer TLS, and ssl-mode %s never falls back to plaintext: "+
			"enable TLS on the server (ssl_cert, ssl_key) or choose ssl-mode preferred", e.Server, e.Mode)
	}
	return fmt.Sprintf("%s: TLS in ssl-mode %s failed: %v", e.Server, e.Mode, e.Err)
}

func (e *TLSError) Unwrap() error { return e.Err }

// NoTLS reports whether the server did not offer TLS at all.
func (e *TLSError) NoTLS() bool {
	return errors.Is(e.Err, mysql.ErrNoTLS) || errors.Is(e.Err, wire.ErrNoTLS)
}

// AnnotateTLS returns err as a *TLSError naming d and its mode when TLS
// caused it, and unchanged otherwise: for errors of connections made
// outside OpenDB (the replication connection).
func (d DSN) AnnotateTLS(err error) error {
	var te *TLSError
	if err == nil || errors.As(err, &te) || !isTLSFailure(err) {
		return err
	}
	return &TLSError{Server: d.String(), Mode: d.SSLMode(), Err: err}
}

func isTLSFailure(err error) bool {
	var (
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		cie x509.CertificateInvalidError
		ae  tls.AlertError
		rhe tls.RecordHeaderError
	)
	return errors.Is(err, mysql.ErrNoTLS) || errors.Is(err, wire.ErrNoTLS) ||
		errors.As(err, &cve) || errors.As(err, &uae) || errors.As(err, &hne) || errors.As(err, &cie) ||
		errors.As(err, &ae) || errors.As(err, &rhe) || IsRemoteTLSAlert(err)
}

// IsRemoteTLSAlert reports whether err is a TLS alert from the server
// (crypto/tls reports them as a *net.OpError "remote error", such as
// "tls: certificate required"): a refusal, not a network failure to retry.
func IsRemoteTLSAlert(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Op == "remote error"
}
