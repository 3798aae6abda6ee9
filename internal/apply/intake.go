package apply

import (
	"context"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/txn"
)

// Intake: how the coordinator turns a transaction it receives into a work
// and places its unit (see coordinator.add).

// newWork is the work of a whole transaction or of its first part, with
// its scheduler unit.
func newWork(p txn.Part) *work {
	t := p.Txn
	w := &work{t: t, body: p.Body, added: time.Now()}
	u := &w.unit
	u.Seq, u.Payload, u.Bytes = t.Seq, w, p.Bytes+256
	u.Domain, u.CommitID, u.File = t.GTID.Domain, t.CommitID, t.File
	u.LastCommitted, u.SequenceNumber = t.LastCommitted, t.SequenceNumber
	// Only MariaDB GTID domains commit independently: a MySQL source (one
	// GTID set) or a source read without GTIDs keeps one commit order.
	u.Ordered = t.GTID.Flavor != gtid.MariaDB
	return w
}

// aloneReason says why a transaction runs alone ("": it does not), and
// prepares what that needs.
func (c *coordinator) aloneReason(ctx context.Context, w *work, p txn.Part) (string, error) {
	t := p.Txn
	reason := ""
	switch {
	case !p.Last:
		// Sent in parts: its end (position, whether it rolls back) is not
		// known yet; it starts at the head and its worker writes its parts
		// as they come. The transactions after it arrive after its last
		// part, when its writeset is complete: they run beside it unless
		// they conflict with it (see seal).
		w.parts = make(chan txn.Part, 1)
		c.streaming = w
		reason = AloneTooLarge
	case t.XA != nil:
		reason = AloneXA
	case t.Savepoints || t.RolledBack:
		items, err := c.resolve(ctx, t, p.Body)
		if err != nil {
			return "", err
		}
		w.body.Items = items
		reason = AloneSavepoint
	}
	if w.body.HasStatements() && t.XA == nil {
		if err := c.addStatements(ctx, w, &reason); err != nil {
			return "", err
		}
	}
	return reason, nil
}

// place sets how the scheduler places a work's unit: alone (a barrier, or
// open at the head while its parts come), or by its writeset.
func (c *coordinator) place(ctx context.Context, w *work, reason string, bytes int) error {
	u := &w.unit
	if reason != "" {
		w.alone = true
		c.a.stats.addSerialized(reason)
	}
	switch {
	case reason == AloneTooLarge && !w.statements:
		u.Head, u.Open = true, true
		if err := c.takePart(ctx, w, &w.body); err != nil {
			return err
		}
	case reason != "":
		u.Barrier, w.barrier = true, true
		c.alone++
	}
	if w.alone && (reason != AloneSavepoint || w.statements) {
		return nil
	}
	if err := c.analyse(ctx, w); err != nil {
		return err
	}
	if w.set.Barrier != "" && !u.Barrier {
		u.Barrier = true
		c.a.stats.addSerialized(w.set.Barrier)
	}
	if bound(&w.set) {
		w.keys = rowsql.Keys{} // the spans pointed into the keys dropped
	}
	u.Set = &w.set
	// A transaction too large to apply twice starts at the head, where
	// nothing earlier can wait for it: the lock-wait monitor never rolls
	// it back (it rolls back the later of two transactions).
	u.Head = !u.Barrier && bytes >= headBytes
	return nil
}
