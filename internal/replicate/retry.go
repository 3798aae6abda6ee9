package replicate

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/dsn"
)

// retryable reports errors a restart from the saved position can get past:
// the target's connection was lost or refused (it restarts, or the network
// hiccupped), or it is shutting down. The source side retries by itself
// inside the replica stream.
func retryable(err error) bool {
	var te *dsn.TLSError
	if errors.As(err, &te) { // it can wrap a *net.OpError ("remote error: tls: ...")
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1053, 1927, 1040, 1203, 2006, 2013, 1152, 1158, 1159, 1160, 1161, 4031:
			return true
		}
		return false
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}
