package replica

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/wire"
)

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("replica: stream closed")

// ErrPositionUnavailable is matched (errors.Is) by a PositionError.
var ErrPositionUnavailable = errors.New("start position not available on the source")

// PositionError is the source's error 1236 for the position a stream asked
// for: the binlogs holding it were purged, it lies ahead of or diverges from
// the source's history, or an event there exceeds max_allowed_packet.
type PositionError struct {
	Requested Position
	Err       *wire.ServerError
}

func (e *PositionError) Error() string {
	hint := "the binlog files holding it were purged, or the position is not in the source's history " +
		"(diverged, or ahead of it); a replica that lost its position must be copied again"
	if strings.Contains(e.Err.Message, "max_allowed_packet") {
		hint = "an event there is larger than the source's max_allowed_packet: raise it on the source"
	}
	return fmt.Sprintf("source cannot stream from %s: error %d: %s (%s)", e.Requested, e.Err.Code, e.Err.Message, hint)
}

func (e *PositionError) Unwrap() []error { return []error{ErrPositionUnavailable, e.Err} }

// PreflightError lists what the source must change before binlane can
// replicate from it.
type PreflightError struct {
	Problems []string
}

func (e *PreflightError) Error() string {
	return "source does not meet binlane's requirements:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// retryable reports whether a fresh connection may get past err. Anything
// the source or our decoder said definitively is final; network-level
// failures (resets, timeouts, EOF, refused connections while the source
// restarts) are not.
func retryable(err error) bool {
	var (
		se  *wire.ServerError
		ae  *wire.AuthError
		pe  *PositionError
		pfe *PreflightError
		de  *binlog.DecodeError
		ce  *ConfigError
		cve *tls.CertificateVerificationError
		uae x509.UnknownAuthorityError
		hne x509.HostnameError
		oe  *net.OpError
	)
	switch {
	case errors.As(err, &ae), errors.As(err, &pe), errors.As(err, &pfe), errors.As(err, &de), errors.As(err, &ce),
		errors.As(err, &cve), errors.As(err, &uae), errors.As(err, &hne), errors.Is(err, wire.ErrNoTLS), errors.Is(err, ErrClosed):
		return false
	case errors.As(err, &oe) && oe.Op == "remote error":
		// A TLS alert from the source (crypto/tls reports it as a
		// *net.OpError): it refused our handshake, no network failure.
		return false
	case errors.As(err, &se):
		// A lost connection, or the dump thread killed or losing a lock
		// race. On a dump connection only MySQL's meaning of the flavored
		// codes can occur (MariaDB's 4031 is about triggers).
		return sqlerr.ConnectionLost(se, sqlerr.MySQL) || sqlerr.Transient(se)
	}
	return true
}

// refuseTagged stops a stream at a transaction with a tagged GTID (MySQL
// 8.3+): positions are untagged GTID sets (gtid.ErrTagged), so the stream
// could neither resume after it nor tell a replica where it is. Reading a
// tagged binlog file (binlog dump --file) is fine.
func refuseTagged(ev *binlog.Event) error {
	g, ok := ev.Data.(*binlog.MySQLGTIDEvent)
	if !ok || g.GTID.Tag == "" {
		return nil
	}
	return &binlog.DecodeError{File: ev.File, Pos: ev.Pos, Type: ev.Header.Type,
		Err: fmt.Errorf("%w: transaction %s; binlane cannot replicate from a source that tags transactions", gtid.ErrTagged, g.GTID)}
}
