// Package cutover moves an application from a stream's source to its
// target, in one command beside the running stream (binlane cutover):
//
//  1. preflight: the stream runs, is not copying and lags less than
//     MaxLag; the accounts hold every privilege the later steps need. All
//     of it, and nothing else, under DryRun.
//  2. freeze: the source is made read-only and the transactions with
//     changes still open are waited for, or (FreezeNone) the source's
//     position must stop moving; then its final position P is read.
//  3. catch up: the running stream is asked to apply up to P and hold
//     there (package pause); its saved position is then exactly P.
//  4. verify: both sides compared at P (both are still): the rows, unless
//     NoVerify, and always the schema objects' definitions (package
//     verify); an object missing or different rolls back.
//  5. hand over, one target transaction: the stream is recorded as cut
//     over at P (it never runs again), with the target's own position Q.
//     Then, going forward only: the source's triggers and events are
//     created on the target, an event the copy created there (DISABLE ON
//     SLAVE) replaced by the source's, and all of them compared again (or
//     written to DeferredOut); the target made writable, and with Reverse
//     a reverse stream target → source is prepared at Q (binlane
//     replicate runs it; it carries only what the application writes to
//     the target from Q on).
//
// Every step is journaled in binlane.cutover (package position) before it
// changes anything, so that a failure, a timeout or Ctrl-C before the hand-
// over rolls back (the source writable again if binlane froze it, the
// stream going on), and a cut-over killed at any step is rolled back or
// finished by the next run: never half-switched.
//
// The package writes to the source only read_only, and with Reverse the
// dropped triggers and events and the reverse stream's state; to the
// target only the pause request, the journal, the hand-over, the triggers
// and events, and read_only.
package cutover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/verify"
)

// Config describes a cut-over.
type Config struct {
	Source, Target dsn.DSN
	Stream         string
	// Rules select the stream's tables: what is verified, and whose
	// triggers and events move.
	Rules filter.Rules
	// MaxLag is the most the stream may lag when the cut-over starts.
	MaxLag time.Duration
	// Timeout bounds the freeze and the catch-up together: how long the
	// application's writes wait before the cut-over gives up and rolls
	// back.
	Timeout time.Duration
	Freeze  string // FreezeReadOnly or FreezeNone
	// Quiet is how long the source's position must not move (FreezeNone).
	Quiet    time.Duration
	NoVerify bool
	// IgnoreDefiners leaves objects' definers out of the comparisons (the
	// copy created the target's as binlane's account: --definer=current).
	IgnoreDefiners bool
	// VerifyParallel and ChunkRows shape the verify (0: its defaults).
	VerifyParallel, ChunkRows int
	// Reverse prepares the reverse stream, called ReverseStream.
	Reverse       bool
	ReverseStream string
	// DeferredOut, when set, is a file the triggers' and events'
	// definitions are written to instead of being created on the target.
	DeferredOut string
	DryRun      bool
	// RollbackOnly undoes an unfinished cut-over (left by a killed
	// process) and does nothing else.
	RollbackOnly bool
	Logger       *slog.Logger
	// AfterStep, when set, is called as each step ends, with the names
	// KillPoints lists ("frozen", "held", "verified", "handed over",
	// "objects created"): tests kill the process there.
	AfterStep func(step string)
}

func (c *Config) defaults() {
	if c.Stream == "" {
		c.Stream = "default"
	}
	if c.MaxLag <= 0 {
		c.MaxLag = 5 * time.Second
	}
	if c.Timeout <= 0 {
		c.Timeout = time.Minute
	}
	if c.Freeze == "" {
		c.Freeze = FreezeReadOnly
	}
	if c.Quiet <= 0 {
		c.Quiet = 2 * time.Second
	}
	if c.ReverseStream == "" {
		c.ReverseStream = ReverseName(c.Stream)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Result is what a cut-over did.
type Result struct {
	Stream     string `json:"stream"`
	SourceGTID string `json:"source_gtid"` // P
	TargetGTID string `json:"target_gtid"` // Q
	// Verified: verify found the tables equal at P. Verify is "equal",
	// "skipped" (--no-verify) or "" (it did not get there).
	Verified       bool     `json:"verified"`
	Verify         string   `json:"verify"`
	VerifySummary  string   `json:"verify_summary,omitempty"`
	ReverseStream  string   `json:"reverse_stream"` // "" without --reverse
	ReverseCommand string   `json:"reverse_command,omitempty"`
	Created        []string `json:"created,omitempty"`  // triggers and events created on the target
	Replaced       []string `json:"replaced,omitempty"` // events the target had (DISABLE ON SLAVE), given the source's definition
	Dropped        []string `json:"dropped,omitempty"`  // and dropped on the source (Reverse)
	Deferred       string   `json:"deferred,omitempty"` // the DeferredOut file written
	Timings        Timings  `json:"timings"`
	DryRun         bool     `json:"dry_run,omitempty"`
	Steps          []string `json:"steps,omitempty"` // the plan
	Notes          []string `json:"notes,omitempty"`
	// Finished says the result is that of an earlier run's hand-over,
	// finished (or found done) by this one.
	Finished   bool   `json:"finished_earlier_run,omitempty"`
	RolledBack bool   `json:"rolled_back,omitempty"`
	Error      string `json:"error,omitempty"`
}

// cut is one run.
type cut struct {
	cfg      Config
	log      *slog.Logger
	src, tgt *sql.DB
	token    string
	facts    *facts
	res      *Result
	// leftover: a dry run found an unfinished cut-over, which a real run
	// rolls back before its preflight.
	leftover bool
}

// Run cuts over (see the package doc). The result is filled as far as the
// cut-over got, errors included; a *TimeoutError means it timed out and
// rolled back.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	c := &cut{cfg: cfg, log: cfg.Logger.With("stream", cfg.Stream), token: position.NewOwnerToken(),
		res: &Result{Stream: cfg.Stream, DryRun: cfg.DryRun}}
	err := c.run(ctx)
	if err != nil {
		c.res.Error = err.Error()
	}
	return c.res, err
}

func (c *cut) run(ctx context.Context) error {
	began := time.Now()
	if err := c.open(); err != nil {
		return err
	}
	defer c.src.Close()
	defer c.tgt.Close()
	if !c.cfg.DryRun { // a dry run writes nothing, not even a CREATE ... IF NOT EXISTS
		if err := position.Ensure(ctx, c.tgt); err != nil {
			return fmt.Errorf("target %s: %w", c.cfg.Target, err)
		}
	}
	lock, err := position.AcquireCutover(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return fmt.Errorf("target %s: %w", c.cfg.Target, err)
	}
	if lock == nil {
		return fmt.Errorf("another binlane cutover of stream %q is running", c.cfg.Stream)
	}
	defer lock.Release()

	j, ok, err := position.LoadCutover(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return err
	}
	switch {
	case ok && (j.State == position.CutoverHandedOver || j.State == position.CutoverDone):
		return c.finishEarlier(ctx, j)
	case ok && j.State == position.CutoverStarted:
		// Left by a process that died (we hold the lock): undo it first.
		if c.cfg.DryRun {
			c.leftover = true
			c.res.Steps = append(c.res.Steps, "roll back the unfinished cut-over left by "+position.ParseOwner(j.Token).String())
		} else {
			c.log.Warn("rolling back an unfinished cut-over", "left_by", position.ParseOwner(j.Token).String())
			if err := position.ClaimCutover(ctx, c.tgt, c.cfg.Stream, c.token); err != nil {
				return err
			}
			if err := c.rollback(ctx, errors.New("left unfinished by "+position.ParseOwner(j.Token).String())); err != nil {
				return err
			}
			c.res.RolledBack = false
			c.res.Notes = append(c.res.Notes, "rolled back an unfinished cut-over left by "+position.ParseOwner(j.Token).String())
		}
	}
	if c.cfg.RollbackOnly {
		if !ok || j.State != position.CutoverStarted {
			c.res.Notes = append(c.res.Notes, "no unfinished cut-over to roll back")
		}
		return nil
	}

	f, err := c.preflight(ctx)
	c.facts = f
	c.res.Timings.Preflight = time.Since(began)
	if f != nil {
		c.res.Steps = append(c.res.Steps, steps(c.cfg, f)...)
		c.res.Notes = append(c.res.Notes, f.notes...)
	}
	if err != nil || c.cfg.DryRun {
		return err
	}
	for i, s := range c.res.Steps {
		c.log.Info("plan", "step", i+1, "what", s)
	}
	if err := position.BeginCutover(ctx, c.tgt, c.cfg.Stream, c.token, reverseName(c.cfg)); err != nil {
		return err
	}
	if err := c.switchOver(ctx); err != nil {
		if rerr := c.rollback(ctx, err); rerr != nil {
			return fmt.Errorf("%w; and the rollback failed: %w (run binlane cutover --rollback)", err, rerr)
		}
		return fmt.Errorf("rolled back: %w", err)
	}
	return c.forward(ctx)
}

// open opens the pools of both servers, in the cut-over's session, with
// room for the verify's sessions.
func (c *cut) open() error {
	var err error
	if c.src, err = c.cfg.Source.OpenSession(dsn.CutoverSession(), "", nil); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if c.tgt, err = c.cfg.Target.OpenSession(dsn.CutoverSession(), "", nil); err != nil {
		c.src.Close()
		return fmt.Errorf("target: %w", err)
	}
	parallel := c.cfg.VerifyParallel
	if parallel <= 0 {
		parallel = verify.DefaultParallel
	}
	c.src.SetMaxOpenConns(parallel + 4)
	c.tgt.SetMaxOpenConns(parallel + 4)
	return nil
}

func (c *cut) afterStep(name string) {
	if c.cfg.AfterStep != nil {
		c.cfg.AfterStep(name)
	}
}

func reverseName(cfg Config) string {
	if cfg.Reverse {
		return cfg.ReverseStream
	}
	return ""
}

// switchOver runs the steps up to the hand-over's commit; an error before
// that commit is rolled back by the caller.
func (c *cut) switchOver(ctx context.Context) error {
	frozeAt := time.Now()
	r := &runState{deadline: frozeAt.Add(c.cfg.Timeout)}
	if err := c.runSteps(ctx, r, false); err != nil {
		return err
	}
	c.res.Timings.Frozen = time.Since(frozeAt)
	return nil
}

// verify compares both sides at P: the rows (unless NoVerify) and the
// schema objects' definitions, a few statements that even NoVerify runs:
// the target must not take over without a view, routine, sequence or
// event of the source's, or with one that differs. Triggers and events it
// lacks are deferred: the hand-over creates them.
func (c *cut) verify(ctx context.Context) error {
	cfg := verify.Config{Source: c.src, Target: c.tgt, Rules: c.cfg.Rules, Parallel: c.cfg.VerifyParallel,
		ChunkRows: c.cfg.ChunkRows, Logger: c.log, AnyDefiner: c.cfg.IgnoreDefiners}
	if c.cfg.NoVerify {
		cfg.Scope = verify.ScopeObjects
		c.log.Info("comparing the schema objects at the final position (rows: --no-verify)")
	} else {
		c.log.Info("verifying at the final position")
	}
	rep, err := verify.Run(ctx, cfg)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	c.res.VerifySummary = rep.Summary()
	if !rep.Equal() {
		var b strings.Builder
		_ = rep.Format(&b)
		return fmt.Errorf("verify found differences at %s%s, so the target cannot take over:\n%s", c.res.SourceGTID,
			namedObjects(rep), b.String())
	}
	for _, t := range rep.Tables {
		if t.Status == verify.StatusError {
			return fmt.Errorf("verify could not compare %s: %s", t.Name(), t.Error)
		}
	}
	if c.cfg.NoVerify {
		c.res.Verify = "skipped"
		return position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{position.CutoverVerified: "skipped"})
	}
	c.res.Verify, c.res.Verified = "equal", true
	return position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{position.CutoverVerified: "equal"})
}

// namedObjects names the objects that differ, for the first line of the
// error.
func namedObjects(rep *verify.Report) string {
	var names []string
	for _, o := range rep.DifferingObjects() {
		names = append(names, o.Label()+" ("+string(o.Status)+")")
	}
	if len(names) == 0 {
		return ""
	}
	return " in " + strings.Join(names, ", ")
}

// handOver commits the cut-over: the source must still be at P; the
// definitions go to DeferredOut first (a failure there still rolls back).
func (c *cut) handOver(ctx context.Context, p gtid.Set) error {
	now, err := sourcePosition(ctx, c.src, c.facts.source)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if !now.Equal(p) {
		return fmt.Errorf("the source was written after its final position %s (it is at %s): an account that bypasses read_only, "+
			"or an application that did not stop", p, now)
	}
	if c.cfg.DeferredOut != "" {
		if err := c.writeDeferred(ctx, p); err != nil {
			return err
		}
	}
	q, err := sourcePosition(ctx, c.tgt, c.facts.target)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	var ro bool
	if err := c.tgt.QueryRowContext(ctx, "SELECT @@global.read_only").Scan(&ro); err != nil {
		return fmt.Errorf("target: %w", err)
	}
	same := func(saved string) bool {
		at, err := gtid.ParseSet(saved)
		return err == nil && at.Equal(p)
	}
	if err := position.HandOver(ctx, c.tgt, c.cfg.Stream, c.token, p.String(), q.String(), ro, same); err != nil {
		return err
	}
	c.res.TargetGTID = q.String()
	c.log.Info("handed over", "source_gtid", p.String(), "target_gtid", q.String())
	return nil
}

// writeDeferred writes the source's trigger and event definitions to
// DeferredOut.
func (c *cut) writeDeferred(ctx context.Context, p gtid.Set) error {
	objs, err := c.definitions(ctx)
	if err != nil {
		return err
	}
	kept, err := position.ListDeferred(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("binlane cutover of stream %s at %s: the source's triggers and events on the replicated databases,\n"+
		"to run on the target (mysql --database=... < this file).", c.cfg.Stream, p)
	text, err := script(header, objs, kept)
	if err != nil {
		return fmt.Errorf("--deferred-out: %w", err)
	}
	if err := os.WriteFile(c.cfg.DeferredOut, []byte(text), 0o600); err != nil {
		return fmt.Errorf("--deferred-out: %w", err)
	}
	c.res.Deferred = c.cfg.DeferredOut
	return nil
}

// definitions reads the definitions of the source's triggers and events.
func (c *cut) definitions(ctx context.Context) ([]object, error) {
	objs, err := listObjects(ctx, c.src, c.cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	for i := range objs {
		if err := define(ctx, c.src, &objs[i]); err != nil {
			return nil, fmt.Errorf("source: %w", err)
		}
	}
	return objs, nil
}
