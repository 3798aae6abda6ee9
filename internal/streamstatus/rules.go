package streamstatus

import (
	"fmt"
	"time"
)

// Orphaned reports whether a stream's state says a process runs it while
// none does (killed, or it lost the target): stopped, paused, cut over and
// failed streams have no process by design.
func Orphaned(d Stream) bool {
	switch d.State {
	case StateStopped, StateError, StatePaused, StateCutOver:
		return false
	}
	return !d.Alive
}

// Live is /healthz: a process runs the stream and it is not in error.
func Live(d Stream) Probe {
	switch {
	case d.State == StateError:
		return Probe{Reason: d.Stream + ": error" + lastError(d)}
	case d.State == StateStopped, d.State == StateCutOver:
		return Probe{Reason: d.Stream + ": " + d.State}
	case !d.Alive:
		return Probe{Reason: d.Stream + ": no binlane process runs it"}
	}
	return Probe{OK: true, Reason: "ok"}
}

// Ready is /readyz: the stream applies the source's changes as they come
// (not copying, not restarting) and lags less than maxLag.
func Ready(d Stream, maxLag time.Duration) Probe {
	if p := Live(d); !p.OK {
		return p
	}
	switch {
	case d.State != StateRunning && d.State != StateCaughtUp:
		return Probe{Reason: d.Stream + ": " + d.State}
	case d.LagSeconds == nil:
		return Probe{Reason: d.Stream + ": lag unknown"}
	case *d.LagSeconds >= maxLag.Seconds():
		return Probe{Reason: fmt.Sprintf("%s: lags %s behind the source (limit %s)", d.Stream, seconds(*d.LagSeconds), maxLag)}
	}
	return Probe{OK: true, Reason: "ok"}
}

// Check codes, as monitoring plugins (Nagios, Icinga, Sensu) exit.
const (
	OK       = 0
	Warning  = 1
	Critical = 2
	Unknown  = 3
)

// CodeName is the plugin's word for a code.
func CodeName(code int) string {
	return [...]string{"OK", "WARNING", "CRITICAL", "UNKNOWN"}[code]
}

// CheckLimits are the thresholds of a check (zero: none).
type CheckLimits struct {
	MaxLag, WarnLag time.Duration
	// StaleAfter is how old the running process's last report may be
	// before its numbers are not trusted (default 1 min).
	StaleAfter time.Duration
	Now        time.Time
}

// Check is the monitoring verdict on one stream: its code and why.
//   - critical: in error; a process should run it but none does; lag at
//     or over MaxLag;
//   - warning: stopped, paused or restarting; lag at or over WarnLag; a
//     running process that has not reported for StaleAfter;
//   - unknown: a lag threshold is set but the lag is not known;
//   - ok: otherwise (copying included).
func Check(d Stream, l CheckLimits) (int, string) {
	if l.StaleAfter <= 0 {
		l.StaleAfter = time.Minute
	}
	name := "stream " + d.Stream
	switch d.State {
	case StateError:
		return Critical, name + " is in error" + lastError(d)
	case StateStopped:
		return Warning, name + " is stopped (position saved; nothing replicates)"
	case StatePaused:
		return Warning, name + " is paused at a requested position"
	case StateCutOver:
		return OK, name + " was cut over: " + d.Note
	}
	if Orphaned(d) {
		return Critical, fmt.Sprintf("%s is %s, but no binlane process runs it%s", name, d.State, reportAge(d, l.Now))
	}
	if d.State == StateRestarting {
		return Warning, name + " is restarting" + lastError(d)
	}
	if d.ReportedAt != nil && l.Now.Sub(*d.ReportedAt) > l.StaleAfter {
		return Warning, fmt.Sprintf("%s has not reported%s", name, reportAge(d, l.Now))
	}
	lag := ""
	if d.LagSeconds != nil {
		lag = ", lag " + seconds(*d.LagSeconds)
	}
	held := ""
	if d.Held != "" {
		held = "; held: " + d.Held
	}
	switch {
	case (l.MaxLag > 0 || l.WarnLag > 0) && d.LagSeconds == nil:
		return Unknown, name + " is " + d.State + ", lag unknown" + held
	case l.MaxLag > 0 && *d.LagSeconds >= l.MaxLag.Seconds():
		return Critical, fmt.Sprintf("%s is %s%s (limit %s)%s", name, d.State, lag, l.MaxLag, held)
	case l.WarnLag > 0 && *d.LagSeconds >= l.WarnLag.Seconds():
		return Warning, fmt.Sprintf("%s is %s%s (warning at %s)%s", name, d.State, lag, l.WarnLag, held)
	}
	return OK, name + " is " + d.State + lag + held
}

// Worst orders codes as monitoring plugins do: critical, warning, unknown,
// ok.
func Worst(a, b int) int {
	rank := func(c int) int { return [...]int{0, 2, 3, 1}[c] }
	if rank(b) > rank(a) {
		return b
	}
	return a
}

func lastError(d Stream) string {
	if d.LastError == nil || d.LastError.Message == "" {
		return ""
	}
	return ": " + d.LastError.Message
}

func reportAge(d Stream, now time.Time) string {
	if d.ReportedAt == nil {
		return ""
	}
	return fmt.Sprintf(" (last report %s ago)", now.Sub(*d.ReportedAt).Round(time.Second))
}

func seconds(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Millisecond).String()
}
