package wire

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/wire/wiretest"
)

// For a 32-byte password, MariaDB's scheme is exactly standard Ed25519 with
// the password as seed: check our arithmetic against crypto/ed25519 there.
func TestEd25519MatchesStandardForSeedSizedPasswords(t *testing.T) {
	for i := 0; i < 20; i++ {
		seed := make([]byte, ed25519.SeedSize)
		msg := make([]byte, 32)
		rand.Read(seed)
		rand.Read(msg)
		want := ed25519.Sign(ed25519.NewKeyFromSeed(seed), msg)
		got, err := ed25519Token(string(seed), msg)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("signature differs from crypto/ed25519: %x vs %x (%v)", got, want, err)
		}
	}
}

// Other password lengths: the signature must verify against the public key
// derived the same way (SHA-512 of the password, clamped).
func TestEd25519VerifiesForAnyPasswordLength(t *testing.T) {
	for _, pw := range []string{"", "x", "secret", strings.Repeat("long password ", 10)} {
		msg := []byte("0123456789abcdef0123456789abcdef")
		sig, err := ed25519Token(pw, msg)
		if err != nil || len(sig) != 64 {
			t.Fatalf("%q: %v, %d bytes", pw, err, len(sig))
		}
		pub := ed25519PublicKey(t, pw)
		if !ed25519.Verify(pub, msg, sig) {
			t.Errorf("password %q: signature does not verify", pw)
		}
	}
}

func dialFake(t *testing.T, srv *wiretest.Server, cfg Config) (*Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg.Addr = srv.Addr()
	c, err := Dial(ctx, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func TestCachingSHA2Paths(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cert := selfSignedCert(t)
	cases := []struct {
		name      string
		srv       wiretest.Config
		cli       Config
		wantError string
	}{
		{name: "fast path", srv: wiretest.Config{}},
		{name: "full path over TLS", srv: wiretest.Config{CacheMiss: true, TLS: cert.server}, cli: Config{TLS: cert.client}},
		{name: "full path with requested RSA key", srv: wiretest.Config{CacheMiss: true, RSAKey: key}},
		{name: "full path with pinned RSA key", srv: wiretest.Config{CacheMiss: true, RSAKey: key}, cli: Config{ServerPublicKey: &key.PublicKey}},
		{name: "switch from native", srv: wiretest.Config{GreetingPlugin: pluginNative}},
		{name: "native account", srv: wiretest.Config{AccountPlugin: pluginNative}},
		{name: "native account after switch", srv: wiretest.Config{AccountPlugin: pluginNative, GreetingPlugin: pluginCachingSHA2}},
		{name: "wrong password fast", srv: wiretest.Config{}, cli: Config{Password: "nope"}, wantError: "Access denied"},
		{name: "wrong password RSA", srv: wiretest.Config{CacheMiss: true, RSAKey: key}, cli: Config{Password: "nope"}, wantError: "Access denied"},
		{name: "cleartext refused without TLS", srv: wiretest.Config{AccountPlugin: pluginClearText}, wantError: "only sends over TLS"},
		{name: "cleartext over TLS", srv: wiretest.Config{AccountPlugin: pluginClearText, TLS: cert.server}, cli: Config{TLS: cert.client}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.srv.User, c.srv.Password = "repl", "s3cret pass"
			srv := wiretest.Start(t, c.srv)
			c.cli.User = "repl"
			if c.cli.Password == "" {
				c.cli.Password = "s3cret pass"
			}
			conn, err := dialFake(t, srv, c.cli)
			if c.wantError != "" {
				var ae *AuthError
				if err == nil || !strings.Contains(err.Error(), c.wantError) || !errors.As(err, &ae) {
					t.Fatalf("got %v, want an AuthError containing %q", err, c.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if conn.AuthPlugin() != c.srv.AccountPlugin && !(c.srv.AccountPlugin == "" && conn.AuthPlugin() == pluginCachingSHA2) {
				t.Errorf("authenticated with %s, account uses %s", conn.AuthPlugin(), c.srv.AccountPlugin)
			}
			if conn.TLS() != (c.cli.TLS != nil) {
				t.Errorf("TLS = %v", conn.TLS())
			}
			if conn.IsMariaDB() || conn.ServerVersion() != "8.0.36" {
				t.Errorf("server %q", conn.ServerVersion())
			}
		})
	}
}

func TestUnsupportedPluginIsAClearError(t *testing.T) {
	srv := wiretest.Start(t, wiretest.Config{User: "u", AccountPlugin: "auth_gssapi_client"})
	_, err := dialFake(t, srv, Config{User: "u", Password: "p"})
	var ae *AuthError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), `"auth_gssapi_client" is not supported`) {
		t.Fatalf("got %v", err)
	}
}
