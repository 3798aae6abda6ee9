package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

func newWaitCmd() *cobra.Command {
	var f targetFlags
	var want string
	cmd := &cobra.Command{
		Use:   "wait --target DSN --stream NAME --gtid POS",
		Short: "Wait until a stream has applied a source position (like MASTER_GTID_WAIT)",
		Long: `Return once the stream's applied position (in binlane.streams on the target,
committed with the rows) contains --gtid: every transaction of the source up
to that position is on the target. For scripts that switch traffic
themselves: read the source's @@gtid_binlog_pos after stopping its writes,
then wait for it here.

Privileges: SELECT on binlane.streams on the target.

Exit status: 0 reached, 2 error (also a stream that stopped on an error or
was cut over before reaching it), 3 not reached within --timeout.

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runWait(cmd, f, want) },
	}
	withConfig(cmd)
	addTargetFlags(cmd.Flags(), &f, 0, "give up after this long (0: wait as long as it takes)")
	cmd.Flags().StringVar(&want, "gtid", "", "the source position to wait for (required)")
	return cmd
}

func runWait(cmd *cobra.Command, f targetFlags, want string) error {
	if want == "" {
		return fmt.Errorf("--gtid is required")
	}
	pos, err := parseGTIDFlag("gtid", want)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	db, d, _, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	var deadline time.Time
	if f.timeout > 0 {
		deadline = time.Now().Add(f.timeout)
	}
	for {
		st, ok, err := position.Load(ctx, db, f.stream)
		if err != nil {
			return serverError("target", d, err)
		}
		if !ok {
			return fmt.Errorf("target %s has no stream %q", d, f.stream)
		}
		at, err := gtid.ParseSet(st.GTID)
		if err != nil {
			return fmt.Errorf("stream %q position %q: %w", f.stream, st.GTID, err)
		}
		switch {
		case at.ContainsSet(pos):
			fmt.Fprintf(cmd.OutOrStdout(), "stream %s is at %s\n", f.stream, at)
			return nil
		case st.State == position.StateError && at.IsEmpty():
			// It never applied anything: there is no position to name.
			return fmt.Errorf("stream %q stopped on an error before its first position: %s", f.stream, st.Message)
		case st.State == position.StateError:
			return fmt.Errorf("stream %q stopped on an error at %s before reaching %s: %s", f.stream, at, pos, st.Message)
		case st.State == position.StateCutOver:
			return fmt.Errorf("stream %q was cut over at %s: it never reaches %s", f.stream, at, pos)
		case !deadline.IsZero() && time.Now().After(deadline):
			return withExitCode(exitTimeout, fmt.Errorf("stream %q did not reach %s within %s (it is at %s, %s)", f.stream, pos,
				f.timeout, at, st.State))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted: stream %q is at %s: %w", f.stream, at, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
