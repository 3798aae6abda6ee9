package cutover

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
)

// reverseSuffix names a reverse stream after its forward stream; the
// reverse of a reverse stream is the forward stream again, so that cutting
// over back and forth keeps two names.
const reverseSuffix = "-reverse"

// ReverseName is the default name of stream's reverse stream.
func ReverseName(stream string) string {
	if base, ok := strings.CutSuffix(stream, reverseSuffix); ok && base != "" {
		return base
	}
	return stream + reverseSuffix
}

// ReverseCommand is the command line that runs the reverse stream: the
// cut-over's target is its source, the cut-over's source its target, with
// the same selection of tables. Passwords are not in it: they come from
// the environment (BINLANE_SOURCE_PASSWORD is then the target account's).
func ReverseCommand(source, target dsn.DSN, stream string, rules filter.Rules) string {
	args := []string{"binlane", "replicate", "--source", address(target), "--target", address(source), "--stream", stream}
	args = append(args, tlsFlags("source", target)...)
	args = append(args, tlsFlags("target", source)...)
	if len(rules.Databases) > 0 {
		args = append(args, "--databases", strings.Join(rules.Databases, ","))
	}
	if len(rules.Tables) > 0 {
		args = append(args, "--tables", strings.Join(rules.Tables, ","))
	}
	if len(rules.Exclude) > 0 {
		args = append(args, "--exclude", strings.Join(rules.Exclude, ","))
	}
	args = append(args, "--copy=never")
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return strings.Join(args, " ")
}

// address is d as a mysql:// URL without its password.
func address(d dsn.DSN) string {
	u := url.URL{Scheme: "mysql", Host: d.Addr(), Path: "/"}
	if d.User != "" {
		u.User = url.User(d.User)
	}
	return u.String()
}

func tlsFlags(role string, d dsn.DSN) []string {
	var out []string
	if d.TLS.Mode != "" {
		out = append(out, "--"+role+"-ssl-mode", string(d.TLS.Mode))
	}
	for _, f := range []struct{ name, v string }{{"ssl-ca", d.TLS.CA}, {"ssl-cert", d.TLS.Cert}, {"ssl-key", d.TLS.Key}} {
		if f.v != "" {
			out = append(out, "--"+role+"-"+f.name, f.v)
		}
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=/:.@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Timings are how long each step took.
type Timings struct {
	Preflight, Freeze, CatchUp, Verify, HandOver time.Duration
	// Frozen is how long the source refused writes (or was expected to
	// receive none): from the freeze to the end of the hand-over.
	Frozen time.Duration
}

// MarshalJSON writes milliseconds: {"preflight_ms": 12.5, ...}.
func (t Timings) MarshalJSON() ([]byte, error) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return json.Marshal(map[string]float64{"preflight_ms": ms(t.Preflight), "freeze_ms": ms(t.Freeze), "catch_up_ms": ms(t.CatchUp),
		"verify_ms": ms(t.Verify), "hand_over_ms": ms(t.HandOver), "frozen_ms": ms(t.Frozen)})
}

// String is the timings for people.
func (t Timings) String() string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("preflight %s, freeze %s, catch-up %s, verify %s, hand-over %s; writes frozen for %s",
		r(t.Preflight), r(t.Freeze), r(t.CatchUp), r(t.Verify), r(t.HandOver), r(t.Frozen))
}

// steps describes what a cut-over will do, for --dry-run and the log:
// each step's description, in order.
func steps(cfg Config, f *facts) []string {
	var out []string
	for _, s := range cutSteps {
		out = append(out, s.describe(cfg, f)...)
	}
	return out
}

func describeFreeze(cfg Config, f *facts) []string {
	switch {
	case cfg.Freeze != FreezeReadOnly:
		return []string{fmt.Sprintf("freeze: wait until the application stopped writing: the source's position unchanged for %s (up to %s)",
			cfg.Quiet, cfg.Timeout)}
	case f.sourceReadOnly:
		return []string{fmt.Sprintf("freeze: the source is read-only already; wait until no transaction with changes is open on it (up to %s)",
			cfg.Timeout)}
	}
	return []string{fmt.Sprintf("freeze: SET GLOBAL read_only = ON on the source, then wait until no transaction with changes is open on it "+
		"(up to %s)", cfg.Timeout)}
}

func describeCatchUp(cfg Config, f *facts) []string {
	return []string{fmt.Sprintf("catch up: take the source's final position P; ask stream %q (now at %s, %s behind) to apply up to P and hold there",
		cfg.Stream, f.stream.GTID, time.Duration(f.stream.LagMillis)*time.Millisecond)}
}

func describeVerify(cfg Config, _ *facts) []string {
	if cfg.NoVerify {
		return []string{"verify: rows skipped (--no-verify); compare the definitions of the tables, views, sequences, routines, triggers " +
			"and events at P"}
	}
	return []string{"verify: compare the selected tables of the source and the target at P, chunk by chunk, and the definitions of " +
		"the tables, views, sequences, routines, triggers and events"}
}

func describeHandOver(cfg Config, _ *facts) []string {
	return []string{fmt.Sprintf("hand over: record the target's own position Q and stream %q as cut over at P (a later replicate of it refuses to start)",
		cfg.Stream)}
}

// movedObjects counts the triggers and events that move.
func movedObjects(f *facts) string {
	return fmt.Sprintf("%d triggers and %d events", f.count(kindTrigger), f.count(kindEvent))
}

func describeObjects(cfg Config, f *facts) []string {
	if cfg.DeferredOut != "" {
		return []string{fmt.Sprintf("triggers and events: write the source's %s (as they are at P) to %s, for you to run on the target",
			movedObjects(f), cfg.DeferredOut)}
	}
	return []string{fmt.Sprintf("triggers and events: create the source's %s (as they are at P) on the target, replacing the events it has "+
		"(DISABLE ON SLAVE), and compare them again", movedObjects(f))}
}

func describeTargetWritable(_ Config, f *facts) []string {
	if !f.targetReadOnly {
		return nil
	}
	return []string{"make the target writable: SET GLOBAL read_only = OFF on it"}
}

func describeReverse(cfg Config, f *facts) []string {
	if !cfg.Reverse {
		return nil
	}
	var out []string
	if f.count(kindTrigger)+f.count(kindEvent) > 0 {
		out = append(out, fmt.Sprintf("reverse: drop the %s on the source, which becomes a replica (they would run twice)", movedObjects(f)))
	}
	return append(out, fmt.Sprintf("reverse: prepare stream %q on the source, from the target, starting at Q; print the replicate command that runs it",
		cfg.ReverseStream))
}

// describeDone says in what state the cut-over leaves the source.
func describeDone(cfg Config, f *facts) []string {
	switch {
	case cfg.Freeze == FreezeNone && cfg.Reverse:
		return []string{"the source stays writable: nothing but the reverse stream may write to it from now on"}
	case cfg.Freeze == FreezeReadOnly && !f.sourceReadOnly && cfg.Reverse:
		return []string{"the source stays read-only (the reverse stream writes into it with READ_ONLY ADMIN)"}
	case cfg.Freeze == FreezeReadOnly && !f.sourceReadOnly:
		return []string{"the source stays read-only"}
	}
	return nil
}
