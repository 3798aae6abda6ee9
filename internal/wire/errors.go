package wire

import (
	"errors"
	"fmt"

	"github.com/binlane/binlane/internal/sqlerr"
)

// ErrNoTLS is returned by Dial when TLS is required (Config.TLS without
// TLSOptional) and the server's handshake does not offer it. Nothing,
// not even the user name, has been sent then.
var ErrNoTLS = errors.New("TLS requested but the server does not offer it")

// ServerError is an ERR packet from the server.
type ServerError struct {
	Code     uint16
	SQLState string // five characters; empty when the server sent none
	Message  string
}

func (e *ServerError) Error() string {
	if e.SQLState == "" {
		return fmt.Sprintf("server error %d: %s", e.Code, e.Message)
	}
	return fmt.Sprintf("server error %d (%s): %s", e.Code, e.SQLState, e.Message)
}

// ServerCode makes the error's code readable by package sqlerr, binlane's
// one vocabulary of server error codes.
func (e *ServerError) ServerCode() uint16 { return e.Code }

// ServerMessage is the server's own words (sqlerr.Message).
func (e *ServerError) ServerMessage() string { return e.Message }

// Server error codes callers test for (names from sqlerr).
const (
	ErrCodeAccessDenied     = sqlerr.AccessDeniedError
	ErrCodeDBAccessDenied   = sqlerr.DBAccessDenied
	ErrCodeSpecificAccess   = sqlerr.SpecificAccessDenied
	ErrCodeUnknownSystemVar = sqlerr.UnknownSystemVar
	ErrCodeShutdown         = sqlerr.ServerShutdown
	ErrCodeQueryInterrupted = sqlerr.QueryInterrupted
	ErrCodeConnKilled       = sqlerr.ConnectionKilled
	ErrCodeMasterFatal      = sqlerr.MasterFatalReading
	ErrCodeNoSuchThread     = sqlerr.NoSuchThread
)

// IsServerError reports whether err wraps a ServerError with one of codes.
func IsServerError(err error, codes ...uint16) bool {
	var se *ServerError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.Code == c {
			return true
		}
	}
	return false
}

// parseError reads an ERR packet (first byte 0xFF).
func parseError(pkt []byte) error {
	c := &cursor{b: pkt}
	c.u8("err marker")
	e := &ServerError{Code: c.u16("error code")}
	// A '#' introduces the SQLSTATE (protocol 4.1); errors sent before
	// capabilities are agreed (too many connections, host blocked) lack it.
	if c.remaining() >= 6 && c.b[c.off] == '#' {
		c.take(1, "sqlstate marker")
		e.SQLState = string(c.take(5, "sqlstate"))
	}
	e.Message = string(c.rest())
	if c.err != nil {
		return fmt.Errorf("malformed error packet: %w", c.err)
	}
	return e
}

// okPacket is the body of an OK packet.
type okPacket struct {
	affectedRows uint64
	lastInsertID uint64
	status       uint16
	warnings     uint16
}

func parseOK(pkt []byte) (okPacket, error) {
	c := &cursor{b: pkt}
	c.u8("ok marker")
	var ok okPacket
	ok.affectedRows, _ = c.lenenc("affected rows")
	ok.lastInsertID, _ = c.lenenc("last insert id")
	ok.status = c.u16("status")
	ok.warnings = c.u16("warnings")
	if c.err != nil {
		return ok, fmt.Errorf("malformed OK packet: %w", c.err)
	}
	return ok, nil
}

// isEOF recognizes an EOF packet: 0xFE and shorter than 9 bytes (a longer
// one is a row or an auth switch).
func isEOF(pkt []byte) bool { return len(pkt) > 0 && pkt[0] == 0xfe && len(pkt) < 9 }

// eofStatus returns an EOF packet's status flags (0 for the short pre-4.1
// form).
func eofStatus(pkt []byte) uint16 {
	if len(pkt) >= 5 {
		return uint16(pkt[3]) | uint16(pkt[4])<<8
	}
	return 0
}

// unexpectedPacket describes a packet that does not fit the protocol state.
func unexpectedPacket(what string, pkt []byte) error {
	if len(pkt) > 0 && pkt[0] == 0xff {
		return parseError(pkt)
	}
	if len(pkt) == 0 {
		return fmt.Errorf("%s: unexpected empty packet", what)
	}
	return fmt.Errorf("%s: unexpected packet starting 0x%02x (%d bytes)", what, pkt[0], len(pkt))
}

// AuthError is a failed authentication: the server refused the credentials,
// or asked for something binlane will not do (an unsupported plugin, a
// cleartext password without TLS). Retrying cannot fix it.
type AuthError struct {
	Plugin string
	Err    error
}

func (e *AuthError) Error() string {
	if e.Plugin == "" {
		return "authentication failed: " + e.Err.Error()
	}
	return fmt.Sprintf("authentication with %s failed: %v", e.Plugin, e.Err)
}

func (e *AuthError) Unwrap() error { return e.Err }
