package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"
)

// scriptConn plays back a server's bytes and swallows what the client
// sends.
type scriptConn struct{ r *bytes.Reader }

func (c *scriptConn) Read(b []byte) (int, error)       { return c.r.Read(b) }
func (c *scriptConn) Write(b []byte) (int, error)      { return len(b), nil }
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// packets frames payloads with consecutive sequence ids from seq.
func packets(seq uint8, payloads ...[]byte) []byte {
	var buf bytes.Buffer
	w := packetWriter{w: &buf, seq: seq}
	for _, p := range payloads {
		w.writePacket(p)
	}
	return buf.Bytes()
}

func greeting(plugin string) []byte {
	b := append([]byte{10}, "5.5.5-10.11.6-MariaDB\x00"...)
	b = binary.LittleEndian.AppendUint32(b, 42)
	b = append(b, "abcdefgh\x00"...)
	caps := capProtocol41 | capSecureConnection | capPluginAuth | capPluginAuthLenenc | capLongPassword
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45, 2, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, 21)
	b = append(b, make([]byte, 10)...)
	b = append(b, "ijklmnopqrst\x00"...)
	return append(append(b, plugin...), 0)
}

// sessionSeed is a complete exchange: greeting, OK, a one-row result set,
// then two binlog packets and EOF.
func sessionSeed(authReplies ...[]byte) []byte {
	out := packets(0, greeting(pluginNative))
	out = append(out, packets(2, append(authReplies, []byte{0, 0, 0, 2, 0, 0, 0})...)...)
	col := []byte{3, 'd', 'e', 'f', 0, 0, 0, 1, 'a', 1, 'a', 0x0c, 45, 0, 1, 0, 0, 0, 253, 0, 0, 0, 0, 0}
	eof := []byte{0xfe, 0, 0, 2, 0}
	out = append(out, packets(1, []byte{1}, col, eof, []byte{1, 'x'}, eof)...)
	ev := make([]byte, 20)
	return append(out, packets(1, append([]byte{0}, ev...), []byte{0xff, 0xc4, 0x04, '#', 'H', 'Y', '0', '0', '0', 'n', 'o'}, eof)...)
}

// FuzzClientSession drives the client through handshake, authentication,
// a query and a binlog stream with arbitrary server bytes: it must fail
// cleanly, never panic.
func FuzzClientSession(f *testing.F) {
	f.Add(sessionSeed())
	f.Add(sessionSeed(append([]byte{0xfe}, "client_ed25519\x000123456789abcdef0123456789abcdef\x00"...)))
	f.Add(sessionSeed(append([]byte{0xfe}, "caching_sha2_password\x00abcdefghijklmnopqrst\x00"...), []byte{1, 3}))
	f.Add(sessionSeed(append([]byte{0xfe}, "caching_sha2_password\x00abcdefghijklmnopqrst\x00"...), []byte{1, 4}, []byte("\x01-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")))
	f.Add(packets(0, []byte{0xff, 0x10, 0x04, 'T', 'o', 'o', ' ', 'm', 'a', 'n', 'y'}))
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		c := &Conn{}
		c.setTransport(&scriptConn{r: bytes.NewReader(in)}, 1<<20)
		if err := c.handshake(ctx, Config{User: "u", Password: "p"}); err != nil {
			return
		}
		c.Query(ctx, "SELECT 1")
		if c.writeCommand([]byte{comBinlogDump}) != nil {
			return
		}
		for i := 0; i < 100; i++ {
			if _, err := c.ReadEvent(); err != nil {
				return
			}
		}
	})
}

func TestSessionSeedIsValid(t *testing.T) {
	c := &Conn{}
	c.setTransport(&scriptConn{r: bytes.NewReader(sessionSeed())}, 0)
	ctx := context.Background()
	if err := c.handshake(ctx, Config{User: "u", Password: "p"}); err != nil {
		t.Fatal(err)
	}
	if c.ServerVersion() != "10.11.6-MariaDB" || !c.IsMariaDB() || c.ConnectionID() != 42 {
		t.Fatalf("greeting parsed as %q id %d", c.ServerVersion(), c.ConnectionID())
	}
	res, err := c.Query(ctx, "SELECT 1")
	if err != nil || *res.Rows[0][0] != "x" {
		t.Fatalf("query: %v %v", res, err)
	}
	c.writeCommand([]byte{comBinlogDump})
	if ev, err := c.ReadEvent(); err != nil || len(ev) != 20 {
		t.Fatalf("event: %v", err)
	}
	if _, err := c.ReadEvent(); !IsServerError(err, 1220) {
		t.Fatalf("error packet: %v", err)
	}
}
