package txn

import (
	"context"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
)

// TestSkipGTID: the transaction named to skip reaches the applier empty
// when it is the first at the start position, also one binlane would
// refuse; any other first transaction stops the stream before anything is
// skipped; a start position past it ignores the option.
func TestSkipGTID(t *testing.T) {
	refused := "ALTER TABLE t ADD COLUMN u CHAR(36) DEFAULT (UUID())"
	txnEvs := func(seq uint64) []*binlog.Event {
		return []*binlog.Event{gtidEv(seq), queryEv("BEGIN"), xidEv()}
	}
	run := func(start string, skip gtid.GTID, evs []*binlog.Event) ([]Part, error) {
		t.Helper()
		from, err := gtid.ParseSet(start)
		if err != nil {
			t.Fatal(err)
		}
		pipe := NewPipe(1 << 20)
		err = NewAssembler(&script{evs: evs, err: context.Canceled}, Config{Start: from, Skip: skip}).Run(context.Background(), pipe)
		return drain(pipe), err
	}
	g := func(seq uint64) gtid.GTID { return gtid.GTID{Flavor: gtid.MariaDB, ServerID: 1, Seq: seq} }

	var evs []*binlog.Event
	evs = append(evs, sessionStmt(1, 7, refused)...)
	evs = append(evs, txnEvs(2)...)
	parts, err := run("", g(1), evs)
	if err != context.Canceled || len(parts) != 2 || parts[0].Txn.GTID != g(1) || len(parts[0].Body.Items) != 0 {
		t.Fatalf("skipping the first: %d parts, %v; want 0-1-1 empty, then 0-1-2", len(parts), err)
	}
	if _, err := run("", g(2), evs); err == nil || !strings.Contains(err.Error(), "--skip-gtid 0-1-2 is not the next transaction") {
		t.Fatalf("skipping the second: %v; want a refusal naming both", err)
	}
	if _, err := run("", gtid.GTID{}, evs); err == nil || !strings.Contains(err.Error(), "DEFAULT calls UUID()") {
		t.Fatalf("without --skip-gtid: %v; want the ALTER refused", err)
	}
	var later []*binlog.Event
	later = append(later, txnEvs(6)...)
	later = append(later, sessionStmt(7, 7, refused)...)
	if _, err := run("0-1-5", g(3), later); err == nil || !strings.Contains(err.Error(), "DEFAULT calls UUID()") {
		t.Fatalf("a skip the position passed: %v; want it ignored (the ALTER refused as usual)", err)
	}
}
