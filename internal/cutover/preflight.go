package cutover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/verify"
)

// PreflightError lists everything that stops a cut-over before it changes
// anything.
type PreflightError struct{ Problems []string }

func (e *PreflightError) Error() string {
	return "the cut-over cannot start:\n  - " + strings.Join(e.Problems, "\n  - ")
}

// facts is what the preflight learned; the later steps act on it.
type facts struct {
	stream position.State
	// source and target are the servers' versions and flavors, read once
	// here.
	source, target                 dsn.Server
	sourceReadOnly, targetReadOnly bool
	// seesTrx: the source account can list open transactions (PROCESS).
	seesTrx bool
	objects []object // the source's triggers and events to move
	notes   []string
}

// server is what the preflight reads of a server.
type server struct {
	dsn.Server
	readOnly bool
	serverID uint32
	logBin   bool
	// trustCreators: log_bin_trust_function_creators, without which only
	// SUPER creates or drops a trigger on a server that binlogs.
	trustCreators bool
}

func readServer(ctx context.Context, db *sql.DB) (server, error) {
	var s server
	var version string
	err := db.QueryRowContext(ctx, "SELECT VERSION(), @@global.read_only, @@global.server_id, @@global.log_bin, "+
		"@@global.log_bin_trust_function_creators").Scan(&version, &s.readOnly, &s.serverID, &s.logBin, &s.trustCreators)
	s.Server = dsn.ServerOf(version)
	return s, err
}

// triggerDDL reports a problem when the account cannot create or drop
// triggers on a server (what for says which): a server that binlogs lets
// only SUPER do it, unless log_bin_trust_function_creators is on.
func triggerDDL(s server, acc *account, role, what string, problem func(string, ...any)) {
	if s.logBin && !s.trustCreators && !acc.has("SUPER", "") {
		problem("%s: the %s binlogs, and then only SUPER may %s: SET GLOBAL log_bin_trust_function_creators = ON there for the "+
			"cut-over (and in its config file), or grant SUPER to %s, or use --deferred-out", what, role, what, acc.user)
	}
}

// maxReportAge is how old the stream's last status report may be: its
// process reports every 5 s.
const maxReportAge = 30 * time.Second

// checks is what the preflight read that the steps' privilege checks
// need, and the problems they found.
type checks struct {
	f              *facts
	src, tgt       server
	srcAcc, tgtAcc *account
	problems       []string
}

func (k *checks) problem(format string, args ...any) {
	k.problems = append(k.problems, fmt.Sprintf(format, args...))
}

// preflight checks everything the later steps need, changing nothing, and
// reports every problem at once: first what all steps need (the servers,
// the stream, the accounts), then each step's privileges.
func (c *cut) preflight(ctx context.Context) (*facts, error) {
	k := &checks{f: &facts{}}
	f := k.f
	var err error
	if k.src, err = readServer(ctx, c.src); err != nil {
		return nil, fmt.Errorf("source %s: %w", c.cfg.Source, err)
	}
	if k.tgt, err = readServer(ctx, c.tgt); err != nil {
		return nil, fmt.Errorf("target %s: %w", c.cfg.Target, err)
	}
	f.source, f.target, f.sourceReadOnly, f.targetReadOnly = k.src.Server, k.tgt.Server, k.src.readOnly, k.tgt.readOnly
	if err := c.checkStream(ctx, f, k.problem); err != nil {
		return nil, err
	}
	if k.srcAcc, err = readAccount(ctx, c.src); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	if k.tgtAcc, err = readAccount(ctx, c.tgt); err != nil {
		return nil, fmt.Errorf("target: %w", err)
	}
	if f.seesTrx, err = seesTransactions(ctx, c.src); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	for _, s := range cutSteps {
		if err := s.privileges(ctx, c, k); err != nil {
			return nil, err
		}
	}
	if len(k.problems) > 0 {
		return f, &PreflightError{Problems: k.problems}
	}
	return f, nil
}

// freezePrivileges: the source account can freeze the source the configured
// way (set read_only, see the transactions in flight).
func freezePrivileges(ctx context.Context, c *cut, k *checks) error {
	switch c.cfg.Freeze {
	case FreezeReadOnly:
		ok, err := canSetReadOnly(ctx, c.src)
		if err != nil {
			return fmt.Errorf("source: %w", err)
		}
		if !ok {
			k.problem("--freeze read-only: the source account (%s) cannot set read_only: it needs %s", k.srcAcc.user,
				readOnlyPrivilege(k.src.MariaDB()))
		}
		if !k.f.seesTrx {
			k.problem("--freeze read-only: the source account (%s) cannot see the transactions in flight, which the freeze waits for: "+
				"it needs PROCESS", k.srcAcc.user)
		}
	case FreezeNone:
		if !k.f.seesTrx {
			k.f.notes = append(k.f.notes, "the source account cannot see open transactions (PROCESS): the freeze watches the position only")
		}
	}
	return nil
}

// verifyPrivileges: both accounts can read every definition the verify at P
// compares; servers of different versions are a note.
func verifyPrivileges(ctx context.Context, c *cut, k *checks) error {
	if err := c.checkDefinitions(ctx, k.f, k.problem); err != nil {
		return err
	}
	if !c.cfg.NoVerify && k.src.Version != k.tgt.Version {
		k.f.notes = append(k.f.notes, fmt.Sprintf("the servers' versions differ (%s, %s): verify compares FLOAT, DOUBLE, JSON and geometry "+
			"values by each server's text of them", k.src.Version, k.tgt.Version))
	}
	return nil
}

// objectPrivileges: see cut.checkObjects.
func objectPrivileges(ctx context.Context, c *cut, k *checks) error {
	c.checkObjects(ctx, k.f, k.tgt, k.srcAcc, k.tgtAcc, k.problem)
	return nil
}

// targetWritablePrivileges: a read-only target's account can make it writable.
func targetWritablePrivileges(ctx context.Context, c *cut, k *checks) error {
	if !k.f.targetReadOnly {
		return nil
	}
	ok, err := canSetReadOnly(ctx, c.tgt)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if !ok {
		k.problem("the target is read-only, and its account (%s) cannot make it writable at the hand-over: it needs %s",
			k.tgtAcc.user, readOnlyPrivilege(k.tgt.MariaDB()))
	}
	return nil
}

// reversePrivileges: see cut.checkReverse (Reverse only).
func reversePrivileges(ctx context.Context, c *cut, k *checks) error {
	if c.cfg.Reverse {
		c.checkReverse(ctx, k.f, k.src, k.tgt, k.srcAcc, k.tgtAcc, k.problem)
	}
	return nil
}

// checkStream: the stream runs, is not copying, holds for nobody, and lags
// less than --max-lag by its last report.
func (c *cut) checkStream(ctx context.Context, f *facts, problem func(string, ...any)) error {
	st, ok, err := position.Load(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	if !ok {
		problem("the target has no stream %q (binlane status lists its streams)", c.cfg.Stream)
		return nil
	}
	f.stream = st
	running, err := position.Running(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	switch {
	case !running:
		problem("no binlane process runs stream %q (it is %s at %s): start binlane replicate --stream %s, and cut over once it caught up",
			c.cfg.Stream, st.State, st.GTID, c.cfg.Stream)
	case st.State == position.StateError:
		problem("stream %q stopped on an error: %s", c.cfg.Stream, st.Message)
	case st.PauseAt != "" && !(c.leftover && st.PauseBy == position.ByCutover): // a dry run's leftover is rolled back first
		problem("stream %q is held by a pause request of %s (%s): binlane resume lets it go on (with --force for a request an "+
			"online verify left)", c.cfg.Stream, st.PauseBy, st.PauseAt)
	case st.ReportedAt.IsZero() || time.Since(st.ReportedAt) > maxReportAge || st.LagMillis < 0:
		problem("stream %q has not reported its lag for %s: is its process stuck? (a process that just started reports within 5 s)",
			c.cfg.Stream, time.Since(st.ReportedAt).Round(time.Second))
	case time.Duration(st.LagMillis)*time.Millisecond > c.cfg.MaxLag:
		problem("stream %q lags %s behind the source (--max-lag %s): cut over once it caught up", c.cfg.Stream,
			time.Duration(st.LagMillis)*time.Millisecond, c.cfg.MaxLag)
	}
	tables, err := position.LoadCopy(ctx, c.tgt, c.cfg.Stream)
	if err != nil {
		return fmt.Errorf("target: %w", err)
	}
	done := 0
	for _, t := range tables {
		if t.State == position.CopyDone {
			done++
		}
	}
	if done < len(tables) {
		problem("stream %q is still copying (%d of %d tables done): cut over once the copy is done", c.cfg.Stream, done, len(tables))
	}
	return nil
}

// checkObjects lists the source's triggers and events (the source account
// must see them: TRIGGER and EVENT on the selected databases) and checks
// that the target account can create them.
func (c *cut) checkObjects(ctx context.Context, f *facts, tgt server, srcAcc, tgtAcc *account, problem func(string, ...any)) {
	schemas, err := selectedSchemas(ctx, c.src, c.cfg.Rules)
	if err != nil {
		problem("source: %v", err)
		return
	}
	if len(schemas) == 0 {
		problem("the source account (%s) sees no table the selection (--databases, --tables, --exclude) names: "+
			"give the stream's own selection, and SELECT on it", srcAcc.user)
	}
	for _, sc := range sortedKeys(schemas) {
		if miss := srcAcc.missing(sc, "TRIGGER", "EVENT"); len(miss) > 0 {
			problem("the source account (%s) needs %s on %s: without it the server hides the triggers and events the target must get",
				srcAcc.user, strings.Join(miss, " and "), sqlquote.Name(sc))
		}
	}
	if f.objects, err = listObjects(ctx, c.src, c.cfg.Rules); err != nil {
		problem("source: %v", err)
		return
	}
	if c.cfg.DeferredOut != "" {
		return // written to a file: the user runs them
	}
	need := map[string][]string{}
	definers := false
	for _, o := range f.objects {
		if !tgtAcc.has(string(o.kind), o.schema) && !contains(need[o.schema], string(o.kind)) {
			need[o.schema] = append(need[o.schema], string(o.kind))
		}
		definers = definers || !sameAccount(o.definer, tgtAcc.user)
	}
	for _, sc := range sortedKeys(need) {
		problem("the target account (%s) needs %s on %s to create the source's triggers and events there (or use --deferred-out)",
			tgtAcc.user, strings.Join(need[sc], " and "), sqlquote.Name(sc))
	}
	if f.count(kindTrigger) > 0 {
		triggerDDL(tgt, tgtAcc, "target", "create triggers", problem)
	}
	if definers && !tgtAcc.has("SUPER", "") && !tgtAcc.has("SET USER", "") && !tgtAcc.has("SET_USER_ID", "") &&
		!tgtAcc.has("SET_ANY_DEFINER", "") {
		problem("the source's triggers and events run as other accounts (DEFINER): the target account (%s) needs SET USER "+
			"(MySQL: SET_USER_ID or SET_ANY_DEFINER) to create them so, or use --deferred-out and run the file as an administrator", tgtAcc.user)
	}
}

// checkDefinitions compares the schema objects now, as the verify at the
// switch point will: a definition an account may not read is a problem
// (that verify would refuse the hand-over, after the freeze); one that
// differs is a note only, since the stream may still be applying the DDL
// that brings the two in line.
func (c *cut) checkDefinitions(ctx context.Context, f *facts, problem func(string, ...any)) error {
	rep, err := verify.Run(ctx, verify.Config{Source: c.src, Target: c.tgt, Rules: c.cfg.Rules, Scope: verify.ScopeObjects,
		AnyDefiner: c.cfg.IgnoreDefiners})
	if err != nil {
		return fmt.Errorf("compare the schema objects: %w", err)
	}
	for _, o := range rep.DifferingObjects() {
		if o.Status == verify.ObjectError {
			problem("the definition of %s cannot be read: %s (the accounts need SHOW VIEW, and SELECT ON mysql.proc, see README)",
				o.Label(), o.Error)
			continue
		}
		f.notes = append(f.notes, fmt.Sprintf("%s is %s now: the cut-over refuses to hand over unless the stream brings it in line "+
			"by the final position", o.Label(), o.Status))
	}
	return nil
}

// checkReverse: the reverse stream can be prepared and will run: the
// target as its source (binlog settings, the target account's replication
// privileges), the source as its target (the source account's privileges
// there, a free stream name).
func (c *cut) checkReverse(ctx context.Context, f *facts, src, tgt server, srcAcc, tgtAcc *account, problem func(string, ...any)) {
	wc, err := c.cfg.Target.WireConfig()
	if err == nil {
		_, err = replica.Inspect(ctx, replica.Config{Config: wc})
	}
	var pe *replica.PreflightError
	switch {
	case errors.As(err, &pe):
		for _, p := range pe.Problems {
			problem("--reverse: the target, as the reverse stream's source: %s", p)
		}
	case err != nil:
		problem("--reverse: the target, as the reverse stream's source: %v", c.cfg.Target.AnnotateTLS(err))
	}
	monitor := "BINLOG MONITOR"
	if !tgt.MariaDB() {
		monitor = "REPLICATION CLIENT"
	}
	if miss := tgtAcc.missing("", "REPLICATION SLAVE", monitor); len(miss) > 0 {
		problem("--reverse: the target account (%s) reads the target's binlog for the reverse stream: it needs %s on *.*",
			tgtAcc.user, strings.Join(miss, ", "))
	}
	schemas, _ := selectedSchemas(ctx, c.src, c.cfg.Rules)
	for _, sc := range sortedKeys(schemas) {
		if miss := srcAcc.missing(sc, streamTargetPrivileges...); len(miss) > 0 {
			problem("--reverse: the source account (%s) writes the reverse stream into %s: it needs %s there", srcAcc.user, sqlquote.Name(sc),
				strings.Join(miss, ", "))
		}
	}
	if miss := srcAcc.missing(position.Schema, "SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER"); len(miss) > 0 {
		problem("--reverse: the source account (%s) keeps the reverse stream's state on the source: it needs ALL PRIVILEGES on %s.* "+
			"(missing %s)", srcAcc.user, sqlquote.Name(position.Schema), strings.Join(miss, ", "))
	}
	if c.cfg.Freeze == FreezeReadOnly && !src.MariaDB() && !srcAcc.has("CONNECTION_ADMIN", "") && !srcAcc.has("SUPER", "") {
		problem("--reverse: the source stays read-only, and the source account (%s) must write into it: it needs CONNECTION_ADMIN", srcAcc.user)
	}
	if f.count(kindTrigger) > 0 {
		triggerDDL(src, srcAcc, "source", "drop triggers", problem)
	}
	if err := position.CheckPrepare(ctx, c.src, c.cfg.ReverseStream); err != nil {
		problem("--reverse: the source: %v (--reverse-stream)", err)
	}
	if src.serverID == tgt.serverID {
		f.notes = append(f.notes, fmt.Sprintf("the source and the target have the same server_id %d: give them different ones, "+
			"so that their GTIDs tell them apart", src.serverID))
	}
	if !tgt.logBin {
		problem("--reverse: the target has no binlog: the reverse stream reads it")
	}
}

// streamTargetPrivileges are what binlane's target account needs on each
// replicated database (the README's grants).
var streamTargetPrivileges = []string{"SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "DROP", "ALTER", "INDEX", "REFERENCES",
	"CREATE VIEW", "SHOW VIEW", "CREATE ROUTINE", "ALTER ROUTINE", "TRIGGER"}

// sameAccount compares a DEFINER with CURRENT_USER() (both user@host).
func sameAccount(definer, user string) bool {
	return strings.EqualFold(strings.ReplaceAll(definer, "`", ""), user)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
