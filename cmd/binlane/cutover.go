package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/cutover"
	"github.com/binlane/binlane/internal/verify"
)

type cutoverFlags struct {
	pairFlags
	stream                 string
	maxLag, timeout, quiet time.Duration
	freeze                 string
	noVerify               bool
	ignoreDefiners         bool
	parallel, chunkRows    int
	reverse                bool
	reverseStream          string
	deferredOut            string
	dryRun, json, rollback bool
}

func newCutoverCmd() *cobra.Command {
	var f cutoverFlags
	cmd := &cobra.Command{
		Use:   "cutover --source DSN --target DSN --stream NAME --databases DB",
		Short: "Switch from the source to the target: freeze, catch up exactly, verify, hand over, optionally reverse",
		Long: `Move to the target, beside a running "binlane replicate" of the stream:

  1. preflight: the stream runs, its copy is done and it lags less than
     --max-lag; the accounts have every privilege the later steps need
     (the missing one is named). --dry-run prints the steps and stops here,
     having changed nothing.
  2. freeze: --freeze read-only (default) sets the source read-only and
     waits until no transaction with uncommitted changes is open on it;
     --freeze none waits until the application stopped writing (the
     source's position unchanged for --quiet-for).
  3. catch up: the source's final position P; the stream applies up to P
     exactly and holds there.
  4. verify: the selected tables compared at P, unless --no-verify, and
     always the definitions of the tables, views, sequences, routines,
     triggers and events: one missing or different on the target (named)
     rolls back; triggers and events the target lacks are deferred to 5.
  5. hand over: the stream is recorded as cut over at P (a later replicate
     of it refuses to start); the source's triggers and events (as they
     are at P) are created on the target, an event it has (DISABLE ON
     SLAVE, as the copy creates it) replaced by the source's, and compared
     again; or written to --deferred-out. The target is made writable if it
     was read-only.
  6. --reverse: a reverse stream (--reverse-stream, default NAME-reverse)
     from the target back to the source is prepared, starting at the
     target's own position Q of the hand-over, and the replicate command
     that runs it is printed. The source's triggers and events are dropped
     there: it is a replica now. Cutting the reverse stream over is the
     way back.

Any failure, a --timeout (freeze and catch-up together) or Ctrl-C before
the hand-over rolls back: the source is writable again if binlane froze it,
the stream goes on. A cut-over killed at any step is rolled back or
finished by the next run of the same command; --rollback only undoes an
unfinished one. The source stays read-only after a cut-over.

Prints P, Q, the timings and the verify result; --json for scripts.

Exit status: 0 cut over (or the dry run's plan), 2 error (rolled back
unless it says otherwise), 3 --timeout reached (rolled back).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCutover(cmd, f) },
	}
	withConfig(cmd)
	fl := cmd.Flags()
	addPairFlags(fl, &f.pairFlags, pairHelp{
		source:    "source server address (the stream's source)",
		target:    "target server address (the stream's target)",
		databases: "the stream's databases (as given to replicate)",
		tables:    "the stream's tables, as db.table (as given to replicate)",
		exclude:   "databases or db.tables the stream skips (as given to replicate)",
	})
	fl.StringVar(&f.stream, "stream", "default", "the stream to cut over")
	fl.DurationVar(&f.maxLag, "max-lag", 5*time.Second, "the most the stream may lag when the cut-over starts")
	fl.DurationVar(&f.timeout, "timeout", time.Minute, "how long the freeze and the catch-up may take together before the cut-over rolls back")
	fl.StringVar(&f.freeze, "freeze", cutover.FreezeReadOnly, "read-only: binlane makes the source read-only; none: the application stops writing")
	fl.DurationVar(&f.quiet, "quiet-for", 2*time.Second, "--freeze none: how long the source's position must not move")
	fl.BoolVar(&f.noVerify, "no-verify", false, "hand over without comparing the tables' rows at the final position (their definitions and the other objects are still compared)")
	fl.IntVar(&f.parallel, "threads", verify.DefaultParallel, "verify: chunks compared at once")
	deprecatedAlias(fl, "parallel", "threads")
	fl.IntVar(&f.chunkRows, "chunk-rows", verify.DefaultChunkRows, "verify: source rows per checksummed chunk")
	fl.BoolVar(&f.ignoreDefiners, "ignore-definers", false, "do not compare the definers of views, routines and events at the final position (after a copy with --definer=current)")
	fl.BoolVar(&f.reverse, "reverse", false, "prepare the reverse stream, target to source, starting at the hand-over")
	fl.StringVar(&f.reverseStream, "reverse-stream", "", "name of the reverse stream (default: the stream's name + \"-reverse\", "+
		"or without it for a reverse stream)")
	fl.StringVar(&f.deferredOut, "deferred-out", "", "write the source's triggers and events to this file instead of creating them on the target")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check everything and print the steps; change nothing")
	fl.BoolVar(&f.json, "json", false, "print the result as JSON")
	fl.BoolVar(&f.rollback, "rollback", false, "only roll back an unfinished cut-over (left by a killed process)")
	return cmd
}

func runCutover(cmd *cobra.Command, f cutoverFlags) error {
	s, err := f.start(cmd)
	if err != nil {
		return err
	}
	if f.freeze != cutover.FreezeReadOnly && f.freeze != cutover.FreezeNone {
		return fmt.Errorf("--freeze %q: want read-only or none", f.freeze)
	}
	if f.timeout <= 0 || f.maxLag <= 0 || f.quiet <= 0 {
		return errors.New("--timeout, --max-lag and --quiet-for must be positive")
	}
	res, err := cutover.Run(cmd.Context(), cutover.Config{Source: s.src, Target: s.tgt, Stream: f.stream, Rules: s.rules,
		MaxLag: f.maxLag, Timeout: f.timeout, Freeze: f.freeze, Quiet: f.quiet, NoVerify: f.noVerify, IgnoreDefiners: f.ignoreDefiners,
		VerifyParallel: f.parallel, ChunkRows: f.chunkRows, Reverse: f.reverse, ReverseStream: f.reverseStream,
		DeferredOut: f.deferredOut, DryRun: f.dryRun, RollbackOnly: f.rollback, Logger: s.log, AfterStep: afterStep(cmd.ErrOrStderr())})
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(res); jerr != nil && err == nil {
			err = jerr
		}
	} else if err == nil {
		printCutover(out, res, f)
	} else if res.RolledBack {
		fmt.Fprintf(out, "cut-over of stream %s rolled back: the source is as it was, the stream goes on.\n", f.stream)
	}
	var to *cutover.TimeoutError
	if errors.As(err, &to) {
		return withExitCode(exitTimeout, err)
	}
	return err
}

// cutoverStepHook, when set (in-process tests), is called as each step of
// a cut-over ends: a test changes a server exactly between two steps there
// (a row planted on the target while the source is frozen).
var cutoverStepHook func(step string)

// afterStep is the cut-over's AfterStep: the in-process hook, then the
// environment's hold.
func afterStep(stderr io.Writer) func(string) {
	hold, hook := testHold(stderr), cutoverStepHook
	if hold == nil && hook == nil {
		return nil
	}
	return func(step string) {
		if hook != nil {
			hook(step)
		}
		if hold != nil {
			hold(step)
		}
	}
}

// testHold is a test's hook (the crash test kills the process at each
// step): with BINLANE_TEST_CUTOVER_HOLD=step the cut-over says so on
// stderr and waits forever once that step ended. Never set otherwise.
func testHold(stderr io.Writer) func(string) {
	hold := os.Getenv("BINLANE_TEST_CUTOVER_HOLD")
	if hold == "" {
		return nil
	}
	return func(step string) {
		if step == hold {
			fmt.Fprintf(stderr, "test hold after step %q\n", step)
			for {
				time.Sleep(time.Hour)
			}
		}
	}
}

// printCutover tells what the cut-over did.
func printCutover(w io.Writer, res *cutover.Result, f cutoverFlags) {
	switch {
	case f.dryRun:
		fmt.Fprintf(w, "dry run: every check passed and nothing was changed. A cut-over of stream %s would:\n", res.Stream)
		for i, s := range res.Steps {
			fmt.Fprintf(w, "  %d. %s\n", i+1, s)
		}
		printNotes(w, res.Notes)
		return
	case f.rollback:
		fmt.Fprintf(w, "stream %s: nothing left to roll back\n", res.Stream)
		printNotes(w, res.Notes)
		return
	}
	fmt.Fprintf(w, "stream %s is cut over: the target took over at the source's final position.\n", res.Stream)
	fmt.Fprintf(w, "  source position P  %s\n", res.SourceGTID)
	fmt.Fprintf(w, "  target position Q  %s\n", res.TargetGTID)
	verified := res.Verify
	if res.VerifySummary != "" {
		verified += " (" + res.VerifySummary + ")"
	}
	fmt.Fprintf(w, "  verify             %s\n", verified)
	if !res.Finished {
		fmt.Fprintf(w, "  timings            %s\n", res.Timings)
	}
	if len(res.Created) > 0 {
		fmt.Fprintf(w, "  on the target      created %s\n", strings.Join(res.Created, ", "))
	}
	if len(res.Replaced) > 0 {
		fmt.Fprintf(w, "  on the target      replaced %s by the source's\n", strings.Join(res.Replaced, ", "))
	}
	if res.Deferred != "" {
		fmt.Fprintf(w, "  triggers, events   written to %s: run it on the target\n", res.Deferred)
	}
	if len(res.Dropped) > 0 {
		fmt.Fprintf(w, "  on the source      dropped %s (now on the target)\n", strings.Join(res.Dropped, ", "))
	}
	if res.ReverseStream != "" {
		fmt.Fprintf(w, "  reverse stream     %s, prepared on the source at Q; run it with (BINLANE_SOURCE_PASSWORD holding the target "+
			"account's password, BINLANE_TARGET_PASSWORD the source account's):\n      %s\n", res.ReverseStream, res.ReverseCommand)
	}
	printNotes(w, res.Notes)
	fmt.Fprintln(w, "Point the application at the target now.")
}

func printNotes(w io.Writer, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}
