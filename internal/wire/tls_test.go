package wire

import (
	"errors"
	"testing"

	"github.com/binlane/binlane/internal/wire/wiretest"
)

// TestTLSRequiredOrOptional: a TLS config without TLSOptional never falls
// back to plaintext (ErrNoTLS before any credential is sent); with
// TLSOptional the connection encrypts when the server offers TLS and
// stays plaintext when it does not (ssl-mode preferred).
func TestTLSRequiredOrOptional(t *testing.T) {
	cert := selfSignedCert(t)
	cases := []struct {
		name      string
		serverTLS bool
		optional  bool
		wantTLS   bool
		wantNoTLS bool
	}{
		{name: "required, server without TLS", wantNoTLS: true},
		{name: "required, server with TLS", serverTLS: true, wantTLS: true},
		{name: "optional, server without TLS", optional: true},
		{name: "optional, server with TLS", serverTLS: true, optional: true, wantTLS: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			scfg := wiretest.Config{User: "repl", Password: "pw", AccountPlugin: pluginNative}
			if c.serverTLS {
				scfg.TLS = cert.server
			}
			srv := wiretest.Start(t, scfg)
			conn, err := dialFake(t, srv, Config{User: "repl", Password: "pw", TLS: cert.client, TLSOptional: c.optional})
			if c.wantNoTLS {
				if !errors.Is(err, ErrNoTLS) {
					t.Fatalf("got %v, want ErrNoTLS", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conn.TLS() != c.wantTLS {
				t.Fatalf("TLS = %v, want %v", conn.TLS(), c.wantTLS)
			}
		})
	}
}
