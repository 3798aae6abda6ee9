package binlogtest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

func TestUnanswered(t *testing.T) {
	src := `package p

func f(data any) {
	switch data.(type) {
	case *binlog.RotateEvent, *binlog.XIDEvent:
	case *other.SkippedEvent, binlog.QueryEvent:
	default:
	}
}

func g() {}
`
	file := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	missing, err := Unanswered(file, "f")
	if err != nil {
		t.Fatal(err)
	}
	if want := len(binlog.EventKinds()) - 2; len(missing) != want {
		t.Errorf("%d missing, want %d: %v", len(missing), want, missing)
	}
	for _, m := range missing {
		if m == "RotateEvent" || m == "XIDEvent" {
			t.Errorf("%s is answered", m)
		}
	}
	for _, fn := range []string{"g", "h"} {
		if _, err := Unanswered(file, fn); err == nil {
			t.Errorf("%s: no error", fn)
		}
	}
}
