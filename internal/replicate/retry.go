package replicate

import (
	"errors"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// retryable reports errors a restart from the saved position can get past:
// the target's connection was lost or refused (it restarts, or the network
// hiccupped), the source broke off in the middle of a transaction sent in
// parts, a target table changed under the stream, the stream lock's
// connection broke, or a commit's outcome is unknown (the saved position,
// written in the same transaction, tells). The source side also retries
// by itself inside the replica stream. A stream another process took
// over, and a TLS failure (which can wrap a network error), are never
// retried.
func retryable(err error, f sqlerr.Flavor) bool {
	var busy *position.BusyError
	var te *dsn.TLSError
	switch {
	case errors.Is(err, position.ErrNotOwner), errors.As(err, &busy), errors.As(err, &te):
		return false
	case errors.Is(err, txn.ErrStreamBroken), errors.Is(err, apply.ErrSchemaChanged), errors.Is(err, apply.ErrCommitUnknown), errors.Is(err, errLockLost),
		errors.Is(err, replica.ErrUnstablePosition):
		return true
	}
	return sqlerr.ConnectionLost(err, f)
}
