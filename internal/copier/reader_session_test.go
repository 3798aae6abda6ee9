package copier

import (
	"context"
	"testing"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestReaderCloseLeavesPoolClean: a copy reader's connection is in the
// copy-read session (time_zone +00:00, binary results); once the reader
// closes, the pool it came from, which also reads the tables' definitions
// (TIMESTAMP defaults shown in the session's time zone), must not hand
// that connection out again.
func TestReaderCloseLeavesPoolClean(t *testing.T) {
	ctx := context.Background()
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	db := src.OpenBinlaneT(t)
	db.SetMaxOpenConns(1)
	var want string
	if err := db.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&want); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := dsn.CopyReadSession().Set(ctx, conn); err != nil {
		t.Fatal(err)
	}
	(&reader{conn: conn}).close()
	var got string
	if err := db.QueryRowContext(ctx, "SELECT @@session.time_zone").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("the pool's connection after a reader closed has time_zone %q, want the server's %q", got, want)
	}
}
