package replica

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/binlane/binlane/internal/wire"
)

// A source that does not offer the TLS a stream requires, or refuses its
// handshake with an alert, will not change its mind on a reconnect.
func TestTLSRefusalsAreFinal(t *testing.T) {
	for _, err := range []error{
		fmt.Errorf("connect to h:1 as \"repl\": %w", fmt.Errorf("%w (server 10.11.6-MariaDB)", wire.ErrNoTLS)),
		fmt.Errorf("TLS handshake: %w", &net.OpError{Op: "remote error", Err: errors.New("tls: certificate required")}),
	} {
		if retryable(err) {
			t.Errorf("retryable(%v) = true", err)
		}
	}
	if err := (&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}); !retryable(err) {
		t.Errorf("retryable(%v) = false", err)
	}
}
