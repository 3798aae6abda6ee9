package main

import (
	"cmp"
	"context"
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
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/streamstatus"
)

type statusFlags struct {
	target, passEnv, passFile string
	tls                       tlsFlags
	stream                    string
	json, raw                 bool
	check                     bool
	maxLag, warnLag           time.Duration
}

func newStatusCmd() *cobra.Command {
	var f statusFlags
	cmd := &cobra.Command{
		Use:   "status --target DSN [--stream NAME] [--json | --check [--max-lag D]]",
		Short: "Show a stream's saved position, state, last error, lag and worker load; check it for monitoring",
		Long: `Read the streams binlane keeps in the target (binlane.streams): the position
applied up to, the state and last error, and — for a running stream, reported
every few seconds — the lag, what holds it back, and how busy each applier
thread is. Busy plus commit close to 100% on every thread means more threads
may help (a batch at the head of the commit order sends its last statements
with its COMMIT, so commit holds them); much time waiting for the commit turn
means they would not. A stream whose
row says running but that no binlane process holds any more (killed) is
shown as such.

--json prints the status documents (one per stream) in the schema the
status page's /status serves (docs/status-json.md).

--check is a monitoring plugin (Nagios, Icinga, Sensu, Zabbix): one line
and the plugins' exit status, 0 OK, 1 WARNING (stopped, paused, restarting,
lag at --warn-lag, no report for a minute), 2 CRITICAL (error, no process
runs a running stream, lag at --max-lag), 3 UNKNOWN (the target cannot be
read, no such stream, or the lag is not known while a lag limit is set).
With several streams the worst one counts.

Exit status without --check: 0 shown, 2 error (including an unknown --stream).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.check {
				return runCheck(cmd, f)
			}
			docs, err := readStatus(cmd.Context(), f)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(docs)
			}
			if len(docs) == 0 {
				fmt.Fprintln(out, "no streams on this target")
			}
			for _, d := range docs {
				printStream(out, d, time.Now())
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "target server address")
	addPasswordFlags(fl, "target", &f.passEnv, &f.passFile)
	addTLSFlags(fl, "target-", "target", &f.tls)
	fl.StringVar(&f.stream, "stream", "", "show only this stream")
	fl.BoolVar(&f.json, "json", false, "print the status documents as JSON")
	fl.BoolVar(&f.raw, "raw-statements", false, "show kept statements as the source wrote them, passwords included")
	fl.BoolVar(&f.check, "check", false, "check the stream(s) for monitoring: one line, exit status 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN")
	fl.DurationVar(&f.maxLag, "max-lag", 0, "with --check: CRITICAL once a stream lags this much (0: no limit)")
	fl.DurationVar(&f.warnLag, "warn-lag", 0, "with --check: WARNING once a stream lags this much (0: no limit)")
	return withConfig(cmd)
}

// readStatus reads the status documents of the target's streams (of
// --stream only, when given), secrets redacted.
func readStatus(ctx context.Context, f statusFlags) ([]streamstatus.Stream, error) {
	d, err := resolveServer("target", f.target, f.passEnv, f.passFile, f.tls)
	if err != nil {
		return nil, err
	}
	db, err := d.OpenDB("")
	if err != nil {
		return nil, fmt.Errorf("--target: %w", err)
	}
	defer db.Close()
	streams, err := position.List(ctx, db)
	if err != nil {
		return nil, serverError("target", d, err)
	}
	if f.stream != "" {
		streams = filterStreams(streams, f.stream)
		if len(streams) == 0 {
			return nil, fmt.Errorf("target %s has no stream %q", d, f.stream)
		}
	}
	docs := make([]streamstatus.Stream, len(streams))
	for i, s := range streams {
		stored := streamstatus.Stored{Row: s}
		if stored.Deferred, err = position.ListDeferred(ctx, db, s.Name); err == nil {
			if stored.Copy, err = position.LoadCopy(ctx, db, s.Name); err == nil {
				stored.Alive, err = position.Running(ctx, db, s.Name)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", d, err)
		}
		docs[i] = newStreamDoc(stored, f.raw)
	}
	return docs, nil
}

func filterStreams(all []position.State, name string) []position.State {
	for _, s := range all {
		if s.Name == name {
			return []position.State{s}
		}
	}
	return nil
}

// newStreamDoc is a stream's status document with every text that may
// hold a secret redacted, and a thread count judged from its last report.
func newStreamDoc(s streamstatus.Stored, raw bool) streamstatus.Stream {
	s.Row.Message = redact.Text(s.Row.Message)
	for i := range s.Deferred {
		if !raw {
			s.Deferred[i].Statement = redact.Statement(s.Deferred[i].Statement)
		}
	}
	d := streamstatus.FromStored(s)
	var snap streamstatus.Snapshot
	if s.Row.Stats != "" && json.Unmarshal([]byte(s.Row.Stats), &snap) == nil && len(snap.Workers) > 0 {
		r := recommend(streamstatus.Since(snap))
		d.Recommendation = &streamstatus.Recommendation{Threads: r.Workers, Reason: r.Reason}
	}
	return d
}

// runCheck is status --check: one line a monitoring system shows, with
// the lag of each stream as performance data, and the plugins' exit
// status.
func runCheck(cmd *cobra.Command, f statusFlags) error {
	out := cmd.OutOrStdout()
	docs, err := readStatus(cmd.Context(), f)
	if err != nil {
		fmt.Fprintf(out, "BINLANE UNKNOWN - %s\n", redact.Text(err.Error()))
		return exitQuietly(streamstatus.Unknown)
	}
	if len(docs) == 0 {
		fmt.Fprintln(out, "BINLANE UNKNOWN - no streams on this target")
		return exitQuietly(streamstatus.Unknown)
	}
	limits := streamstatus.CheckLimits{MaxLag: f.maxLag, WarnLag: f.warnLag, Now: time.Now()}
	worst := streamstatus.OK
	var lines, perf []string
	for _, d := range docs {
		code, why := streamstatus.Check(d, limits)
		worst = streamstatus.Worst(worst, code)
		lines = append(lines, why)
		if d.LagSeconds != nil {
			perf = append(perf, fmt.Sprintf("'lag_%s'=%.3fs;%s;%s", d.Stream, *d.LagSeconds, perfLimit(f.warnLag), perfLimit(f.maxLag)))
		}
	}
	line := "BINLANE " + streamstatus.CodeName(worst) + " - " + strings.Join(lines, "; ")
	if len(perf) > 0 {
		line += " | " + strings.Join(perf, " ")
	}
	fmt.Fprintln(out, line)
	if worst == streamstatus.OK {
		return nil
	}
	return exitQuietly(worst)
}

func perfLimit(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	return fmt.Sprintf("%g", d.Seconds())
}

func printStream(w io.Writer, d streamstatus.Stream, now time.Time) {
	src := streamstatus.Source{}
	if d.Source != nil {
		src = *d.Source
	}
	fmt.Fprintf(w, "stream %s: %s (source %s, %s)\n", d.Stream, d.State, src.ID, src.Flavor)
	if streamstatus.Orphaned(d) {
		fmt.Fprintln(w, "  process    none: no binlane process holds the stream (it was killed, or lost the target); start it again")
	}
	fmt.Fprintf(w, "  position   %s\n", d.Position)
	if t := d.LastTransaction; t != nil {
		if t.BinlogFile != "" {
			fmt.Fprintf(w, "  source at  %s:%d, last transaction %s\n", t.BinlogFile, t.BinlogPos, t.GTID)
		}
	}
	if d.AppliedTransactions != nil {
		fmt.Fprintf(w, "  applied    %d transactions", *d.AppliedTransactions)
		if t := d.LastTransaction; t != nil && t.SourceCommit != nil {
			fmt.Fprintf(w, "; the last one committed on the source at %s", t.SourceCommit.Format(time.RFC3339))
		}
		fmt.Fprintln(w)
	}
	if d.LagSeconds != nil && d.ReportedAt != nil {
		lag := time.Duration(*d.LagSeconds * float64(time.Second)).Round(time.Millisecond)
		fmt.Fprintf(w, "  lag        %s (reported %s ago)\n", lag, now.Sub(*d.ReportedAt).Round(time.Second))
	}
	for _, dm := range d.Domains {
		fmt.Fprintf(w, "  domain %-3d %s", dm.Domain, dm.GTID)
		if dm.LagSeconds != nil {
			fmt.Fprintf(w, ", lag %s", time.Duration(*dm.LagSeconds*float64(time.Second)).Round(time.Millisecond))
		}
		fmt.Fprintln(w)
	}
	if d.Held != "" {
		fmt.Fprintf(w, "  held back  %s\n", d.Held)
	}
	if d.Alive && d.Run != nil {
		printWorkers(w, d.Run)
	}
	if r := d.Recommendation; r != nil {
		fmt.Fprintf(w, "  threads    %s recommended: %s\n", analyze.Workers(r.Threads), r.Reason)
	}
	if d.Pause != nil {
		fmt.Fprintf(w, "  pause      %s, asked by %s\n", cmp.Or(d.Pause.At, "where it stands"), d.Pause.By)
	}
	printCopy(w, d.Copy)
	if d.RunBy != "" && d.Alive {
		fmt.Fprintf(w, "  run by     %s\n", d.RunBy)
	}
	if st := d.Statement; st != nil {
		what := "running (or interrupted: the next run checks whether it applied)"
		if st.State == position.DDLFailed {
			what = "failed: it was not applied and runs again at the next start"
		}
		fmt.Fprintf(w, "  statement  %s %s\n", st.GTID, what)
	}
	switch {
	case d.State == streamstatus.StateCutOver:
		fmt.Fprintf(w, "  cut over   %s\n", strings.TrimPrefix(d.Note, "cut over "))
	case d.Note != "" && d.State != streamstatus.StatePaused: // a reverse stream a cut-over prepared
		fmt.Fprintf(w, "  note       %s\n", d.Note)
	case d.LastError != nil:
		fmt.Fprintf(w, "  last error %s\n", strings.ReplaceAll(d.LastError.Message, "\n", "\n             "))
	}
	if len(d.Deferred) > 0 {
		fmt.Fprintf(w, "  kept for cut-over (%d statements binlane did not run on the target; apply them when it stops being a replica):\n",
			len(d.Deferred))
		for _, df := range d.Deferred {
			fmt.Fprintf(w, "    %s %s: %s\n", df.GTID, df.Reason, abbreviate(df.Statement, 300))
		}
	}
}

// printCopy shows the copy's progress per table, as committed on the
// target with the rows.
func printCopy(w io.Writer, tables []streamstatus.CopyTable) {
	if len(tables) == 0 {
		return
	}
	var rows, est int64
	done := 0
	for _, t := range tables {
		rows, est = rows+t.Rows, est+t.Estimate
		if t.Done {
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
		if len(t.DeferredIndexes) > 0 {
			notes = append(notes, "indexes built after the rows: "+strings.Join(t.DeferredIndexes, ", "))
		}
		state := t.State
		if state == "" {
			state = position.CopyCopying
			if t.Done {
				state = position.CopyDone
			}
		}
		fmt.Fprintf(tw, "    %s\t%s\t%d / ~%d rows\t%s\n", t.Table, state, t.Rows, t.Estimate, strings.Join(notes, "; "))
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
	apply.AloneStatementDML:         "row changes logged as statements (MIXED/STATEMENT sessions), run one at a time",
	apply.AloneTooLarge:             "transactions too large to hold in memory (sent in parts)",
	apply.AloneSavepoint:            "transactions rolled back to a savepoint over non-transactional changes",
	plan.SerializeTriggers:          "transactions on tables with (allowed) triggers on the target",
	plan.SerializeUniqueNotInSource: "transactions on tables with a target unique key over a column the source lacks",
}

// windowOf describes the bound on the transactions in flight and the most
// there have been, when the applier reported them: a window that stays at
// one thread's size while the queue is full says the stream has little
// parallel work (README, "How many threads?").
func windowOf(r *streamstatus.Run) string {
	if r.Window <= 0 {
		return ""
	}
	return fmt.Sprintf(" (window %d, at most %d so far)", r.Window, r.PeakInFlight)
}

// printWorkers shows each thread's share of time busy, waiting for its
// commit turn and committing, since the process started.
func printWorkers(w io.Writer, r *streamstatus.Run) {
	if r.IntervalSeconds <= 0 {
		return
	}
	pct := func(share float64) string { return fmt.Sprintf("%.0f%%", 100*share) }
	fmt.Fprintf(w, "  queue      %d in flight%s, %d waiting; %d later transactions rolled back for an earlier one\n",
		r.InFlight, windowOf(r), r.Pending, r.LockWaitRollbacks)
	if r.RedoneOneByOne > 0 {
		fmt.Fprintf(w, "  redone     %d merged batches the target refused committed one statement at a time (see the log)\n", r.RedoneOneByOne)
	}
	// Right-aligned cells get their padding on the left: that indents the
	// first column like the other labels.
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "thread\ttxns\tbatches\trows\tbusy\tcommit wait\tcommitting\tretries\t")
	for _, ws := range r.Workers {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t\n", ws.Worker, ws.Transactions, ws.Batches, ws.Rows, pct(ws.Busy),
			pct(ws.CommitWait), pct(ws.Commit), ws.Retries)
	}
	tw.Flush()
	reasons := make([]string, 0, len(r.RanAlone))
	for reason := range r.RanAlone {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		text, ok := aloneReasons[reason]
		if !ok {
			text = reason
		}
		fmt.Fprintf(w, "  ran alone  %d x %s\n", r.RanAlone[reason], text)
	}
}
