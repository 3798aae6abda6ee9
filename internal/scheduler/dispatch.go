package scheduler

import "slices"

// Next returns the next batch to apply, or nil when no unit is ready. A
// batch starts with the earliest ready unit — wherever it stands, so a
// waiting unit never blocks a later independent one — and grows with the
// units that follow it in Seq order for as long as each one's dependencies
// have committed or are in the batch (a conflict inside one target
// transaction costs nothing) and the batch bounds allow. Barriers and
// retries always go alone.
func (s *Scheduler) Next() []*Unit {
	start := -1
	for i, u := range s.pending {
		if u.waiting == 0 && (!u.headOnly || u.Seq == s.committed+1) {
			start = i
			break
		}
	}
	if start < 0 {
		return nil
	}
	s.batchID++
	first := s.pending[start]
	batch := []*Unit{first}
	bytes := first.Bytes
	first.batch = s.batchID // so that depsSatisfied sees the batch's members
	if !first.Barrier && !first.headOnly {
		for i := start + 1; i < len(s.pending) && len(batch) < s.cfg.MaxBatch; i++ {
			v := s.pending[i]
			if v.Seq != batch[len(batch)-1].Seq+1 || v.Barrier || v.headOnly || bytes+v.Bytes > s.cfg.MaxBatchBytes {
				break
			}
			if !s.depsSatisfied(v, s.batchID) {
				break
			}
			batch = append(batch, v)
			v.batch = s.batchID
			bytes += v.Bytes
		}
	}
	for _, u := range batch {
		u.state, u.batch = stateDispatched, s.batchID
	}
	s.pending = slices.Delete(s.pending, start, start+len(batch))
	return batch
}

// depsSatisfied reports whether every dependency of v committed or is in
// the batch being built.
func (s *Scheduler) depsSatisfied(v *Unit, batch uint64) bool {
	if v.waiting == 0 {
		return true
	}
	for _, d := range v.deps {
		if d.state != stateCommitted && d.batch != batch {
			return false
		}
	}
	return true
}

// Committed records that a batch committed. Batches commit in Seq order,
// so the batch's units are the oldest in flight.
func (s *Scheduler) Committed(batch []*Unit) {
	for _, u := range batch {
		u.state = stateCommitted
		for _, d := range u.dependents {
			d.waiting--
		}
		u.dependents, u.deps = nil, nil
		if u.Set != nil {
			for _, k := range u.Set.Keys {
				if s.keyOwner[k] == u {
					delete(s.keyOwner, k)
				}
			}
			for _, t := range u.Set.Tables {
				if t.Exclusive && s.tableExcl[t.Table] == u {
					delete(s.tableExcl, t.Table)
				}
			}
		}
		if s.barrier == u {
			s.barrier = nil
		}
		s.order.committed(u)
		if u.Seq > s.committed {
			s.committed = u.Seq
		}
		s.inflight--
		s.bytes -= u.Bytes
	}
	if s.last != nil && s.last.state == stateCommitted {
		s.last = nil
	}
}

// Requeue puts a batch that was rolled back (to let an earlier transaction
// through, or after a transient error) back into the graph. Its first unit
// then runs only at the head, when nothing earlier can still be in its way.
func (s *Scheduler) Requeue(batch []*Unit) {
	for i, u := range batch {
		u.state, u.batch = statePending, 0
		u.headOnly = i == 0
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
