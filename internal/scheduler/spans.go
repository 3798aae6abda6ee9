package scheduler

import "github.com/binlane/binlane/internal/keyrange"

// Span is a range of one table's chunking key that a unit writes whole: a
// copied chunk's rows. Units on the same table run beside it unless they
// take the table whole, change a row in its range (Points), or touch the
// table without naming their rows by its key; so chunks of disjoint
// ranges of one table write at once.
type Span struct {
	Table uint64
	Cols  []keyrange.Column
	Range keyrange.Range
	// Strict: the target enforces a unique key of the table other than the
	// chunking key, which the chunk's rows may meet in any range (a value
	// an earlier change frees elsewhere): the span then waits for every
	// earlier unit on the table, as a table taken whole does.
	Strict bool
}

// Point is a row a unit changes in a table that has spans, by its
// chunking key (package copier computes them for the tables it copies).
type Point struct {
	Table uint64
	Key   keyrange.Key
}

// spanState is the spans of the units in flight, by table.
type spanState map[uint64][]*Unit

// addSpans orders a unit with spans after the earlier units it must
// follow, and records its spans. Later units find it through them (see
// afterSpans); a table access taken whole finds it as the table's last
// user (tableLast), which is enough: units commit in order.
func (s *Scheduler) addSpans(u *Unit) {
	for _, sp := range u.Spans {
		if e := s.tableExcl[sp.Table]; e != nil {
			s.depend(u, e)
		}
		if sp.Strict {
			s.depend(u, s.tableLast[sp.Table])
		}
		s.spans[sp.Table] = append(s.spans[sp.Table], u)
		s.tableLast[sp.Table] = u
	}
}

// afterSpans orders a unit that touches table t after the spans in flight
// on it that hold one of its points there, or after all of them when it
// names no row of t by its key.
func (s *Scheduler) afterSpans(u *Unit, t uint64) {
	spans := s.spans[t]
	if len(spans) == 0 {
		return
	}
	named := false
	for _, p := range u.Points {
		if p.Table != t {
			continue
		}
		named = true
		for _, v := range spans {
			for _, sp := range v.Spans {
				if sp.Table == t && sp.Range.Contains(sp.Cols, p.Key) {
					s.depend(u, v)
				}
			}
		}
	}
	if !named {
		for _, v := range spans {
			s.depend(u, v)
		}
	}
}

// spansCommitted forgets the spans of a unit that committed.
func (s *Scheduler) spansCommitted(u *Unit) {
	for _, sp := range u.Spans {
		list := s.spans[sp.Table]
		for i, v := range list {
			if v == u {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(s.spans, sp.Table)
		} else {
			s.spans[sp.Table] = list
		}
		if s.tableLast[sp.Table] == u {
			delete(s.tableLast, sp.Table)
		}
	}
}
