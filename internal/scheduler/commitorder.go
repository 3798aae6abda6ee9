package scheduler

import "sort"

// commitOrder derives dependencies from the source's commit metadata.
//
// MariaDB: transactions of one GTID domain that share a group-commit id
// committed together on the source and may apply together; a transaction
// waits for the previous group of its domain (ordered commit makes "the
// last unit of that group" enough). Different domains are independent.
// Without a commit id a transaction waits for its domain's previous one.
//
// MySQL: a transaction with last_committed L may apply once every
// transaction with sequence_number <= L committed — again, ordered commit
// makes the latest such one enough. sequence_number restarts in every
// binlog file, so the clock resets at each file change.
type commitOrder struct {
	domains map[uint32]*domainState
	file    string
	clock   []*Unit // MySQL: uncommitted units of the current file, by SequenceNumber
}

type domainState struct {
	commitID  uint64
	prevGroup *Unit // last unit of the previous group
	last      *Unit // last unit of the domain
}

func (o *commitOrder) add(s *Scheduler, u *Unit) {
	if u.SequenceNumber > 0 || u.LastCommitted > 0 {
		o.addMySQL(s, u)
		return
	}
	d := o.domains[u.Domain]
	if d == nil {
		d = &domainState{}
		o.domains[u.Domain] = d
	}
	switch {
	case u.CommitID != 0 && u.CommitID == d.commitID:
		s.depend(u, d.prevGroup)
	default:
		d.prevGroup, d.commitID = d.last, u.CommitID
		s.depend(u, d.last)
	}
	d.last = u
}

func (o *commitOrder) addMySQL(s *Scheduler, u *Unit) {
	if u.File != o.file {
		o.file, o.clock = u.File, o.clock[:0]
		s.depend(u, s.last)
	}
	i := sort.Search(len(o.clock), func(i int) bool { return o.clock[i].SequenceNumber > u.LastCommitted })
	if i > 0 {
		s.depend(u, o.clock[i-1])
	}
	o.clock = append(o.clock, u)
}

func (o *commitOrder) committed(u *Unit) {
	for len(o.clock) > 0 && o.clock[0].state == stateCommitted {
		o.clock = o.clock[1:]
	}
	for dom, d := range o.domains {
		if d.last == u {
			delete(o.domains, dom) // nothing of the domain left in flight
		} else if d.prevGroup == u {
			d.prevGroup = nil
		}
	}
}
