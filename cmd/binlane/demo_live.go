package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/streamstatus"
	"github.com/binlane/binlane/internal/verify"
)

// live prints the stream's state every two seconds for the demo's live
// phase (at least until the copy is done), and keeps the last figures of
// the apply phase for the summary.
func (d *demo) live(ctx context.Context, began time.Time, repErr <-chan error) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var lastRows int64
	var lastTxns uint64
	for {
		select {
		case err := <-repErr:
			return fmt.Errorf("replicate stopped early: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		st := d.obs.Status()
		sum := streamstatus.SumCopy(st.Copy)
		rows, est := sum.Rows, sum.Estimate
		txns := st.Snapshot.Committed
		line := fmt.Sprintf("  %5.0fs %-10s", time.Since(began).Seconds(), st.State)
		if st.State == streamstatus.StateCopying {
			line += fmt.Sprintf(" copied %d / ~%d rows (%5.0f rows/s);", rows, est, float64(rows-lastRows)/2)
		}
		line += fmt.Sprintf(" %5.0f trx/s  lag %4.1fs  workers %s", float64(txns-min(txns, lastTxns))/2, st.Lag.Seconds(), shares(st.Snapshot))
		d.say("%s", line)
		lastRows, lastTxns = rows, txns
		if st.LastError != "" {
			d.say("  last error (the stream retries): %s", st.LastError)
		}
		if st.State != streamstatus.StateCopying && st.State != streamstatus.StateStarting && time.Since(began) >= d.f.live {
			d.final = st.Snapshot
			return nil
		}
	}
}

// shares formats each worker's busy and commit-wait shares since the
// current attempt started: "busy 60/55/58/61% commit-wait 20/22/19/25%".
func shares(s streamstatus.Snapshot) string {
	wall := s.At.Sub(s.Started).Seconds()
	if wall <= 0 || len(s.Workers) == 0 {
		return "-"
	}
	var busy, wait []string
	for _, w := range s.Workers {
		busy = append(busy, fmt.Sprintf("%.0f", 100*(w.Busy+w.Commit).Seconds()/wall))
		wait = append(wait, fmt.Sprintf("%.0f", 100*w.CommitWait.Seconds()/wall))
	}
	return "busy " + strings.Join(busy, "/") + "% commit-wait " + strings.Join(wait, "/") + "%"
}

// summary prints what the demo did.
func (d *demo) summary(began time.Time, rep *verify.Report) {
	ctx := context.Background()
	st, _, _ := position.Load(ctx, d.dstDB, "demo")
	tables, _ := position.LoadCopy(ctx, d.dstDB, "demo")
	var rows int64
	for _, t := range tables {
		rows += t.Rows
	}
	r := recommend(streamstatus.Since(d.final))
	elapsed := time.Since(began)
	verdict := "equal"
	if !rep.Equal() {
		verdict = "DIFFERENT (see above)"
	}
	d.say("\nsummary")
	d.say("  copied        %d rows in %d tables, online, while the load ran", rows, len(tables))
	d.say("  applied       %d source transactions in %s (%.0f trx/s on average, copy included)", st.Applied,
		elapsed.Round(time.Second), float64(st.Applied)/elapsed.Seconds())
	d.say("  workers       %s (apply phase)", shares(d.final))
	d.say("  recommended   %s: %s", analyze.Workers(r.Workers), r.Reason)
	d.say("  objects       %s", d.objects(ctx))
	d.say("  verify        %s (online, %d tables, %d objects)", verdict, len(rep.Tables), len(rep.Objects))
}

// objects says which of the source's objects the target has, and whether
// the sequence is where the source's is.
func (d *demo) objects(ctx context.Context) string {
	var parts []string
	for _, q := range []struct{ what, sql string }{
		{"sequence", "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_TYPE = 'SEQUENCE'"},
		{"view", "SELECT COUNT(*) FROM information_schema.VIEWS WHERE TABLE_SCHEMA = 'shop'"},
		{"function", "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'shop' AND ROUTINE_TYPE = 'FUNCTION'"},
		{"procedure", "SELECT COUNT(*) FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'shop' AND ROUTINE_TYPE = 'PROCEDURE'"},
		{"event", "SELECT COUNT(*) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = 'shop' AND STATUS = 'SLAVESIDE_DISABLED'"},
	} {
		var n int
		if err := d.dstDB.QueryRowContext(ctx, q.sql).Scan(&n); err != nil {
			return "cannot read the target's objects: " + err.Error()
		}
		parts = append(parts, fmt.Sprintf("%d %s", n, q.what))
	}
	var src, dst string
	state := "SELECT next_not_cached_value FROM shop.invoice_no"
	d.srcDB.QueryRowContext(ctx, state).Scan(&src)
	d.dstDB.QueryRowContext(ctx, state).Scan(&dst)
	seq := "the sequence's next value " + dst + " on both sides"
	if src != dst {
		seq = fmt.Sprintf("the sequence's next value DIFFERS: source %s, target %s", src, dst)
	}
	return fmt.Sprintf("%s copied (the event disabled until the cut-over); %d invoices numbered during the load, %s",
		strings.Join(parts, ", "), d.invoiced, seq)
}
