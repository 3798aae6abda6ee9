package cutover

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/pause"
	"github.com/binlane/binlane/internal/position"
)

// step is one step of a cut-over, everything about it in one value: the
// preflight checks its privileges, the dry run prints its description,
// the run runs it and adds its time to its timing, tests kill the process
// where it ended, and a rollback undoes it by what its journal columns
// say. A new step is one more entry of cutSteps; TestStepTable checks that
// it is complete.
type step struct {
	name string
	// killPoint is what Config.AfterStep is called with once the step
	// ended ("" none): tests kill the process there.
	killPoint string
	// journal are the columns of binlane.cutover the step writes, or acts
	// on when it is undone or made again.
	journal []position.CutoverColumn
	// forward: the step comes after the hand-over committed: never undone,
	// made again by the next run until the journal says done.
	forward bool
	// timing is the Timings field the step's time is added to.
	timing func(*Timings) *time.Duration
	// describe is the step's part of the plan (--dry-run, the log); none
	// when it has nothing to do under cfg.
	describe func(cfg Config, f *facts) []string
	// privileges reports what the accounts lack for the step (preflight),
	// changing nothing.
	privileges func(ctx context.Context, c *cut, k *checks) error
	run        func(ctx context.Context, c *cut, r *runState) error
	// undo reverts the step by the journal j (rollback); nil for the
	// forward steps.
	undo func(ctx context.Context, c *cut, j position.Cutover) error
}

// runState is what the steps of one run hand on to the next.
type runState struct {
	deadline time.Time        // of the freeze and the catch-up together
	p        gtid.Set         // the source's final position
	journal  position.Cutover // the journal as the hand-over left it (forward steps)
	objs     []object         // the source's triggers and events (forward steps)
}

// cutSteps are a cut-over's steps in the order they run: up to the hand-
// over (which commits), then forward. The preflight before them is common
// to all (the stream, the servers, the accounts).
var cutSteps = []step{
	{
		name: "freeze", killPoint: "frozen",
		journal:  []position.CutoverColumn{position.CutoverFrozeSource, position.CutoverSourceGTID},
		timing:   func(t *Timings) *time.Duration { return &t.Freeze },
		describe: describeFreeze, privileges: freezePrivileges, run: runFreeze, undo: undoFreeze,
	},
	{
		name: "catch up", killPoint: "held",
		// The pause request lives in the stream's row, not the journal;
		// what it holds at is the journal's source_gtid.
		journal:  []position.CutoverColumn{position.CutoverSourceGTID},
		timing:   func(t *Timings) *time.Duration { return &t.CatchUp },
		describe: describeCatchUp, privileges: noPrivileges, run: runCatchUp, undo: undoCatchUp,
	},
	{
		name: "verify", killPoint: "verified",
		journal:  []position.CutoverColumn{position.CutoverVerified},
		timing:   func(t *Timings) *time.Duration { return &t.Verify },
		describe: describeVerify, privileges: verifyPrivileges,
		run:  func(ctx context.Context, c *cut, _ *runState) error { return c.verify(ctx) },
		undo: nothingToUndo,
	},
	{
		name: handOverStep, killPoint: "handed over",
		journal: []position.CutoverColumn{position.CutoverState, position.CutoverSourceGTID, position.CutoverTargetGTID,
			position.CutoverTargetReadOnly},
		timing:   func(t *Timings) *time.Duration { return &t.HandOver },
		describe: describeHandOver, privileges: noPrivileges,
		run: func(ctx context.Context, c *cut, r *runState) error { return c.handOver(ctx, r.p) },
		// One target transaction: it committed (forward from here) or
		// changed nothing.
		undo: nothingToUndo,
	},
	{
		name: "triggers and events", killPoint: "objects created", forward: true,
		journal:  []position.CutoverColumn{position.CutoverState},
		timing:   func(t *Timings) *time.Duration { return &t.HandOver },
		describe: describeObjects, privileges: objectPrivileges, run: runObjects,
	},
	{
		name: "target writable", forward: true,
		journal:  []position.CutoverColumn{position.CutoverTargetReadOnly},
		timing:   func(t *Timings) *time.Duration { return &t.HandOver },
		describe: describeTargetWritable, privileges: targetWritablePrivileges, run: runTargetWritable,
	},
	{
		name: "reverse", forward: true,
		journal:  []position.CutoverColumn{position.CutoverReverseStream, position.CutoverTargetGTID},
		timing:   func(t *Timings) *time.Duration { return &t.HandOver },
		describe: describeReverse, privileges: reversePrivileges, run: runReverse,
	},
	{
		name: "done", forward: true,
		journal:  []position.CutoverColumn{position.CutoverState},
		timing:   func(t *Timings) *time.Duration { return &t.HandOver },
		describe: describeDone, privileges: noPrivileges,
		run: func(ctx context.Context, c *cut, _ *runState) error {
			return position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{position.CutoverState: position.CutoverDone})
		},
	},
}

// handOverStep names the step that commits the cut-over.
const handOverStep = "hand over"

// KillPoint is a point between two steps where tests kill a cut-over.
type KillPoint struct {
	Name string // what Config.AfterStep is called with
	// HandedOver: the hand-over committed before it, so the next run
	// finishes the cut-over instead of rolling it back.
	HandedOver bool
}

// KillPoints lists the points Config.AfterStep is called at, in order.
func KillPoints() []KillPoint {
	var out []KillPoint
	for _, s := range cutSteps {
		if s.killPoint != "" {
			// The hand-over's own kill point is after its commit.
			out = append(out, KillPoint{Name: s.killPoint, HandedOver: s.forward || s.name == handOverStep})
		}
	}
	return out
}

// runSteps runs the steps of phase (forward or not) in order, each timed
// and followed by its kill point.
func (c *cut) runSteps(ctx context.Context, r *runState, forward bool) error {
	for _, s := range cutSteps {
		if s.forward != forward {
			continue
		}
		began := time.Now()
		err := s.run(ctx, c, r)
		*s.timing(&c.res.Timings) += time.Since(began)
		if err != nil {
			return err
		}
		if s.killPoint != "" {
			c.afterStep(s.killPoint)
		}
	}
	return nil
}

// undoSteps undoes the steps before the hand-over by the journal, each
// whatever the others' errors, in the order they run: the source is made
// writable first, so that the application's writes wait the least.
func (c *cut) undoSteps(ctx context.Context, j position.Cutover) error {
	var errs []error
	for _, s := range cutSteps {
		if s.undo == nil {
			continue
		}
		if err := s.undo(ctx, c, j); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func noPrivileges(context.Context, *cut, *checks) error { return nil }

func nothingToUndo(context.Context, *cut, position.Cutover) error { return nil }

// runFreeze freezes the source (freeze.go) and records P.
func runFreeze(ctx context.Context, c *cut, r *runState) error {
	c.log.Info("freezing the source's writes", "freeze", c.cfg.Freeze, "timeout", c.cfg.Timeout)
	p, err := c.freeze(ctx, r.deadline)
	if err != nil {
		return err
	}
	r.p = p
	c.res.SourceGTID = p.String()
	return position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{position.CutoverSourceGTID: p.String()})
}

// undoFreeze makes the source writable again if binlane froze it.
func undoFreeze(ctx context.Context, c *cut, j position.Cutover) error {
	if j.FrozeSource != FreezeReadOnly {
		return nil
	}
	if err := setReadOnly(ctx, c.src, false, 10*time.Second); err != nil {
		return fmt.Errorf("make the source writable again: %w", err)
	}
	c.log.Info("the source is writable again")
	return nil
}

// runCatchUp asks the stream to apply up to P and hold there.
func runCatchUp(ctx context.Context, c *cut, r *runState) error {
	c.log.Info("catching up", "source_gtid", r.p.String())
	req := pause.AtRequest(r.p, position.ByCutover)
	if err := position.RequestPause(ctx, c.tgt, c.cfg.Stream, req.Text(), req.By); err != nil {
		return err
	}
	if _, err := pause.WaitHeld(ctx, c.tgt, c.cfg.Stream, req, time.Until(r.deadline)); err != nil {
		var to *pause.TimeoutError
		if errors.As(err, &to) {
			return &TimeoutError{Step: "catch-up", After: c.cfg.Timeout, Detail: err.Error()}
		}
		return fmt.Errorf("catch up: %w", err)
	}
	return nil
}

// undoCatchUp lets the stream go on.
func undoCatchUp(ctx context.Context, c *cut, _ position.Cutover) error {
	_, err := position.ClearPause(ctx, c.tgt, c.cfg.Stream, position.ByCutover)
	return err
}
