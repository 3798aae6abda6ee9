package scheduler

// KeySet is what a unit (a transaction, or a merged group of them) writes,
// as the scheduler compares it: hashes only, so that the graph needs to
// know nothing of rows, tables or collations. Package writeset fills it
// from row changes (writeset.Builder); the applier and analyze add table
// accesses of their own (copied chunks, statements).
type KeySet struct {
	// Keys are row-level keys.
	Keys []uint64
	// Shared are row-level keys held shared: they conflict with the same
	// key in another set's Keys, not with each other (the rows referencing a
	// parent key value; the parent row a child's check locks in share mode).
	Shared []uint64
	// Tables are table-level accesses: every table touched (shared), and
	// whole tables taken exclusively where rows could not be named.
	Tables []TableAccess
	// Barrier, when set, says why the transaction must run alone.
	Barrier string
}

// TableAccess is a table-level access.
type TableAccess struct {
	Table     uint64
	Exclusive bool
}

// Reset empties the set, keeping its memory.
func (s *KeySet) Reset() {
	s.Keys, s.Shared, s.Tables, s.Barrier = s.Keys[:0], s.Shared[:0], s.Tables[:0], ""
}

// CopyFrom makes s a copy of src in arrays of their exact sizes, the keys
// and the shared keys in one: a writeset built in a reused set costs two
// allocations instead of a chain of doubling ones. Nothing of s points
// into src, which can be reset and reused; appending to s reallocates.
func (s *KeySet) CopyFrom(src *KeySet) {
	k, n := len(src.Keys), len(src.Keys)+len(src.Shared)
	var keys []uint64
	if n > 0 {
		keys = make([]uint64, n)
		copy(keys, src.Keys)
		copy(keys[k:], src.Shared)
	}
	s.Keys, s.Shared = keys[:k:k], keys[k:n:n]
	s.Tables = nil
	if len(src.Tables) > 0 {
		s.Tables = make([]TableAccess, len(src.Tables))
		copy(s.Tables, src.Tables)
	}
	s.Barrier = src.Barrier
}

// AddTable records a table access; exclusive wins over shared.
func (s *KeySet) AddTable(h uint64, exclusive bool) {
	for i := range s.Tables {
		if s.Tables[i].Table == h {
			s.Tables[i].Exclusive = s.Tables[i].Exclusive || exclusive
			return
		}
	}
	s.Tables = append(s.Tables, TableAccess{Table: h, Exclusive: exclusive})
}

// Coarsen trades the row keys for the tables they belong to, taken whole:
// every row change touches its table (and the parents it references), so
// the table accesses cover what the keys named. For transactions too large
// to keep a key per row.
func (s *KeySet) Coarsen() {
	s.Keys, s.Shared = s.Keys[:0], s.Shared[:0]
	for i := range s.Tables {
		s.Tables[i].Exclusive = true
	}
}
