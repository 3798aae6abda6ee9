package wire

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Capability flags (the subset binlane knows about).
const (
	capLongPassword     uint32 = 0x00000001 // CLIENT_MYSQL on MariaDB
	capLongFlag         uint32 = 0x00000004
	capConnectWithDB    uint32 = 0x00000008
	capCompress         uint32 = 0x00000020 // never requested
	capProtocol41       uint32 = 0x00000200
	capSSL              uint32 = 0x00000800
	capTransactions     uint32 = 0x00002000
	capSecureConnection uint32 = 0x00008000
	capMultiResults     uint32 = 0x00020000
	capPluginAuth       uint32 = 0x00080000
	capPluginAuthLenenc uint32 = 0x00200000
)

// serverMoreResultsExists is the status flag announcing another result set.
const serverMoreResultsExists uint16 = 0x0008

// charsetUTF8MB4 is utf8mb4_general_ci, known to both server families.
const charsetUTF8MB4 = 45

// maxPacketAnnounced is the max_packet value of the handshake response.
const maxPacketAnnounced = 1 << 30

// handshake is the server's initial handshake packet (protocol v10).
type handshake struct {
	version  string // without MariaDB's "5.5.5-" prefix
	connID   uint32
	caps     uint32
	charset  byte
	status   uint16
	scramble []byte // 20 bytes for the classic plugins
	plugin   string
}

// parseHandshake reads a v10 handshake; an ERR packet instead (too many
// connections, host blocked) becomes a ServerError.
func parseHandshake(pkt []byte) (*handshake, error) {
	if len(pkt) > 0 && pkt[0] == 0xff {
		return nil, parseError(pkt)
	}
	c := &cursor{b: pkt}
	if v := c.u8("protocol version"); c.err == nil && v != 10 {
		return nil, fmt.Errorf("handshake protocol version %d is not supported (need 10)", v)
	}
	h := &handshake{}
	h.version = strings.TrimPrefix(string(c.cstring("server version")), "5.5.5-")
	h.connID = c.u32("connection id")
	part1 := c.take(8, "auth data part 1")
	c.take(1, "filler")
	h.caps = uint32(c.u16("capabilities"))
	if c.err != nil {
		return nil, fmt.Errorf("malformed handshake: %w", c.err)
	}
	if h.caps&capProtocol41 == 0 || h.caps&capSecureConnection == 0 {
		return nil, fmt.Errorf("server %q is too old: it lacks protocol 4.1 authentication", h.version)
	}
	h.charset = c.u8("charset")
	h.status = c.u16("status")
	h.caps |= uint32(c.u16("capabilities (high)")) << 16
	authLen := int(c.u8("auth data length"))
	c.take(10, "reserved")
	part2 := c.take(max(13, authLen-8), "auth data part 2")
	if h.caps&capPluginAuth != 0 {
		h.plugin = string(c.cstring("auth plugin name"))
	}
	if c.err != nil {
		return nil, fmt.Errorf("malformed handshake: %w", c.err)
	}
	// The second part ends with a NUL that is not part of the scramble.
	if n := len(part2); n > 0 && part2[n-1] == 0 {
		part2 = part2[:n-1]
	}
	h.scramble = append(append([]byte(nil), part1...), part2...)
	if h.plugin == "" {
		h.plugin = pluginNative
	}
	return h, nil
}

// clientCaps are the capabilities binlane asks for, intersected with the
// server's. Never CLIENT_COMPRESS; no DEPRECATE_EOF (classic EOF packets
// are simpler and every server supports them).
func clientCaps(server uint32, tls bool, db string, statements bool) uint32 {
	want := capLongPassword | capLongFlag | capProtocol41 | capTransactions | capSecureConnection |
		capPluginAuth | capPluginAuthLenenc | capMultiResults
	if statements {
		want |= capMultiStatements | capFoundRows | capLocalFiles
	}
	if tls {
		want |= capSSL
	}
	if db != "" {
		want |= capConnectWithDB
	}
	return want & server &^ capCompress
}

// sslRequest is the 32-byte prefix of the handshake response that asks for
// TLS before any credential is sent.
func sslRequest(caps uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, caps)
	b = binary.LittleEndian.AppendUint32(b, maxPacketAnnounced)
	b = append(b, charsetUTF8MB4)
	return append(b, make([]byte, 23)...)
}

// handshakeResponse builds HandshakeResponse41.
func handshakeResponse(caps uint32, user string, auth []byte, db, plugin string) ([]byte, error) {
	b := sslRequest(caps)
	b = append(append(b, user...), 0)
	switch {
	case caps&capPluginAuthLenenc != 0:
		b = appendLenenc(b, uint64(len(auth)))
	case len(auth) > 255:
		return nil, fmt.Errorf("authentication response of %d bytes does not fit", len(auth))
	default:
		b = append(b, byte(len(auth)))
	}
	b = append(b, auth...)
	if caps&capConnectWithDB != 0 {
		b = append(append(b, db...), 0)
	}
	if caps&capPluginAuth != 0 {
		b = append(append(b, plugin...), 0)
	}
	return b, nil
}
