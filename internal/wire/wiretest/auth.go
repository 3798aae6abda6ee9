package wiretest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
)

const (
	capProtocol41 = 0x200
	capSSL        = 0x800
	capSecure     = 0x8000
	capPluginAuth = 0x80000
	capLenencAuth = 0x200000
	capDBConnect  = 0x8
	capLongPass   = 0x1
	capTrans      = 0x2000
	capMultiRes   = 0x20000
)

// handshake greets the client and authenticates it.
func (s *Server) handshake(p *peer) error {
	p.scramble = newScramble()
	caps := uint32(capProtocol41 | capSecure | capPluginAuth | capLenencAuth | capDBConnect | capLongPass | capTrans | capMultiRes)
	if s.cfg.TLS != nil {
		caps |= capSSL
	}
	b := append([]byte{10}, s.cfg.Version...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, p.id)
	b = append(append(b, p.scramble[:8]...), 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45, 2, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 10)...)
	b = append(append(b, p.scramble[8:]...), 0)
	b = append(append(b, s.cfg.GreetingPlugin...), 0)
	if err := p.write(b); err != nil {
		return err
	}
	resp, err := p.read()
	if err != nil {
		return err
	}
	if len(resp) < 32 {
		return errors.New("short handshake response")
	}
	clientCaps := binary.LittleEndian.Uint32(resp)
	if clientCaps&0x20 != 0 {
		p.err(1045, "28000", "client asked for compression")
		return errors.New("compression requested")
	}
	if clientCaps&capSSL != 0 {
		if s.cfg.TLS == nil || len(resp) != 32 {
			return errors.New("unexpected SSL request")
		}
		tc := tls.Server(p.c, s.cfg.TLS)
		if err := tc.Handshake(); err != nil {
			return err
		}
		p.c, p.tls = tc, true
		if resp, err = p.read(); err != nil {
			return err
		}
	}
	return s.authenticate(p, resp)
}

// authenticate checks the HandshakeResponse41 and runs the plugin exchange.
func (s *Server) authenticate(p *peer, resp []byte) error {
	b := resp[32:]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return errors.New("no user name")
	}
	user := string(b[:i])
	b = b[i+1:]
	if len(b) == 0 {
		return errors.New("no auth response")
	}
	n := int(b[0]) // tokens here are < 251 bytes: one length byte
	if len(b) < 1+n {
		return errors.New("short auth response")
	}
	token := b[1 : 1+n]
	b = b[1+n:]
	plugin := ""
	if j := bytes.IndexByte(b, 0); j >= 0 {
		plugin = string(b[j+1:])
		plugin = string(bytes.TrimRight([]byte(plugin), "\x00"))
	}
	if user != s.cfg.User {
		return p.err(1045, "28000", fmt.Sprintf("Access denied for user '%s'@'localhost'", user))
	}
	if plugin != s.cfg.AccountPlugin {
		p.scramble = newScramble()
		sw := append([]byte{0xfe}, s.cfg.AccountPlugin...)
		sw = append(append(append(sw, 0), p.scramble...), 0)
		if err := p.write(sw); err != nil {
			return err
		}
		var err error
		if token, err = p.read(); err != nil {
			return err
		}
	}
	ok, err := s.verify(p, token)
	if err != nil {
		return err
	}
	if !ok {
		p.err(1045, "28000", fmt.Sprintf("Access denied for user '%s'@'localhost' (using password: YES)", user))
		return errors.New("access denied")
	}
	return p.ok()
}

func (s *Server) verify(p *peer, token []byte) (bool, error) {
	switch s.cfg.AccountPlugin {
	case "mysql_native_password":
		return checkNative(s.cfg.Password, p.scramble, token), nil
	case "caching_sha2_password":
		if !s.cfg.CacheMiss {
			if !checkSHA2(s.cfg.Password, p.scramble, token) {
				return false, nil
			}
			return true, p.write([]byte{0x01, 0x03})
		}
		return s.fullAuth(p)
	case "mysql_clear_password":
		return bytes.Equal(token, append([]byte(s.cfg.Password), 0)), nil
	}
	return false, fmt.Errorf("fake server: plugin %s", s.cfg.AccountPlugin)
}

// checkNative verifies a native token the way the server does, from the
// stored SHA1(SHA1(pw)) only.
func checkNative(pw string, scramble, token []byte) bool {
	if pw == "" {
		return len(token) == 0
	}
	h1 := sha1.Sum([]byte(pw))
	stored := sha1.Sum(h1[:])
	m := sha1.Sum(append(append([]byte(nil), scramble...), stored[:]...))
	if len(token) != 20 {
		return false
	}
	cand := make([]byte, 20)
	for i := range cand {
		cand[i] = token[i] ^ m[i]
	}
	got := sha1.Sum(cand)
	return got == stored
}

// checkSHA2 verifies a caching_sha2 fast-path token from the cached
// SHA256(SHA256(pw)).
func checkSHA2(pw string, scramble, token []byte) bool {
	if pw == "" {
		return len(token) == 0
	}
	p1 := sha256.Sum256([]byte(pw))
	stored := sha256.Sum256(p1[:])
	m := sha256.Sum256(append(append([]byte(nil), stored[:]...), scramble...))
	if len(token) != 32 {
		return false
	}
	cand := make([]byte, 32)
	for i := range cand {
		cand[i] = token[i] ^ m[i]
	}
	return sha256.Sum256(cand) == stored
}

// fullAuth asks for the password: in clear over TLS, RSA-encrypted
// otherwise (sending the public key when asked).
func (s *Server) fullAuth(p *peer) (bool, error) {
	if err := p.write([]byte{0x01, 0x04}); err != nil {
		return false, err
	}
	pkt, err := p.read()
	if err != nil {
		return false, err
	}
	if p.tls {
		return bytes.Equal(pkt, append([]byte(s.cfg.Password), 0)), nil
	}
	if s.cfg.RSAKey == nil {
		return false, errors.New("fake server: no RSA key")
	}
	if bytes.Equal(pkt, []byte{0x02}) {
		der, _ := x509.MarshalPKIXPublicKey(&s.cfg.RSAKey.PublicKey)
		pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		if err := p.write(append([]byte{0x01}, pemKey...)); err != nil {
			return false, err
		}
		if pkt, err = p.read(); err != nil {
			return false, err
		}
	}
	plain, err := rsa.DecryptOAEP(sha1.New(), rand.Reader, s.cfg.RSAKey, pkt, nil)
	if err != nil {
		return false, nil
	}
	for i := range plain {
		plain[i] ^= p.scramble[i%len(p.scramble)]
	}
	return bytes.Equal(plain, append([]byte(s.cfg.Password), 0)), nil
}
