package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/statuspage"
)

type statusFlags struct {
	target, passEnv, passFile string
	tls                       tlsFlags
	stream                    string
	json, raw                 bool
}

func newStatusCmd() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status --target DSN [--stream NAME]",
		Short: "Show a stream's saved position, state, last error, lag and worker load",
		Long: `Read the streams binlane keeps in the target (binlane.streams): the position
applied up to, the state and last error, and — for a running stream, reported
every few seconds — the lag and how busy each worker is. Busy close to 100%
on every worker means more workers may help; much time waiting for the
commit turn means they would not.

Exit status: 0 shown, 2 error (including an unknown --stream).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := resolveServer("target", f.target, f.passEnv, f.passFile, f.tls)
			if err != nil {
				return err
			}
			db, err := d.OpenDB("")
			if err != nil {
				return fmt.Errorf("--target: %w", err)
			}
			defer db.Close()
			streams, err := position.List(cmd.Context(), db)
			if err != nil {
				return serverError("target", d, err)
			}
			if f.stream != "" {
				streams = filterStreams(streams, f.stream)
				if len(streams) == 0 {
					return fmt.Errorf("target %s has no stream %q", d, f.stream)
				}
			}
			views := make([]streamView, len(streams))
			for i, s := range streams {
				deferred, err := position.ListDeferred(cmd.Context(), db, s.Name)
				if err != nil {
					return fmt.Errorf("target %s: %w", d, err)
				}
				copied, err := position.LoadCopy(cmd.Context(), db, s.Name)
				if err != nil {
					return fmt.Errorf("target %s: %w", d, err)
				}
				views[i] = newStreamView(s, deferred, copied, f.raw)
			}
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(views)
			}
			if len(streams) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no streams on this target")
			}
			for _, v := range views {
				printStream(cmd.OutOrStdout(), v, time.Now())
			}
			return nil
		},
	}
	withConfig(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "target server address")
	addPasswordFlags(fl, "target", &f.passEnv, &f.passFile)
	addTLSFlags(fl, "target-", "target", &f.tls)
	fl.StringVar(&f.stream, "stream", "", "show only this stream")
	fl.BoolVar(&f.json, "json", false, "print JSON")
	fl.BoolVar(&f.raw, "raw-statements", false, "show kept statements as the source wrote them, passwords included")
	return cmd
}

func filterStreams(all []position.State, name string) []position.State {
	for _, s := range all {
		if s.Name == name {
			return []position.State{s}
		}
	}
	return nil
}

// streamView is what status shows of a stream: its row, with every text
// that may hold a secret redacted, and the statements kept for cut-over.
type streamView struct {
	position.State
	Deferred []position.Deferred `json:"deferred,omitempty"`
	// Copy is the copy's progress per table (while and after it runs).
	Copy []position.CopyTable `json:"copy,omitempty"`
	// Recommendation is a worker count judged from the last report.
	Recommendation *analyze.Recommendation `json:"recommendation,omitempty"`
}

func newStreamView(s position.State, deferred []position.Deferred, copied []position.CopyTable, raw bool) streamView {
	s.Message = redact.Text(s.Message)
	for i := range deferred {
		if !raw {
			deferred[i].Statement = redact.Statement(deferred[i].Statement)
		}
	}
	v := streamView{State: s, Deferred: deferred, Copy: copied}
	var snap apply.Snapshot
	if s.Stats != "" && json.Unmarshal([]byte(s.Stats), &snap) == nil && len(snap.Workers) > 0 {
		r := recommend(statuspage.Since(snap))
		v.Recommendation = &r
	}
	return v
}

func printStream(w io.Writer, v streamView, now time.Time) {
	s := v.State
	fmt.Fprintf(w, "stream %s: %s (source %s, %s)\n", s.Name, s.State, s.SourceID, s.Flavor)
	fmt.Fprintf(w, "  position   %s\n", s.GTID)
	if s.File != "" {
		fmt.Fprintf(w, "  source at  %s:%d, last transaction %s\n", s.File, s.Pos, s.LastGTID)
	}
	fmt.Fprintf(w, "  applied    %d transactions", s.Applied)
	if !s.SourceTS.IsZero() {
		fmt.Fprintf(w, "; the last one committed on the source at %s", s.SourceTS.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if s.State == position.StateRunning && !s.ReportedAt.IsZero() {
		age := now.Sub(s.ReportedAt).Round(time.Second)
		fmt.Fprintf(w, "  lag        %s (reported %s ago)\n", time.Duration(s.LagMillis)*time.Millisecond, age)
		printWorkers(w, s.Stats)
	}
	if r := v.Recommendation; r != nil {
		fmt.Fprintf(w, "  workers    %s recommended: %s\n", analyze.Workers(r.Workers), r.Reason)
	}
	printCopy(w, v.Copy)
	if s.Owner.Token != "" && s.State == position.StateRunning {
		fmt.Fprintf(w, "  run by     %s\n", s.Owner)
	}
	if s.DDL.GTID != "" {
		what := "running (or interrupted: the next run checks whether it applied)"
		if s.DDL.State == position.DDLFailed {
			what = "failed: it was not applied and runs again at the next start"
		}
		fmt.Fprintf(w, "  statement  %s %s\n", s.DDL.GTID, what)
	}
	if s.Message != "" {
		fmt.Fprintf(w, "  last error %s\n", strings.ReplaceAll(s.Message, "\n", "\n             "))
	}
	if len(v.Deferred) > 0 {
		fmt.Fprintf(w, "  kept for cut-over (%d statements binlane did not run on the target; apply them when it stops being a replica):\n",
			len(v.Deferred))
		for _, d := range v.Deferred {
			fmt.Fprintf(w, "    %s %s: %s\n", d.GTID, d.Reason, abbreviate(d.Statement, 300))
		}
	}
}

// printCopy shows the copy's progress per table, as committed on the
// target with the rows.
func printCopy(w io.Writer, tables []position.CopyTable) {
	if len(tables) == 0 {
		return
	}
	var rows, est int64
	done := 0
	for _, t := range tables {
		rows, est = rows+t.Rows, est+t.Estimate
		if t.State == position.CopyDone {
			done++
		}
	}
	fmt.Fprintf(w, "  copy       %d of %d tables done, %d rows copied (about %d estimated)\n", done, len(tables), rows, est)
	if done == len(tables) {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, t := range tables {
		var notes []string
		if t.OnePass != "" {
			notes = append(notes, "one pass: "+t.OnePass)
		}
		if ixs, err := provision.Decode(t.Deferred); err == nil && len(ixs) > 0 {
			names := make([]string, len(ixs))
			for i, ix := range ixs {
				names[i] = ix.Name
			}
			notes = append(notes, "indexes built after the rows: "+strings.Join(names, ", "))
		}
		note := strings.Join(notes, "; ")
		fmt.Fprintf(tw, "    %s.%s\t%s\t%d / ~%d rows\t%s\n", t.Schema, t.Table, t.State, t.Rows, t.Estimate, note)
	}
	tw.Flush()
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// aloneReasons explains the codes of transactions that ran alone.
var aloneReasons = map[string]string{
	apply.AloneDDL:                  "statements (DDL)",
	apply.AloneTooLarge:             "transactions too large to hold in memory (sent in parts)",
	apply.AloneSavepoint:            "transactions rolled back to a savepoint over non-transactional changes",
	plan.SerializeTriggers:          "transactions on tables with (allowed) triggers on the target",
	plan.SerializeUniqueNotInSource: "transactions on tables with a target unique key over a column the source lacks",
}

// printWorkers shows each worker's share of time busy, waiting for its
// commit turn and committing, since the process started.
func printWorkers(w io.Writer, stats string) {
	var snap apply.Snapshot
	if stats == "" || json.Unmarshal([]byte(stats), &snap) != nil {
		return
	}
	wall := snap.At.Sub(snap.Started)
	if wall <= 0 {
		return
	}
	pct := func(d time.Duration) string { return fmt.Sprintf("%.0f%%", 100*d.Seconds()/wall.Seconds()) }
	fmt.Fprintf(w, "  queue      %d in flight, %d waiting; %d later transactions rolled back for an earlier one\n",
		snap.InFlight, snap.Pending, snap.LockWaitKills)
	// Right-aligned cells get their padding on the left: that indents the
	// first column like the other labels.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "worker\ttxns\tbatches\trows\tbusy\tcommit wait\tcommitting\tretries\t")
	for i, ws := range snap.Workers {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t\n", i, ws.Txns, ws.Batches, ws.Rows, pct(ws.Busy),
			pct(ws.CommitWait), pct(ws.Commit), ws.Retries)
	}
	tw.Flush()
	reasons := make([]string, 0, len(snap.Serialized))
	for r := range snap.Serialized {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	for _, r := range reasons {
		text, ok := aloneReasons[r]
		if !ok {
			text = r
		}
		fmt.Fprintf(w, "  ran alone  %d x %s\n", snap.Serialized[r], text)
	}
}
