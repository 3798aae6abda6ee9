package streamstatus

import (
	"encoding/json"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
)

// Stored is what the target keeps of a stream: its row, the statements
// kept for cut-over and the copy's tables; Alive says a process holds the
// stream's lock.
type Stored struct {
	Row      position.State
	Deferred []position.Deferred
	Copy     []position.CopyTable
	Alive    bool
}

// FromStored builds the document `binlane status` shows. The numbers of
// a running stream are those of its process's last report; the shares and
// rates are over its whole attempt. Texts must be redacted by the caller.
func FromStored(s Stored) Stream {
	row := s.Row
	d := Stream{Stream: row.Name, State: row.State, Alive: s.Alive, Position: row.GTID, Held: "",
		AppliedTransactions: ptr(row.Applied), Copy: []CopyTable{}, Deferred: []Deferred{}}
	if row.SourceID != "" || row.Flavor != "" {
		d.Source = &Source{ID: row.SourceID, Flavor: row.Flavor}
	}
	if row.LastGTID != "" || row.File != "" {
		d.LastTransaction = &LastTransaction{GTID: row.LastGTID, BinlogFile: row.File, BinlogPos: row.Pos}
		if !row.SourceTS.IsZero() {
			d.LastTransaction.SourceCommit = ptr(row.SourceTS.UTC())
		}
	}
	var rep Report
	reported := row.Stats != "" && json.Unmarshal([]byte(row.Stats), &rep) == nil && !rep.At.IsZero()
	if reported {
		d.ReportedAt = ptr(row.ReportedAt.UTC())
		d.Run = runOf(rep.Snapshot, Since(rep.Snapshot))
		if row.State == position.StateRunning && s.Alive {
			if rep.State != "" {
				d.State = rep.State // the process's finer view: copying, caught_up, restarting
			}
			d.Held, d.Restarts = rep.Held, ptr(rep.Restarts)
			if row.LagMillis >= 0 {
				d.LagSeconds = ptr(float64(row.LagMillis) / 1000)
			}
		}
	}
	d.Domains = domainsOf(row.GTID)
	if d.LagSeconds != nil {
		for _, dl := range rep.Domains {
			for i := range d.Domains {
				if d.Domains[i].Domain == dl.Domain {
					d.Domains[i].LagSeconds = ptr(dl.Lag.Seconds())
				}
			}
		}
	}
	for _, t := range s.Copy {
		ct := CopyTable{Table: t.Schema + "." + t.Table, Done: t.State == position.CopyDone, State: t.State, Rows: t.Rows,
			Estimate: t.Estimate, OnePass: t.OnePass, DeferredIndexes: []string{}}
		if ixs, err := provision.Decode(t.Deferred); err == nil {
			for _, ix := range ixs {
				ct.DeferredIndexes = append(ct.DeferredIndexes, ix.Name)
			}
		}
		d.Copy = append(d.Copy, ct)
	}
	if row.DDL.GTID != "" {
		d.Statement = &Statement{GTID: row.DDL.GTID, State: row.DDL.State}
	}
	switch {
	case row.State == position.StateCutOver:
		d.State, d.Note = StateCutOver, row.Message
	case row.Message == "":
	case row.State == position.StatePaused, row.State == position.StateStopped:
		d.Note = row.Message // where it holds; what prepared it
	default:
		d.LastError = &LastError{Message: row.Message}
	}
	if row.PauseAt != "" && row.State != position.StateCutOver {
		d.Pause = &Pause{At: row.PauseAt, By: row.PauseBy}
	}
	for _, df := range s.Deferred {
		d.Deferred = append(d.Deferred, Deferred{GTID: df.GTID, Reason: df.Reason, Statement: df.Statement})
	}
	if row.Owner.Token != "" {
		d.RunBy = row.Owner.String()
	}
	return d
}

// FromProcess builds the document the status page serves from the
// running process; iv is the interval its rates and shares cover.
func FromProcess(stream string, st Status, iv Interval, now time.Time) Stream {
	d := Stream{Stream: stream, State: st.State, Alive: st.State != StateStopped && st.State != StateError,
		ReportedAt: ptr(now.UTC()), Position: st.Position, Held: st.Throttled, Restarts: ptr(st.Restarts),
		Copy: []CopyTable{}, Deferred: []Deferred{}}
	if st.Snapshot.At.IsZero() {
		return withError(d, st)
	}
	d.LagSeconds = ptr(st.Lag.Seconds())
	for _, dl := range st.Domains {
		d.Domains = append(d.Domains, Domain{Domain: dl.Domain, GTID: dl.GTID, LagSeconds: ptr(dl.Lag.Seconds())})
	}
	d.Run = runOf(st.Snapshot, iv)
	for _, c := range st.Copy {
		d.Copy = append(d.Copy, CopyTable{Table: c.Table, Done: c.Done, Rows: c.Rows, Estimate: c.Estimate, OnePass: c.OnePass})
	}
	return withError(d, st)
}

// domainsOf lists the domains of a MariaDB position with several.
func domainsOf(pos string) []Domain {
	set, err := gtid.ParseSet(pos)
	if err != nil || set.Flavor() != gtid.MariaDB || len(set.Domains()) < 2 {
		return nil
	}
	var out []Domain
	for _, g := range set.Domains() {
		out = append(out, Domain{Domain: g.Domain, GTID: g.String()})
	}
	return out
}

func withError(d Stream, st Status) Stream {
	if st.LastError != "" {
		d.LastError = &LastError{Message: st.LastError}
		if !st.LastErrorAt.IsZero() {
			d.LastError.At = ptr(st.LastErrorAt.UTC())
		}
	}
	return d
}

// runOf is the document's view of an applier's counters over iv.
func runOf(s Snapshot, iv Interval) *Run {
	r := &Run{Started: s.Started.UTC(), IntervalSeconds: iv.Elapsed.Seconds(), Committed: s.Committed, InFlight: s.InFlight,
		Pending: s.Pending, Window: s.Window, PeakInFlight: s.PeakInFlight, LockWaitRollbacks: s.LockWaitKills, RedoneOneByOne: s.RedoneOneByOne, TransactionsPerSecond: iv.rate(iv.Transactions),
		RowsPerSecond: iv.rate(iv.Rows), RanAlone: s.Serialized}
	if r.RanAlone == nil {
		r.RanAlone = map[string]uint64{}
	}
	if iv.Workers > 0 {
		r.DependencyWait = iv.share(iv.DependencyWait) / float64(iv.Workers)
	}
	totals := make([]WorkerTotals, len(s.Workers))
	for i, w := range s.Workers {
		totals[i] = WorkerTotals{Transactions: w.Txns, Batches: w.Batches, Rows: w.Rows, Retries: w.Retries}
	}
	r.Workers = Workers(iv, totals)
	return r
}
