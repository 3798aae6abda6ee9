package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/verify"
)

// TestCutoverObjects: the copy brings the view, sequence, procedure and
// event along; the cut-over compares the schema objects at the switch
// point. A stored procedure that differs on the target makes it
// roll back, naming the procedure: the source writable again and the
// stream running. Once the target's procedure is the source's, the cut-over
// hands over: the trigger (deferred until then) is created on the target,
// and the event the target holds DISABLE ON SLAVE, as the copy creates it,
// is replaced by the source's, enabled; afterwards the two sides' objects
// are equal as a primary's must be, and their rows too.
func TestCutoverObjects(t *testing.T) {
	a, b := cutoverServers(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	aDB, bDB := a.OpenT(t, ""), b.OpenT(t, "")
	event := "CREATE EVENT wl.purge ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE %s " +
		"DO DELETE FROM wl.t WHERE v < 0"
	objects := []string{
		"CREATE VIEW wl.v AS SELECT id, v * 2 AS w FROM wl.t",
		"CREATE SEQUENCE wl.s START WITH 10",
	}
	a.ExecT(t, append([]string{"CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO wl.t SELECT seq, seq FROM wl.seq_1_to_50",
		"CREATE TRIGGER wl.t_bi BEFORE INSERT ON wl.t FOR EACH ROW SET NEW.v = COALESCE(NEW.v, 0)",
		"CREATE PROCEDURE wl.p() SELECT COUNT(*) FROM wl.t", strings.Replace(event, "%s", "ENABLE", 1)}, objects...)...)
	aApp := appAccount(t, a)
	srcURL, dstURL := binlaneURL(t, a, "wl"), binlaneTargetURL(t, b, "wl")
	aCut, err := a.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	bCut, err := b.GrantCutover(ctx, "wl")
	if err != nil {
		t.Fatal(err)
	}
	_, done, stop := startReplicate(t, ctx, "--source", srcURL, "--target", dstURL, "--stream", "obj", "--databases", "wl",
		"--heartbeat", "500ms")
	defer stop()
	waitStreamReady(t, bDB, "obj", done)
	// The copy made the view, the sequence, the procedure and the event
	// (disabled on the replica); a procedure made to differ on the target.
	var copied int
	if err := bDB.QueryRow(`SELECT (SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'wl') +
		(SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'wl' AND TABLE_TYPE = 'SEQUENCE') +
		(SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'wl') +
		(SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'wl' AND STATUS = 'SLAVESIDE_DISABLED')`).Scan(&copied); err != nil || copied != 4 {
		t.Fatalf("the copy made %d of the 4 objects (%v)", copied, err)
	}
	b.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE OR REPLACE PROCEDURE wl.p() SELECT COUNT(*) + 1 FROM wl.t")
	cut := []string{"--source", aCut, "--target", bCut, "--stream", "obj", "--databases", "wl", "--json", "--timeout", "30s"}

	out, code := runCutoverCmd(t, ctx, cut...)
	r := parseCutover(t, out)
	if code != exitFailed || !r.RolledBack || !strings.Contains(r.Error, "procedure wl.p (different)") {
		t.Fatalf("a procedure that differs: exit %d: %+v", code, r)
	}
	st, _, _ := position.Load(ctx, bDB, "obj")
	if readOnly(t, aDB) || st.State != position.StateRunning || st.PauseAt != "" {
		t.Fatalf("after the rollback: source read-only %v, stream %s (pause %q)", readOnly(t, aDB), st.State, st.PauseAt)
	}
	// The application writes again, and the stream carries it.
	if _, err := aApp.ExecContext(ctx, "INSERT INTO wl.t VALUES (51, NULL)"); err != nil {
		t.Fatalf("the source after the rollback: %v", err)
	}

	b.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE OR REPLACE PROCEDURE wl.p() SELECT COUNT(*) FROM wl.t")
	out, code = runCutoverCmd(t, ctx, cut...)
	r = parseCutover(t, out)
	if code != 0 || !r.Verified {
		t.Fatalf("cut-over with equal objects: exit %d: %+v", code, r)
	}
	if strings.Join(r.Created, ",") != "TRIGGER `wl`.`t_bi`" || strings.Join(r.Replaced, ",") != "EVENT `wl`.`purge`" {
		t.Errorf("created %q, replaced %q", r.Created, r.Replaced)
	}
	var status string
	if err := bDB.QueryRow("SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'wl' AND EVENT_NAME = 'purge'").
		Scan(&status); err != nil || status != "ENABLED" {
		t.Errorf("the target's event after the hand-over: %q, %v", status, err)
	}
	waitFor(t, 30*time.Second, "the stream to end", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	// The target took over: its objects are the source's exactly, and its
	// rows too.
	rules, _ := filter.New([]string{"wl"}, nil, nil)
	rep, err := verify.Run(ctx, verify.Config{Source: aDB, Target: bDB, Rules: rules, HandedOver: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal() || len(rep.Objects) != 6 {
		t.Fatalf("after the hand-over:\n%s", rep)
	}
}
