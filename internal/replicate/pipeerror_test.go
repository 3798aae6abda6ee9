package replicate

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/binlane/binlane/internal/txn"
)

// TestPipeError: which of the copy's, the applier's and the stream's
// errors an attempt returns. A copy canceled because the applier stopped
// on a transaction must not hide the applier's error (it did: CI saw
// TestCopyStopsAtPartialMove end with the copy's "context canceled"
// instead of the refusal naming the table and the GTID).
func TestPipeError(t *testing.T) {
	refused := errors.New("transaction 0-1-5: a MINIMAL update moves a row into a copied range of `mv`.`t`")
	copyCanceled := fmt.Errorf("copy: start a snapshot to read `mv`.`t`: %w", context.Canceled)
	copyFailed := errors.New("copy: read `mv`.`t`: Error 1146")
	cases := []struct {
		name                 string
		stopped              bool
		cErr, applyErr, sErr error
		want                 error
	}{
		{"the applier's refusal, the copy canceled by it", false, copyCanceled, refused, nil, refused},
		{"the copy's own failure comes first", false, copyFailed, refused, nil, copyFailed},
		{"a canceled copy alone", false, copyCanceled, nil, nil, copyCanceled},
		{"the applier's error", false, nil, refused, context.Canceled, refused},
		{"a broken stream after a stop is no error", true, nil, txn.ErrStreamBroken, context.Canceled, nil},
		{"the stream's error", false, nil, nil, refused, refused},
		{"a stop", true, nil, nil, context.Canceled, nil},
		{"nothing", false, nil, nil, nil, nil},
	}
	for _, c := range cases {
		if got := pipeError(c.stopped, c.cErr, c.applyErr, c.sErr); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
