package wire

import (
	"errors"
	"fmt"
)

// maxAuthRounds bounds the exchange: a server that keeps switching plugins
// is broken or hostile.
const maxAuthRounds = 8

// authenticate sends the handshake response and runs the exchange until OK.
func (c *Conn) authenticate(cfg Config) error {
	plugin := c.hs.plugin
	// Answer the greeting with a plugin that works on its 20-byte scramble;
	// for anything else send a native token and let the server switch us.
	if plugin != pluginNative && plugin != pluginCachingSHA2 {
		plugin = pluginNative
	}
	scramble := c.hs.scramble
	if len(scramble) < scrambleLen {
		return fmt.Errorf("server scramble of %d bytes, need %d", len(scramble), scrambleLen)
	}
	scramble = scramble[:scrambleLen]
	token, err := c.authToken(plugin, scramble, cfg.Password)
	if err != nil {
		return err
	}
	resp, err := handshakeResponse(c.caps, cfg.User, token, cfg.DB, plugin)
	if err != nil {
		return err
	}
	if err := c.writePacket(resp); err != nil {
		return err
	}
	return c.authExchange(cfg, plugin, scramble)
}

// authExchange reads the server's answers: OK ends it, ERR fails it, 0xFE
// switches plugin, 0x01 carries plugin-specific data.
func (c *Conn) authExchange(cfg Config, plugin string, scramble []byte) error {
	for round := 0; round < maxAuthRounds; round++ {
		pkt, err := c.readPacket()
		if err != nil {
			return fmt.Errorf("authentication: %w", err)
		}
		if len(pkt) == 0 {
			return errors.New("authentication: empty packet from server")
		}
		switch pkt[0] {
		case 0x00:
			c.plugin = plugin
			return nil
		case 0xff:
			return &AuthError{Plugin: plugin, Err: parseError(pkt)}
		case 0xfe:
			plugin, scramble, err = c.authSwitch(cfg, pkt)
		case 0x01:
			err = c.authMoreData(cfg, plugin, scramble, pkt[1:])
		default:
			err = unexpectedPacket("authentication", pkt)
		}
		if err != nil {
			return err
		}
	}
	return &AuthError{Plugin: plugin, Err: errors.New("too many rounds")}
}

// authSwitch answers an AuthSwitchRequest: plugin name NUL, then the new
// challenge (MariaDB appends a NUL to it).
func (c *Conn) authSwitch(cfg Config, pkt []byte) (string, []byte, error) {
	if len(pkt) == 1 {
		return "", nil, &AuthError{Err: errors.New("server asks for the pre-4.1 password hash, which binlane refuses")}
	}
	cur := &cursor{b: pkt[1:]}
	plugin := string(cur.cstring("plugin name"))
	scramble, err := pluginScramble(plugin, cur.rest())
	if err != nil {
		return "", nil, &AuthError{Plugin: plugin, Err: err}
	}
	token, err := c.authToken(plugin, scramble, cfg.Password)
	if err != nil {
		return "", nil, err
	}
	return plugin, scramble, c.writePacket(token)
}

// authToken computes the first answer of a plugin.
func (c *Conn) authToken(plugin string, scramble []byte, password string) ([]byte, error) {
	switch plugin {
	case pluginNative:
		return nativeToken(password, scramble), nil
	case pluginCachingSHA2:
		return cachingSHA2Token(password, scramble), nil
	case pluginEd25519:
		return ed25519Token(password, scramble)
	case pluginClearText:
		if !c.isTLS {
			return nil, &AuthError{Plugin: plugin, Err: errors.New("server asks for the password in clear text, which binlane only sends over TLS: connect with TLS")}
		}
		return append([]byte(password), 0), nil
	}
	return nil, &AuthError{Plugin: plugin, Err: fmt.Errorf("plugin %q is not supported (binlane supports %s, %s, %s, and %s over TLS)",
		plugin, pluginNative, pluginCachingSHA2, pluginEd25519, pluginClearText)}
}

// authMoreData handles 0x01 packets. Only caching_sha2_password uses them:
// 0x03 = fast path done (OK follows), 0x04 = full authentication needed.
func (c *Conn) authMoreData(cfg Config, plugin string, scramble, data []byte) error {
	if plugin != pluginCachingSHA2 || len(data) == 0 {
		return &AuthError{Plugin: plugin, Err: errors.New("unexpected extra data packet")}
	}
	switch data[0] {
	case 0x03:
		return nil
	case 0x04:
		return c.cachingSHA2Full(cfg, scramble)
	}
	return &AuthError{Plugin: plugin, Err: fmt.Errorf("unexpected status 0x%02x", data[0])}
}

// cachingSHA2Full sends the password for the full path: in clear inside
// TLS, otherwise RSA-encrypted with the pinned or requested server key.
func (c *Conn) cachingSHA2Full(cfg Config, scramble []byte) error {
	if c.isTLS {
		return c.writePacket(append([]byte(cfg.Password), 0))
	}
	pub := cfg.ServerPublicKey
	if pub == nil {
		if err := c.writePacket([]byte{0x02}); err != nil {
			return err
		}
		pkt, err := c.readPacket()
		if err != nil {
			return fmt.Errorf("caching_sha2_password: read public key: %w", err)
		}
		if len(pkt) == 0 || pkt[0] != 0x01 {
			return fmt.Errorf("caching_sha2_password: public key request: %w", unexpectedPacket("public key", pkt))
		}
		if pub, err = parsePublicKey(pkt[1:]); err != nil {
			return &AuthError{Plugin: pluginCachingSHA2, Err: err}
		}
	}
	enc, err := rsaEncryptPassword(cfg.Password, scramble, pub)
	if err != nil {
		return fmt.Errorf("caching_sha2_password: %w", err)
	}
	return c.writePacket(enc)
}
