package wire

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Config says where and how to connect.
type Config struct {
	Addr     string // host:port, or the path of a Unix socket
	User     string
	Password string
	DB       string // optional default database
	// TLS, when set, upgrades the connection before any credential is sent
	// and fails with ErrNoTLS if the server cannot. An empty ServerName is
	// filled from Addr.
	TLS *tls.Config
	// TLSOptional continues in plaintext when the server's handshake does
	// not offer TLS (ssl-mode preferred) instead of failing.
	TLSOptional bool
	// ServerPublicKey pins the RSA key for caching_sha2_password's full
	// authentication over plain TCP; without it the key is requested from
	// the server (trust on first use).
	ServerPublicKey *rsa.PublicKey
	// MaxPacket bounds one reassembled packet (DefaultMaxPacket when 0).
	MaxPacket int
	// Statements asks for what a statement connection needs (command.go):
	// multi-statements, matched rows as affected rows, LOCAL INFILE.
	Statements bool
}

// Conn is one client connection.
type Conn struct {
	nc     net.Conn
	r      *PacketReader
	w      packetWriter
	hs     *handshake
	caps   uint32
	plugin string // the authentication plugin that succeeded
	isTLS  bool
	// broken is set once, by the first I/O error or Close: the protocol
	// state is unknown from then on. Atomic, not under a mutex: every
	// packet read checks it (a mutex's lock and unlock per packet were 3%
	// of binlane's CPU on the shop benchmark, 2026-11-30).
	broken    atomic.Pointer[error]
	closeOnce sync.Once
	// pending holds, for each command sent and not answered, the sequence
	// id its answer starts with (command.go).
	pendingMu sync.Mutex
	pending   []uint8
}

// Dial connects, negotiates TLS when configured, and authenticates.
func Dial(ctx context.Context, cfg Config) (*Conn, error) {
	if cfg.Addr == "" {
		return nil, errors.New("wire: no server address")
	}
	d := net.Dialer{KeepAlive: 30 * time.Second}
	network := "tcp"
	if strings.HasPrefix(cfg.Addr, "/") {
		network = "unix" // a local server's socket (dsn.DSN.Addr)
	}
	nc, err := d.DialContext(ctx, network, cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", cfg.Addr, err)
	}
	c := &Conn{nc: nc}
	c.setTransport(nc, cfg.MaxPacket)
	err = c.withContext(ctx, func() error { return c.handshake(ctx, cfg) })
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect to %s as %q: %w", cfg.Addr, cfg.User, err)
	}
	return c, nil
}

func (c *Conn) setTransport(nc net.Conn, maxPacket int) {
	var seq uint8
	if c.r != nil {
		seq = c.r.Seq()
	}
	c.nc = nc
	c.r = NewPacketReader(nc, maxPacket)
	c.r.SetSeq(seq)
	c.w.w = nc
}

// handshake reads the server greeting, upgrades to TLS and authenticates.
func (c *Conn) handshake(ctx context.Context, cfg Config) error {
	pkt, err := c.readPacket()
	if err != nil {
		return fmt.Errorf("read server handshake: %w", err)
	}
	hs, err := parseHandshake(pkt)
	if err != nil {
		return err
	}
	c.hs = hs
	useTLS := cfg.TLS != nil && hs.caps&capSSL != 0
	if cfg.TLS != nil && !useTLS && !cfg.TLSOptional {
		return fmt.Errorf("%w (server %s)", ErrNoTLS, hs.version)
	}
	c.caps = clientCaps(hs.caps, useTLS, cfg.DB, cfg.Statements)
	if useTLS {
		if err := c.startTLS(ctx, cfg); err != nil {
			return err
		}
	}
	return c.authenticate(cfg)
}

// startTLS sends SSLRequest and switches the socket to TLS.
func (c *Conn) startTLS(ctx context.Context, cfg Config) error {
	if err := c.writePacket(sslRequest(c.caps)); err != nil {
		return err
	}
	if c.r.Buffered() > 0 {
		return errors.New("server sent data before the TLS handshake")
	}
	tc := cfg.TLS.Clone()
	if tc.ServerName == "" && !tc.InsecureSkipVerify {
		host, _, err := net.SplitHostPort(cfg.Addr)
		if err != nil {
			host = cfg.Addr
		}
		tc.ServerName = host
	}
	tlsConn := tls.Client(c.nc, tc)
	if err := tlsConn.HandshakeContext(ctx); err != nil {
		return fmt.Errorf("TLS handshake: %w", err)
	}
	c.setTransport(tlsConn, cfg.MaxPacket)
	c.isTLS = true
	return nil
}

// ServerVersion returns the server's version string (MariaDB's "5.5.5-"
// compatibility prefix removed).
func (c *Conn) ServerVersion() string { return c.hs.version }

// IsMariaDB reports whether the server says it is MariaDB.
func (c *Conn) IsMariaDB() bool { return strings.Contains(c.hs.version, "MariaDB") }

// ConnectionID returns the server's id for this connection (as in KILL).
func (c *Conn) ConnectionID() uint32 { return c.hs.connID }

// AuthPlugin returns the authentication plugin that succeeded.
func (c *Conn) AuthPlugin() string { return c.plugin }

// TLS reports whether the connection is encrypted.
func (c *Conn) TLS() bool { return c.isTLS }

// SetReadDeadline bounds the next reads (ReadEvent); zero means none.
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// Close closes the connection; safe to call more than once and from any
// goroutine, which makes it the way to interrupt a blocked read.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		c.markBroken(net.ErrClosed)
		err = c.nc.Close()
	})
	return err
}

// readPacket reads one logical packet, marking the connection broken on
// failure.
func (c *Conn) readPacket() ([]byte, error) {
	if err := c.brokenErr(); err != nil {
		return nil, err
	}
	pkt, err := c.r.ReadPacket()
	if err != nil {
		c.markBroken(err)
		return nil, err
	}
	c.w.seq = c.r.Seq()
	return pkt, nil
}

// writePacket sends one logical packet with the next sequence id.
func (c *Conn) writePacket(payload []byte) error {
	if err := c.brokenErr(); err != nil {
		return err
	}
	c.w.seq = c.r.Seq()
	if err := c.w.writePacket(payload); err != nil {
		c.markBroken(err)
		return err
	}
	c.r.SetSeq(c.w.seq)
	return nil
}

// writeCommand starts a command: sequence ids restart at 0.
func (c *Conn) writeCommand(payload []byte) error {
	c.r.SetSeq(0)
	return c.writePacket(payload)
}

func (c *Conn) brokenErr() error {
	if p := c.broken.Load(); p != nil {
		return fmt.Errorf("connection unusable: %w", *p)
	}
	return nil
}

// markBroken records the first error that left the protocol state unknown.
func (c *Conn) markBroken(err error) { c.broken.CompareAndSwap(nil, &err) }

// withContext runs fn with ctx's deadline on the socket, and interrupts it
// when ctx is cancelled. An interrupted exchange leaves the protocol state
// unknown, so the connection is then unusable.
func (c *Conn) withContext(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// fn may replace c.nc (TLS upgrade); deadlines on the original socket
	// reach through any wrapper.
	nc := c.nc
	dl, hasDeadline := ctx.Deadline()
	if hasDeadline {
		nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	err := fn()
	if stop() {
		nc.SetDeadline(time.Time{})
	}
	if err == nil {
		return nil
	}
	ctxErr := ctx.Err()
	var ne net.Error
	if ctxErr == nil && hasDeadline && !time.Now().Before(dl) && errors.As(err, &ne) && ne.Timeout() {
		// The socket deadline is ctx's own; it can fire a moment before
		// ctx's timer marks the context done.
		ctxErr = context.DeadlineExceeded
	}
	if ctxErr != nil {
		c.markBroken(ctxErr)
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
	return err
}
