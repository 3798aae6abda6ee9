package replicate

import (
	"errors"
	"fmt"
	"testing"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/sqlerr"
)

// TestRetryableUnstablePosition: a source that kept committing while its
// position was read (a copy's start under load) is tried again, not a
// stop: TestTwoSourcesOneTarget's second stream failed so in CI.
func TestRetryableUnstablePosition(t *testing.T) {
	err := fmt.Errorf("copy: read the source's current position: %w", fmt.Errorf("current position: %w", replica.ErrUnstablePosition))
	if !retryable(err, sqlerr.MariaDB) {
		t.Errorf("not retried: %v", err)
	}
}

// TestRetryableCommitUnknown: after a COMMIT whose outcome is unknown the
// batches waiting for their turn fail too, and the first to report stops
// the run. A restart from the saved position decides what committed, so
// that stop is retried, whatever the COMMIT's own error was
// (TestReplicateSurvivesRestarts stopped for good on such a report).
func TestRetryableCommitUnknown(t *testing.T) {
	err := fmt.Errorf("transaction 0-1-9: %w", fmt.Errorf("%w (%w)", apply.ErrCommitUnknown, errors.New("commit: something odd")))
	if !retryable(err, sqlerr.MariaDB) {
		t.Errorf("not retried: %v", err)
	}
}
