package wire

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"

	"filippo.io/edwards25519"
)

// Authentication plugin names.
const (
	pluginNative       = "mysql_native_password"
	pluginCachingSHA2  = "caching_sha2_password"
	pluginEd25519      = "client_ed25519"
	pluginClearText    = "mysql_clear_password"
	scrambleLen        = 20
	ed25519ScrambleLen = 32
)

// nativeToken is SHA1(pw) XOR SHA1(scramble ‖ SHA1(SHA1(pw))); an empty
// password sends an empty token.
func nativeToken(password string, scramble []byte) []byte {
	if password == "" {
		return nil
	}
	h1 := sha1.Sum([]byte(password))
	h2 := sha1.Sum(h1[:])
	h := sha1.New()
	h.Write(scramble)
	h.Write(h2[:])
	h3 := h.Sum(nil)
	for i := range h3 {
		h3[i] ^= h1[i]
	}
	return h3
}

// cachingSHA2Token is SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) ‖ scramble).
func cachingSHA2Token(password string, scramble []byte) []byte {
	if password == "" {
		return nil
	}
	p1 := sha256.Sum256([]byte(password))
	p2 := sha256.Sum256(p1[:])
	h := sha256.New()
	h.Write(p2[:])
	h.Write(scramble)
	p3 := h.Sum(nil)
	for i := range p3 {
		p3[i] ^= p1[i]
	}
	return p3
}

// ed25519Token signs the server's 32-byte scramble the way MariaDB's
// client_ed25519 does: standard Ed25519, except that the password takes the
// place of the 32-byte seed, so its SHA-512 gives the clamped secret scalar
// (first half) and the nonce prefix (second half). crypto/ed25519 only
// accepts 32-byte seeds, hence the arithmetic with edwards25519 here.
func ed25519Token(password string, scramble []byte) ([]byte, error) {
	h := sha512.Sum512([]byte(password))
	s, err := edwards25519.NewScalar().SetBytesWithClamping(h[:32])
	if err != nil {
		return nil, fmt.Errorf("ed25519 secret scalar: %w", err)
	}
	pub := new(edwards25519.Point).ScalarBaseMult(s).Bytes()
	rh := sha512.New()
	rh.Write(h[32:])
	rh.Write(scramble)
	r, err := edwards25519.NewScalar().SetUniformBytes(rh.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("ed25519 nonce: %w", err)
	}
	R := new(edwards25519.Point).ScalarBaseMult(r).Bytes()
	kh := sha512.New()
	kh.Write(R)
	kh.Write(pub)
	kh.Write(scramble)
	k, err := edwards25519.NewScalar().SetUniformBytes(kh.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("ed25519 challenge: %w", err)
	}
	S := edwards25519.NewScalar().MultiplyAdd(k, s, r)
	return append(R, S.Bytes()...), nil
}

// rsaEncryptPassword encrypts (password ‖ NUL) XOR scramble (repeated) with
// RSA-OAEP/SHA-1, for caching_sha2_password's full path on plain TCP.
func rsaEncryptPassword(password string, scramble []byte, pub *rsa.PublicKey) ([]byte, error) {
	if len(scramble) == 0 {
		return nil, errors.New("empty scramble")
	}
	plain := append([]byte(password), 0)
	for i := range plain {
		plain[i] ^= scramble[i%len(scramble)]
	}
	out, err := rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, plain, nil)
	if err != nil {
		return nil, fmt.Errorf("encrypt password with the server's RSA key: %w", err)
	}
	return out, nil
}

// parsePublicKey reads the PEM key a server sends on request (PKIX, or
// PKCS #1 from some builds).
func parsePublicKey(pemBytes []byte) (*rsa.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("server public key is not PEM")
	}
	if k, err := x509.ParsePKIXPublicKey(block.Bytes); err == nil {
		if rk, ok := k.(*rsa.PublicKey); ok {
			return rk, nil
		}
		return nil, fmt.Errorf("server public key is %T, not RSA", k)
	}
	k, err := x509.ParsePKCS1PublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse server public key: %w", err)
	}
	return k, nil
}

// pluginScramble cuts the challenge a plugin uses from auth data that may
// carry a trailing NUL.
func pluginScramble(plugin string, data []byte) ([]byte, error) {
	want := scrambleLen
	if plugin == pluginEd25519 {
		want = ed25519ScrambleLen
	}
	if plugin == pluginClearText {
		return nil, nil
	}
	if len(data) < want {
		return nil, fmt.Errorf("%s challenge of %d bytes, need %d", plugin, len(data), want)
	}
	return data[:want], nil
}
