package scheduler

import "slices"

// Next returns the next batch to apply, or nil when no batch is worth
// dispatching now. A batch starts with a ready unit — wherever it stands, so
// a waiting unit never blocks a later independent one — and grows with the
// units that follow it in Seq order for as long as each one's dependencies
// have committed or are in the batch (a conflict inside one target
// transaction costs nothing) and the batch bounds allow. Barriers and
// retries always go alone.
//
// Under a backlog, a small batch that is not at the head is left pending
// (see worthDispatching) and the scan goes on to later ready units, within
// a budget of examined units.
func (s *Scheduler) Next() []*Unit {
	i, budget, seen := 0, 2*s.cfg.MaxBatch, 0 // seen: ready units passed so far
	if h := s.held; h.valid && h.version == s.version {
		if h.stuck && h.ready == s.ready {
			return nil // nothing it examined changed (see Scheduler.held)
		}
		i, budget, seen = h.from, h.budget, h.seen
	}
	from := -1 // the start of a batch grown to the end of pending
	var fromBudget, fromSeen int
	for ; i < len(s.pending) && budget > 0 && seen < s.ready; i++ {
		u := s.pending[i]
		if u.waiting != 0 {
			continue
		}
		if u.headOnly && u.Seq != s.committed+1 || u.Solo && s.cfg.MaxSolo > 0 && s.solo >= s.cfg.MaxSolo && u.Seq != s.committed+1 {
			seen++
			continue
		}
		s.batchID++
		batch, bytes := s.grow(i, false)
		if s.worthDispatching(batch, bytes) {
			s.hand(i, batch) // a new version: held is stale
			return slices.Clone(batch)
		}
		if i+len(batch) == len(s.pending) {
			from, fromBudget, fromSeen = i, budget, seen
		}
		for _, v := range batch {
			v.batch = 0
			if v.waiting == 0 {
				seen++
			}
		}
		budget -= len(batch)
		i += len(batch) - 1
	}
	// A batch the loop grew to the end of pending ends the loop there
	// (i is past it). The chained batch starts at pending[0]: grown to the
	// end, it holds every pending unit or MaxBatch of them, and is worth
	// dispatching either way, so a nil from chain never left one there.
	var b []*Unit
	if !s.cfg.ChainInOrder {
		b = s.chain(s.worthDispatching)
	}
	s.held = heldScan{valid: b == nil, version: s.version, ready: s.ready, stuck: from < 0 && i < len(s.pending),
		from: i, budget: budget, seen: seen}
	if from >= 0 {
		s.held.from, s.held.budget, s.held.seen = from, fromBudget, fromSeen
	}
	return b
}

// NextInOrder is Next for a worker that will apply the batch only after
// the one it has (it renders ahead): only a batch that starts at the
// earliest pending unit, so every unit before it is dispatched or
// committed, and nothing the batch waits for needs that worker. (Next may
// hand out a ready batch past a unit still waiting; if the batch had to
// follow that unit, the worker holding it would wait for a unit only it
// could take.) The batch must also be complete: the worker sends it only
// once its current one committed, so a batch that could still grow with
// transactions not yet added waits for them (or for the worker to be
// idle, when Next hands it out as usual): a smaller batch would only cost
// the target another commit.
func (s *Scheduler) NextInOrder() []*Unit {
	if len(s.pending) == 0 {
		return nil
	}
	if u := s.pending[0]; u.waiting == 0 && !u.headOnly && !(u.Solo && s.cfg.MaxSolo > 0 && s.solo >= s.cfg.MaxSolo) {
		s.batchID++
		batch, bytes := s.grow(0, false)
		if s.complete(batch, bytes) {
			s.hand(0, batch)
			return slices.Clone(batch)
		}
		for _, v := range batch {
			v.batch = 0
		}
	}
	return s.chain(s.complete)
}

// complete reports whether a batch starting at pending[0] cannot grow:
// it is full, or something already pending stopped it. Like any batch it must also be worth dispatching.
func (s *Scheduler) complete(batch []*Unit, bytes int) bool {
	return s.worthDispatching(batch, bytes) &&
		(len(batch) >= s.cfg.MaxBatch || bytes >= s.cfg.MaxBatchBytes/2 || len(batch) < len(s.pending))
}

// PendingBefore reports whether a unit before seq waits to be dispatched
// (a batch requeued after seq's batch was handed out).
func (s *Scheduler) PendingBefore(seq uint64) bool {
	return len(s.pending) > 0 && s.pending[0].Seq < seq
}

// chain returns a chained batch (see Config.Chain), or nil. It starts at
// the earliest pending unit, so every unit before it is dispatched or
// committed: its worker, waiting for all of them before it sends anything,
// honours every dependency of the batch, whichever units they are. So
// the batch grows as any batch does, but counting dispatched units as
// satisfied dependencies. Units that must run alone, at the head or beside
// a copy (spans, points: their waits assume one order) never chain, and
// chaining stops at a GTID domain's unit that is not Ordered: the chained
// batch follows every earlier unit, as Ordered units do, and mixing would
// tie a domain to another.
func (s *Scheduler) chain(worth func(batch []*Unit, bytes int) bool) []*Unit {
	if s.chained >= s.cfg.Chain || len(s.pending) == 0 {
		return nil
	}
	first := s.pending[0]
	if first.Seq == s.committed+1 || !chainable(first) || !s.depsSatisfied(first, 0, true) {
		return nil // at the head a ready batch would have gone already
	}
	s.batchID++
	batch, bytes := s.grow(0, true)
	if !worth(batch, bytes) {
		for _, v := range batch {
			v.batch = 0
		}
		return nil
	}
	s.chained++
	first.chained = true
	s.hand(0, batch)
	return slices.Clone(batch)
}

func chainable(u *Unit) bool {
	return !(u.Barrier || u.headOnly || u.Solo || u.Open || len(u.Spans) > 0 || len(u.Points) > 0)
}

// hand marks the batch at pending[at] dispatched and takes it off pending.
func (s *Scheduler) hand(at int, batch []*Unit) {
	s.version++
	for _, v := range batch {
		v.state = stateDispatched
		if v.waiting == 0 {
			s.ready--
		}
		if v.Solo {
			s.solo++
		}
	}
	s.pending = slices.Delete(s.pending, at, at+len(batch))
}

// grow builds the batch that starts at pending[start], in s.grown;
// chained counts dispatched units as satisfied dependencies (see chain).
func (s *Scheduler) grow(start int, chained bool) (batch []*Unit, bytes int) {
	first := s.pending[start]
	clear(s.grown) // no stale unit kept reachable
	batch, bytes = append(s.grown[:0], first), first.Bytes
	first.batch = s.batchID // so that depsSatisfied sees the batch's members
	if !(first.Barrier || first.headOnly || first.Solo) {
		for i := start + 1; i < len(s.pending) && len(batch) < s.cfg.MaxBatch; i++ {
			v := s.pending[i]
			if v.Seq != batch[len(batch)-1].Seq+1 || v.Barrier || v.headOnly || v.Solo || bytes+v.Bytes > s.cfg.MaxBatchBytes {
				break
			}
			if s.cfg.Domains && (v.Domain != first.Domain || v.Ordered != first.Ordered) {
				// One domain per batch: a batch commits when all its
				// units may, so mixing would tie a domain to another.
				break
			}
			if chained && !chainable(v) || !s.depsSatisfied(v, s.batchID, chained) {
				break
			}
			batch = append(batch, v)
			v.batch = s.batchID
			bytes += v.Bytes
		}
	}
	s.grown = batch
	return batch, bytes
}

// worthDispatching decides whether a batch goes to a worker now. Commits
// happen one at a time in source order, so under a backlog the number of
// source transactions per target commit decides throughput. Handing every
// small ready run to an idle worker would split a stream of close conflicts
// (hot rows) into batches of one or two that each pay a whole commit, while
// one worker merging them would commit 128 at a time (hot-rows benchmark:
// 2,405 trx/s with 4 workers against 52,599 with 1). So a batch goes out
// when it is at the head (it would commit next anyway; a ready barrier or
// retry is always there), when it is large enough to pay for its own
// commit (half a batch: with a quarter, 16 workers on the benchmark's shop
// committed 30 source transactions at a time against one worker's 126,
// and drained slower than one), when there is no backlog (a trickle of
// transactions: latency matters more than merging), or when it is a solo
// unit, which no other unit could join (a copied chunk: holding it back
// until it is at the head made every chunk wait for the stream before it
// under a load, and serialized the copy with the stream).
//
// A backlog is what is in flight, not only what is pending: at the end of
// a burst the last few units are pending behind batches of hundreds still
// applying, and handing them to idle workers one or two at a time put
// small batches far ahead of the head that held gap locks (a unique
// index's duplicate check, a foreign key's) the head's batch then waited
// for, one after another, each until the lock monitor saw it (traps
// benchmark, 8 workers: six such waits of 150 ms in a row, the drain 2.2 s
// against 0.8). An Add only raises inflight, as it only lengthened
// pending: a batch held back stays held back until a commit (see held).
func (s *Scheduler) worthDispatching(batch []*Unit, bytes int) bool {
	minUnits := (s.cfg.MaxBatch + 1) / 2
	return batch[0].Seq == s.committed+1 || batch[0].Solo ||
		len(batch) >= minUnits || bytes >= s.cfg.MaxBatchBytes/4 ||
		s.inflight < s.cfg.MaxBatch
}

// depsSatisfied reports whether every dependency of v committed or is in
// the batch being built (or, for a chained batch, was dispatched and does
// not linger after its commit: see Unit.Lingers).
func (s *Scheduler) depsSatisfied(v *Unit, batch uint64, chained bool) bool {
	if v.waiting == 0 {
		return true
	}
	for _, d := range v.deps {
		if d.state != stateCommitted && d.batch != batch && !(chained && d.state == stateDispatched && !d.Lingers) {
			return false
		}
	}
	return true
}

// Committed records that a batch committed. Without Domains batches commit
// in Seq order, so the batch's units are the oldest in flight; with them, a
// batch may commit before earlier ones of other domains.
func (s *Scheduler) Committed(batch []*Unit) {
	s.version++
	s.unchain(batch)
	for _, u := range batch {
		if u.Solo {
			s.solo--
		}
		u.state = stateCommitted
		if !u.Ordered {
			s.free.add(u.Domain, -1)
		}
		for _, d := range u.dependents {
			d.waiting--
			if d.waiting == 0 && d.state == statePending {
				s.ready++
			}
		}
		// Dropped, inline arrays too: a committed unit that something
		// still holds must not keep the units it waited for alive.
		u.dependents, u.deps = nil, nil
		u.depsIn, u.dependentsIn = [2]*Unit{}, [2]*Unit{}
		if u.Set != nil {
			for _, keys := range [][]uint64{u.Set.Keys, u.Set.Shared} {
				for i, k := range keys {
					s.keys.touchAhead(keys, i)
					s.keys.release(k, u)
				}
			}
			for _, t := range u.Set.Tables {
				if t.Exclusive && s.tableExcl[t.Table] == u {
					delete(s.tableExcl, t.Table)
				}
				if s.tableLast[t.Table] == u {
					delete(s.tableLast, t.Table)
				}
			}
		}
		s.spansCommitted(u)
		if s.barrier == u {
			s.barrier = nil
		}
		s.order.committed(u)
		switch {
		case u.Seq == s.committed+1 && len(s.above) == 0:
			s.committed = u.Seq // in order: no bookkeeping per unit
		case u.Seq > s.committed:
			s.above[u.Seq] = struct{}{}
		}
		s.inflight--
		s.bytes -= u.Bytes
	}
	for {
		if _, ok := s.above[s.committed+1]; !ok {
			break
		}
		delete(s.above, s.committed+1)
		s.committed++
	}
	if s.last != nil && s.last.state == stateCommitted {
		s.last = nil
	}
}

// Requeue puts a batch that was rolled back (to let an earlier transaction
// through, or after a transient error) back into the graph. Its first unit
// then runs only at the head, when nothing earlier can still be in its way.
func (s *Scheduler) Requeue(batch []*Unit) {
	s.version++
	s.unchain(batch)
	for i, u := range batch {
		if u.Solo {
			s.solo--
		}
		u.state, u.batch = statePending, 0
		u.headOnly = i == 0
		if u.waiting == 0 {
			s.ready++
		}
		at, _ := slices.BinarySearchFunc(s.pending, u.Seq, func(x *Unit, seq uint64) int {
			switch {
			case x.Seq < seq:
				return -1
			case x.Seq > seq:
				return 1
			}
			return 0
		})
		s.pending = slices.Insert(s.pending, at, u)
	}
}

// unchain counts a chained batch out.
func (s *Scheduler) unchain(batch []*Unit) {
	if len(batch) > 0 && batch[0].chained {
		batch[0].chained = false
		s.chained--
	}
}
