package cutover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/verify"
)

// rollback undoes what the journal says this cut-over changed: the source
// is made writable again if binlane froze it, and the stream goes on. It
// runs to its end even after Ctrl-C.
func (c *cut) rollback(ctx context.Context, cause error) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	c.res.RolledBack = true
	c.log.Warn("rolling back", "reason", cause.Error())
	j, ok, err := position.LoadCutover(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return err
	}
	if !ok {
		j = position.Cutover{} // nothing journaled: the undos that need the journal do nothing
	}
	if err := c.undoSteps(ctx, j); err != nil {
		return err
	}
	if err := position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{
		position.CutoverState: position.CutoverRolledBack, position.CutoverMessage: cause.Error()}); err != nil {
		return err
	}
	c.waitResumed(ctx)
	return nil
}

// waitResumed waits a little for the stream to go on after a rollback, to
// report it; a stream that does not is named, not an error (its process
// may be restarting).
func (c *cut) waitResumed(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		st, _, err := position.Load(ctx, c.tgt, c.cfg.Stream)
		if err == nil && st.State != position.StatePaused {
			c.log.Info("the stream goes on", "state", st.State, "position", st.GTID)
			return
		}
		if sleep(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
	c.res.Notes = append(c.res.Notes, "the stream still showed paused 5 s after the rollback: check binlane status")
}

// forward finishes a cut-over whose hand-over committed: the forward
// steps (the source's triggers and events on the target, the target
// writable, the reverse stream, the journal done). Each step can be made
// again, so a run killed here is finished by the next; Ctrl-C no longer
// stops it.
func (c *cut) forward(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	began := time.Now()
	j, ok, err := position.LoadCutover(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("the cut-over's journal of stream %q is gone", c.cfg.Stream)
	}
	c.res.SourceGTID, c.res.TargetGTID = j.SourceGTID, j.TargetGTID
	if c.res.Verify == "" {
		c.res.Verify, c.res.Verified = j.Verified, j.Verified == "equal"
	}
	if err := c.runSteps(ctx, &runState{journal: j}, true); err != nil {
		return c.forwardFailed(err)
	}
	c.res.Timings.Frozen += time.Since(began)
	c.waitStreamEnded(ctx)
	return nil
}

// runObjects creates the source's triggers and events on the target, an
// event the target has (DISABLE ON SLAVE) replaced by the source's, and
// compares them; with DeferredOut the hand-over wrote them to the file.
func runObjects(ctx context.Context, c *cut, r *runState) error {
	var err error
	if r.objs, err = c.definitions(ctx); err != nil {
		return err
	}
	if c.cfg.DeferredOut != "" {
		return nil
	}
	have, err := existingObjects(ctx, c.tgt)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	for _, o := range r.objs {
		switch {
		case have[o.key()] && o.kind == kindEvent:
			// The copy creates events DISABLE ON SLAVE: the primary
			// runs them, so now the target gets the source's status.
			replaced, err := replaceObject(ctx, c.tgt, o)
			if err != nil {
				return err
			}
			if replaced {
				c.res.Replaced = append(c.res.Replaced, o.key())
			}
		case have[o.key()]:
		default:
			if err := createObject(ctx, c.tgt, o); err != nil {
				return err
			}
			c.res.Created = append(c.res.Created, o.key())
		}
	}
	return c.checkMoved(ctx, r.objs)
}

// runTargetWritable makes the target writable if it was read-only at the
// hand-over.
func runTargetWritable(ctx context.Context, c *cut, r *runState) error {
	if !r.journal.TargetReadOnly {
		return nil
	}
	if err := setReadOnly(ctx, c.tgt, false, 10*time.Second); err != nil {
		return fmt.Errorf("make the target writable: %w", err)
	}
	c.log.Info("the target is writable")
	return nil
}

// runReverse drops the moved triggers and events on the source (they would
// run twice there) and prepares the reverse stream at Q.
func runReverse(ctx context.Context, c *cut, r *runState) error {
	j := r.journal
	if j.Reverse == "" {
		return nil
	}
	for _, o := range r.objs {
		if err := dropObject(ctx, c.src, o, "source"); err != nil {
			return err
		}
		c.res.Dropped = append(c.res.Dropped, o.key())
	}
	msg := fmt.Sprintf("prepared by binlane cutover of stream %s at %s: starts at the target's position %s of the hand-over",
		c.cfg.Stream, j.SourceGTID, j.TargetGTID)
	if err := position.Prepare(ctx, c.src, j.Reverse, j.TargetGTID, msg); err != nil {
		return fmt.Errorf("source: prepare the reverse stream: %w", err)
	}
	c.res.ReverseStream = j.Reverse
	c.res.ReverseCommand = ReverseCommand(c.cfg.Source, c.cfg.Target, j.Reverse, c.cfg.Rules)
	return nil
}

// checkMoved compares the triggers and events moved (objs) once the
// target has them: as the primary now, it must hold each exactly as the
// source does, an event with the source's status. Only those: the
// application may already be writing to the target (a sequence moves),
// and with Reverse a run that finishes an earlier one may find some
// dropped on the source already.
func (c *cut) checkMoved(ctx context.Context, objs []object) error {
	if len(objs) == 0 {
		return nil
	}
	rep, err := verify.Run(ctx, verify.Config{Source: c.src, Target: c.tgt, Rules: c.cfg.Rules, Scope: verify.ScopeObjects, AnyDefiner: c.cfg.IgnoreDefiners,
		HandedOver: true, Logger: c.log})
	if err != nil {
		return fmt.Errorf("compare the triggers and events moved: %w", err)
	}
	var bad []string
	for _, o := range objs {
		kind := verify.KindTrigger
		if o.kind == kindEvent {
			kind = verify.KindEvent
		}
		r := rep.Object(kind, o.schema, o.name)
		switch {
		case r == nil:
			bad = append(bad, fmt.Sprintf("%s %s.%s (not found)", kind, o.schema, o.name))
		case !r.Equal():
			bad = append(bad, describeObject(*r))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the target's triggers and events differ from the source's after they were moved: %s", strings.Join(bad, "; "))
	}
	return nil
}

// describeObject names an object that differs, and how.
func describeObject(r verify.ObjectReport) string {
	s := r.Label() + " (" + string(r.Status)
	switch {
	case r.Error != "":
		s += ": " + r.Error
	case r.Line > 0:
		s += fmt.Sprintf(", line %d: source %q, target %q", r.Line, r.Source, r.Target)
	}
	return s + ")"
}

// forwardFailed: the hand-over stands (the target is the primary); what
// is left of it is made by the next run.
func (c *cut) forwardFailed(err error) error {
	return fmt.Errorf("the hand-over is done (stream %q is cut over at %s), but finishing it failed: %w; "+
		"run binlane cutover again to finish it", c.cfg.Stream, c.res.SourceGTID, err)
}

// waitStreamEnded waits a little for the stream's process to end (it sees
// the cut-over within a tenth of a second), to report it.
func (c *cut) waitStreamEnded(ctx context.Context) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if running, err := position.Running(ctx, c.tgt, c.cfg.Stream); err != nil || !running {
			return
		}
		if sleep(ctx, 100*time.Millisecond) != nil {
			return
		}
	}
	c.res.Notes = append(c.res.Notes, fmt.Sprintf("a binlane process still runs stream %q: it holds and applies nothing more; stop it", c.cfg.Stream))
}

// finishEarlier reports (and finishes) a cut-over an earlier run handed
// over.
func (c *cut) finishEarlier(ctx context.Context, j position.Cutover) error {
	c.res.Finished = true
	c.res.SourceGTID, c.res.TargetGTID, c.res.Verify, c.res.Verified = j.SourceGTID, j.TargetGTID, j.Verified, j.Verified == "equal"
	if c.cfg.DryRun || c.cfg.RollbackOnly {
		msg := fmt.Sprintf("stream %q was cut over at %s on %s: there is nothing to roll back (the way back is the reverse stream)",
			c.cfg.Stream, j.SourceGTID, j.HandedOverAt.UTC().Format(time.RFC3339))
		if j.State == position.CutoverHandedOver {
			msg = fmt.Sprintf("stream %q was handed over at %s; a run without --dry-run finishes it", c.cfg.Stream, j.SourceGTID)
		}
		if c.cfg.RollbackOnly {
			return errors.New(msg)
		}
		c.res.Notes = append(c.res.Notes, msg)
		return nil
	}
	if j.State == position.CutoverDone {
		c.res.Notes = append(c.res.Notes, fmt.Sprintf("stream %q was already cut over at %s on %s", c.cfg.Stream, j.SourceGTID,
			j.HandedOverAt.UTC().Format(time.RFC3339)))
		if j.Reverse != "" {
			c.res.ReverseStream = j.Reverse
			c.res.ReverseCommand = ReverseCommand(c.cfg.Source, c.cfg.Target, j.Reverse, c.cfg.Rules)
		}
		return nil
	}
	c.log.Warn("finishing the hand-over of an earlier run", "left_by", position.ParseOwner(j.Token).String())
	if err := position.ClaimCutover(ctx, c.tgt, c.cfg.Stream, c.token); err != nil {
		return err
	}
	return c.forward(ctx)
}
