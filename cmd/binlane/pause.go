package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/pause"
	"github.com/binlane/binlane/internal/position"
)

// targetFlags are the options of the commands that only talk to a
// stream's target: pause, resume, wait.
type targetFlags struct {
	target, passEnv, passFile string
	tls                       tlsFlags
	stream                    string
	timeout                   time.Duration
}

func addTargetFlags(fl *pflag.FlagSet, f *targetFlags, timeout time.Duration, timeoutHelp string) {
	fl.StringVar(&f.target, "target", "", "target server address (where the stream's state lives)")
	addPasswordFlags(fl, "target", &f.passEnv, &f.passFile)
	addTLSFlags(fl, "target-", "target", &f.tls)
	fl.StringVar(&f.stream, "stream", "default", "the stream")
	fl.DurationVar(&f.timeout, "timeout", timeout, timeoutHelp)
}

// open connects to the target and checks that the stream exists.
func (f targetFlags) open(ctx context.Context) (*sql.DB, dsn.DSN, position.State, error) {
	d, err := resolveServer("target", f.target, f.passEnv, f.passFile, f.tls)
	if err != nil {
		return nil, d, position.State{}, err
	}
	db, err := d.OpenDB("")
	if err != nil {
		return nil, d, position.State{}, fmt.Errorf("--target: %w", err)
	}
	db.SetMaxOpenConns(2)
	st, ok, err := position.Load(ctx, db, f.stream)
	if err == nil && !ok {
		err = fmt.Errorf("target %s has no stream %q", d, f.stream)
	}
	if err != nil {
		db.Close()
		return nil, d, st, serverError("target", d, err)
	}
	return db, d, st, nil
}

func newPauseCmd() *cobra.Command {
	var f targetFlags
	cmd := &cobra.Command{
		Use:   "pause --target DSN --stream NAME",
		Short: "Make a running stream hold at a transaction boundary until resumed",
		Long: `Ask the stream to hold: the process that runs it (binlane replicate, in
another shell or on another host) finishes the transactions in flight,
saves its position and holds there, with the state "paused" (binlane
status shows it), until "binlane resume". The request is kept in the
stream's row on the target: a replicate restarted meanwhile holds before it
applies anything, and this command may exit at once.

It waits until the stream holds (up to --timeout) and prints where. A
stream that no process runs holds when it starts.

Privileges: SELECT and UPDATE on binlane.streams on the target.

Exit status: 0 paused (or recorded for a stream that is not running), 2
error (another pause request is in place: a cut-over's, an online
verify's), 3 the stream did not hold within --timeout (the request stays).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPause(cmd, f) },
	}
	withConfig(cmd)
	addTargetFlags(cmd.Flags(), &f, time.Minute, "how long to wait for the stream to hold")
	return cmd
}

func runPause(cmd *cobra.Command, f targetFlags) error {
	ctx := cmd.Context()
	db, _, st, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	if st.State == position.StateCutOver {
		return fmt.Errorf("stream %q was cut over (%s): there is nothing to pause", f.stream, st.Message)
	}
	req := pause.HoldRequest(position.ByPause)
	if err := position.RequestPause(ctx, db, f.stream, req.Text(), req.By); err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	running, err := position.Running(ctx, db, f.stream)
	if err != nil {
		return err
	}
	if !running {
		fmt.Fprintf(out, "stream %s is not running: it will hold at %s when it starts (binlane resume withdraws the request)\n",
			f.stream, st.GTID)
		return nil
	}
	held, err := pause.WaitHeld(ctx, db, f.stream, req, f.timeout)
	var to *pause.TimeoutError
	switch {
	case errors.As(err, &to):
		return withExitCode(exitTimeout, fmt.Errorf("%w; the request stays: it holds as soon as it can (binlane resume withdraws it)", err))
	case err != nil:
		return err
	}
	fmt.Fprintf(out, "stream %s paused at %s\n", f.stream, held.GTID)
	return nil
}

func newResumeCmd() *cobra.Command {
	var f targetFlags
	var force bool
	cmd := &cobra.Command{
		Use:   "resume --target DSN --stream NAME",
		Short: "Let a stream paused by binlane pause go on",
		Long: `Withdraw the pause request of "binlane pause": the stream's process goes on
from where it held, within a tenth of a second. It waits until the stream
runs again (up to --timeout). A hold of an online verify or a cut-over is
theirs to end; --force also withdraws an online verify's request (a verify
killed while it held the stream), never a cut-over's: "binlane cutover
--rollback" undoes a cut-over that did not finish.

Privileges: SELECT and UPDATE on binlane.streams on the target.

Exit status: 0 resumed (or not paused), 2 error, 3 the stream did not run
again within --timeout (the request is withdrawn).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runResume(cmd, f, force) },
	}
	withConfig(cmd)
	addTargetFlags(cmd.Flags(), &f, time.Minute, "how long to wait for the stream to run again")
	cmd.Flags().BoolVar(&force, "force", false, "also withdraw an online verify's pause request")
	return cmd
}

func runResume(cmd *cobra.Command, f targetFlags, force bool) error {
	ctx := cmd.Context()
	db, _, st, err := f.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	out := cmd.OutOrStdout()
	by := position.ByPause
	switch {
	case st.PauseAt == "":
		fmt.Fprintf(out, "stream %s is not paused (%s at %s)\n", f.stream, st.State, st.GTID)
		return nil
	case st.PauseBy == position.ByCutover:
		return fmt.Errorf("stream %q is held by a cut-over (at %s): let it finish, or undo it with binlane cutover --rollback",
			f.stream, st.PauseAt)
	case st.PauseBy == position.ByVerify && !force:
		return fmt.Errorf("stream %q is held by an online verify (at %s), which lets it go on itself; --force withdraws the "+
			"request of a verify that was killed", f.stream, st.PauseAt)
	case st.PauseBy != position.ByPause:
		by = st.PauseBy
	}
	if _, err := position.ClearPause(ctx, db, f.stream, by); err != nil {
		return err
	}
	running, err := position.Running(ctx, db, f.stream)
	if err != nil {
		return err
	}
	if !running {
		fmt.Fprintf(out, "stream %s resumed: it is not running; it goes on from %s when it starts\n", f.stream, st.GTID)
		return nil
	}
	deadline := time.Now().Add(f.timeout)
	for {
		now, _, err := position.Load(ctx, db, f.stream)
		if err != nil {
			return err
		}
		if now.State != position.StatePaused {
			fmt.Fprintf(out, "stream %s resumed from %s (%s)\n", f.stream, st.GTID, now.State)
			return nil
		}
		if time.Now().After(deadline) {
			return withExitCode(exitTimeout, fmt.Errorf("stream %q still holds after %s (the request is withdrawn: is its process stuck?)",
				f.stream, f.timeout))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
