package replicate

import (
	"fmt"
	"testing"

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
