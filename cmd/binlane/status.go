package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/position"
)

type statusFlags struct {
	target, passEnv, passFile string
	tls                       tlsFlags
	stream                    string
	json                      bool
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
			if f.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(streams)
			}
			if len(streams) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no streams on this target")
			}
			for _, s := range streams {
				printStream(cmd.OutOrStdout(), s, time.Now())
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

func printStream(w io.Writer, s position.State, now time.Time) {
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
	if s.Message != "" {
		fmt.Fprintf(w, "  last error %s\n", strings.ReplaceAll(s.Message, "\n", "\n             "))
	}
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
	for reason, n := range snap.Serialized {
		fmt.Fprintf(w, "  ran alone  %d x %s\n", n, reason)
	}
}
