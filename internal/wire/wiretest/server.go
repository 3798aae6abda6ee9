// Package wiretest is an in-process fake MySQL server for tests: it speaks
// the v10 handshake, mysql_native_password and caching_sha2_password (fast
// path, full path over TLS, full path with RSA), COM_QUERY with canned text
// result sets, COM_REGISTER_SLAVE and the binlog dump commands, all built
// from the documented wire format independently of package wire.
//
// It exists because no MySQL server can be installed on the machines
// binlane is tested on: the MySQL code paths are checked against it, and
// are unverified against a real MySQL server until someone does that.
// It must never be used outside tests.
package wiretest

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
)

// Config describes the fake server and the one account it knows.
type Config struct {
	Version string // e.g. "8.0.36"; default "8.0.36"
	// GreetingPlugin is named in the handshake (default
	// caching_sha2_password, as on MySQL 8).
	GreetingPlugin string
	User, Password string
	// AccountPlugin is the account's plugin (default caching_sha2_password);
	// a client answering with another one gets an auth switch.
	AccountPlugin string
	// CacheMiss forces caching_sha2_password's full authentication, as after
	// a server restart or FLUSH PRIVILEGES.
	CacheMiss bool
	RSAKey    *rsa.PrivateKey // required for the RSA path
	TLS       *tls.Config     // offer TLS when set
	// Query answers COM_QUERY; nil answers OK to everything.
	Query func(q string) (*Result, error)
	// Dump serves a binlog dump after the request has been recorded.
	Dump func(d *Dump, s *Stream) error
}

// Result is a text result set; nil values are NULL.
type Result struct {
	Columns []string
	Rows    [][]*string
}

// SQLError makes the server answer with an ERR packet.
type SQLError struct {
	Code    uint16
	State   string
	Message string
}

func (e *SQLError) Error() string { return fmt.Sprintf("%d (%s): %s", e.Code, e.State, e.Message) }

// Dump is a recorded COM_BINLOG_DUMP or COM_BINLOG_DUMP_GTID.
type Dump struct {
	Command  byte // 0x12 or 0x1e
	Flags    uint16
	ServerID uint32
	File     string
	Pos      uint64
	GTIDData []byte // COM_BINLOG_DUMP_GTID only
	Queries  []string
}

// Server is a running fake server.
type Server struct {
	cfg  Config
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	log  []string // every query and command, in order
	dump []*Dump
	conn []net.Conn
}

// Start listens on a free loopback port; the server stops with the test.
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	if cfg.Version == "" {
		cfg.Version = "8.0.36"
	}
	if cfg.GreetingPlugin == "" {
		cfg.GreetingPlugin = "caching_sha2_password"
	}
	if cfg.AccountPlugin == "" {
		cfg.AccountPlugin = "caching_sha2_password"
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, ln: ln}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.Close)
	return s
}

// Addr is host:port.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening, drops every connection and waits for them.
func (s *Server) Close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conn {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// DropConnections closes every open connection (a network failure).
func (s *Server) DropConnections() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conn {
		c.Close()
	}
	s.conn = nil
}

// Queries returns every query received so far.
func (s *Server) Queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

// Dumps returns the dump requests received so far.
func (s *Server) Dumps() []*Dump {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Dump(nil), s.dump...)
}

func (s *Server) accept() {
	defer s.wg.Done()
	for id := uint32(1); ; id++ {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conn = append(s.conn, c)
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.serve(&peer{c: c, id: id})
		}()
	}
}

// peer is one client connection with its packet sequence.
type peer struct {
	c        net.Conn
	id       uint32
	seq      byte
	scramble []byte
	tls      bool
}

func (p *peer) read() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(p.c, hdr[:]); err != nil {
		return nil, err
	}
	n := int(hdr[0]) | int(hdr[1])<<8 | int(hdr[2])<<16
	if hdr[3] != p.seq {
		return nil, fmt.Errorf("client sent sequence %d, want %d", hdr[3], p.seq)
	}
	p.seq++
	b := make([]byte, n)
	_, err := io.ReadFull(p.c, b)
	return b, err
}

// write sends one logical packet, split at 0xFFFFFF bytes.
func (p *peer) write(b []byte) error {
	for {
		n := min(len(b), 0xffffff)
		var buf bytes.Buffer
		buf.Write([]byte{byte(n), byte(n >> 8), byte(n >> 16), p.seq})
		buf.Write(b[:n])
		if _, err := p.c.Write(buf.Bytes()); err != nil {
			return err
		}
		p.seq++
		b = b[n:]
		if n < 0xffffff {
			return nil
		}
	}
}

func (p *peer) ok() error { return p.write([]byte{0, 0, 0, 2, 0, 0, 0}) }

func (p *peer) err(code uint16, state, msg string) error {
	b := binary.LittleEndian.AppendUint16([]byte{0xff}, code)
	b = append(append(append(b, '#'), state...), msg...)
	return p.write(b)
}

func (s *Server) record(q string) {
	s.mu.Lock()
	s.log = append(s.log, q)
	s.mu.Unlock()
}

func (s *Server) serve(p *peer) {
	if err := s.handshake(p); err != nil {
		return
	}
	for {
		p.seq = 0
		pkt, err := p.read()
		if err != nil || len(pkt) == 0 {
			return
		}
		if err := s.command(p, pkt); err != nil {
			return
		}
	}
}

func (s *Server) command(p *peer, pkt []byte) error {
	switch pkt[0] {
	case 0x03:
		q := string(pkt[1:])
		s.record(q)
		return s.query(p, q)
	case 0x15:
		s.record("COM_REGISTER_SLAVE")
		return p.ok()
	case 0x12, 0x1e:
		d, err := parseDump(pkt)
		if err != nil {
			return p.err(1064, "42000", err.Error())
		}
		s.mu.Lock()
		d.Queries = append([]string(nil), s.log...)
		s.dump = append(s.dump, d)
		s.mu.Unlock()
		if s.cfg.Dump == nil {
			return p.write([]byte{0xfe, 0, 0, 0, 0})
		}
		return s.cfg.Dump(d, &Stream{p: p})
	case 0x01:
		return errors.New("quit")
	}
	return p.err(1047, "08S01", "Unknown command")
}

func parseDump(pkt []byte) (*Dump, error) {
	d := &Dump{Command: pkt[0]}
	b := pkt[1:]
	if d.Command == 0x12 {
		if len(b) < 10 {
			return nil, errors.New("short COM_BINLOG_DUMP")
		}
		d.Pos = uint64(binary.LittleEndian.Uint32(b))
		d.Flags = binary.LittleEndian.Uint16(b[4:])
		d.ServerID = binary.LittleEndian.Uint32(b[6:])
		d.File = string(b[10:])
		return d, nil
	}
	if len(b) < 10 {
		return nil, errors.New("short COM_BINLOG_DUMP_GTID")
	}
	d.Flags = binary.LittleEndian.Uint16(b)
	d.ServerID = binary.LittleEndian.Uint32(b[2:])
	n := int(binary.LittleEndian.Uint32(b[6:]))
	b = b[10:]
	if len(b) < n+12 {
		return nil, errors.New("short COM_BINLOG_DUMP_GTID file name")
	}
	d.File = string(b[:n])
	d.Pos = binary.LittleEndian.Uint64(b[n:])
	size := int(binary.LittleEndian.Uint32(b[n+8:]))
	b = b[n+12:]
	if len(b) != size {
		return nil, fmt.Errorf("GTID data of %d bytes, header says %d", len(b), size)
	}
	d.GTIDData = b
	return d, nil
}

// query answers one COM_QUERY.
func (s *Server) query(p *peer, q string) error {
	if s.cfg.Query == nil {
		return p.ok()
	}
	res, err := s.cfg.Query(q)
	var se *SQLError
	if errors.As(err, &se) {
		return p.err(se.Code, se.State, se.Message)
	}
	if err != nil {
		return p.err(1105, "HY000", err.Error())
	}
	if res == nil {
		return p.ok()
	}
	return p.resultSet(res)
}

func (p *peer) resultSet(r *Result) error {
	if err := p.write(lenenc(nil, uint64(len(r.Columns)))); err != nil {
		return err
	}
	for _, c := range r.Columns {
		var b []byte
		for _, f := range []string{"def", "", "", "", c, c} {
			b = lenenc(b, uint64(len(f)))
			b = append(b, f...)
		}
		b = append(b, 0x0c, 45, 0, 0, 1, 0, 0, 253, 0, 0, 0, 0, 0)
		if err := p.write(b); err != nil {
			return err
		}
	}
	eof := []byte{0xfe, 0, 0, 2, 0}
	if err := p.write(eof); err != nil {
		return err
	}
	for _, row := range r.Rows {
		var b []byte
		for _, v := range row {
			if v == nil {
				b = append(b, 0xfb)
				continue
			}
			b = lenenc(b, uint64(len(*v)))
			b = append(b, *v...)
		}
		if err := p.write(b); err != nil {
			return err
		}
	}
	return p.write(eof)
}

func lenenc(b []byte, v uint64) []byte {
	switch {
	case v < 251:
		return append(b, byte(v))
	case v < 1<<16:
		return append(b, 0xfc, byte(v), byte(v>>8))
	case v < 1<<24:
		return append(b, 0xfd, byte(v), byte(v>>8), byte(v>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), v)
}

func newScramble() []byte {
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		// Real servers avoid NUL and '$' in scrambles.
		b[i] = b[i]&0x7f | 1
		if b[i] == '$' {
			b[i]++
		}
	}
	return b
}
