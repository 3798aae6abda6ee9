// Package scheduler decides which transactions may apply at the same time.
// It keeps a dependency graph of the transactions in flight: each waits only
// for the earlier transactions it conflicts with (by writeset, or by the
// source's commit-order metadata), so a later independent transaction starts
// at once even when an earlier one is still waiting — no head-of-line
// blocking. Ready transactions are handed out in contiguous runs (batches)
// that a worker applies as one target transaction; under a backlog, short
// runs wait to grow rather than fragment the stream (see worthDispatching).
//
// Commits happen in source order (the applier enforces it), which the graph
// exploits: "committed" for a unit implies every earlier unit it could stand
// for is committed too, so waiting for all earlier units means waiting for
// the last one. With Config.Domains, MariaDB GTID domains commit each in
// their own order: a unit that is not Ordered commits after the earlier
// units of its domain and the earlier Ordered units only (see Ordered and
// markCrossDomain for why the graph's reductions stay sound).
//
// The scheduler is a pure, deterministic data structure driven by one
// goroutine (Add, Next, Committed, Requeue). It must never do I/O, block, or
// start goroutines. It owns the conflict-key type (KeySet, hashes only)
// that package writeset fills: it must never import what describes rows
// (writeset, txn, plan, binlog).
package scheduler

// Mode selects how conflicts are found.
type Mode uint8

const (
	// ModeWriteset compares the rows (keys) each transaction writes.
	ModeWriteset Mode = iota
	// ModeCommitOrder trusts the source: MariaDB's group-commit ids and GTID
	// domains, MySQL's logical clock.
	ModeCommitOrder
	// ModeSerial makes every transaction wait for the previous one.
	ModeSerial
)

func (m Mode) String() string {
	switch m {
	case ModeWriteset:
		return "writeset"
	case ModeCommitOrder:
		return "commit-order"
	}
	return "serial"
}

type unitState uint8

const (
	statePending unitState = iota
	stateDispatched
	stateCommitted
)

// Unit is one source transaction to schedule.
type Unit struct {
	Seq uint64
	// Set is the transaction's writeset (writeset mode).
	Set *KeySet
	// Barrier units run alone: after every earlier unit committed, and
	// before any later unit starts.
	Barrier bool
	// Solo units are never merged with others into one batch (copied
	// chunks: each commits with its own checkpoint); unlike a barrier they
	// run beside independent units.
	Solo bool
	// Head units start only when every earlier unit committed, alone in
	// their batch: a transaction too large to apply twice. At the head, no
	// earlier transaction can wait for one of its locks, so nothing ever
	// rolls it back to let an earlier one through; unlike a barrier, later
	// units that do not conflict with it run beside it and commit right
	// after it.
	Head bool
	// Open units join the graph before their writeset is known (a
	// transaction that arrives in parts): while open they hold back every
	// unit added after them, as a barrier does; Seal gives their writeset,
	// and units added afterwards wait only if they conflict with it.
	Open bool
	// Lingers: the unit's work goes on after its COMMIT, until the caller
	// reports it Committed (a copied chunk that then builds its table's
	// deferred indexes). A chained batch honours its dependencies by
	// waiting for every earlier commit (see Config.Chain), which such a
	// unit makes too early: a unit that depends on it never chains.
	Lingers bool
	// Spans are key ranges the unit writes whole (a copied chunk), Points
	// the rows it changes in tables that may have spans (see Span).
	Spans  []Span
	Points []Point
	// Bytes counts toward the window.
	Bytes int
	// Commit-order metadata.
	Domain         uint32
	CommitID       uint64
	LastCommitted  int64
	SequenceNumber int64
	File           string
	// Payload is the caller's (the transaction).
	Payload any
	// Ordered units commit only after every earlier unit (the caller sets
	// it for what must stay in one global order: statements, barriers,
	// sources without domains; Add sets it too, see Config.Domains). A
	// unit that is not Ordered commits after the earlier units of its
	// Domain and the earlier Ordered units. Without Config.Domains every
	// unit is Ordered.
	Ordered bool

	// deps are the units this one waited for when added; waiting counts
	// those not yet committed.
	deps       []*Unit
	waiting    int
	dependents []*Unit
	// depsIn and dependentsIn hold the first two edges of each list (most
	// transactions have one or two): the appends in depend cost nothing
	// until a third (two small arrays per transaction were a tenth of
	// binlane's allocations on the shop benchmark).
	depsIn, dependentsIn [2]*Unit
	lastDependent        *Unit // dedupes edges while a unit is being added
	state                unitState
	headOnly             bool   // a retry: dispatch only when every earlier unit committed
	batch                uint64 // dispatch id while dispatched
	chained              bool   // first unit of a chained batch (see Config.Chain)
}

// Chained reports whether the unit heads a batch handed out before every
// earlier unit committed (see Config.Chain): the batch may be prepared, but
// nothing of it may reach the target until every earlier unit committed.
func (u *Unit) Chained() bool { return u.chained }

// Blocked reports whether the unit waits for an uncommitted conflict.
func (u *Unit) Blocked() bool { return u.waiting > 0 }

// Deps returns the units this one waits for, as Add found them: the last
// earlier unit holding one of its keys, the barrier or last unit before a
// barrier or an exclusive table access, the source's previous commit group.
// Ordered commit makes a dependency on a unit one on every unit before it
// too, so the list is the reduced form of the graph. Units that had
// committed when it was added are not in it, and the list is dropped when
// the unit commits. The caller must not change it.
func (u *Unit) Deps() []*Unit { return u.deps }

// HeadOnly reports whether the unit is a retry that runs only at the head.
func (u *Unit) HeadOnly() bool { return u.headOnly }

// Config bounds the scheduler.
type Config struct {
	Mode Mode
	// MaxUnits and MaxBytes bound the units added but not committed.
	MaxUnits int
	MaxBytes int
	// MaxBatch and MaxBatchBytes bound one batch.
	MaxBatch      int
	MaxBatchBytes int
	// MaxSolo bounds the solo units (copied chunks) dispatched at once
	// (0: no bound), except the one at the head, which always goes: the
	// others wait for its commit.
	MaxSolo int
	// Domains: the applier commits each GTID domain in its own order (see
	// Unit.Ordered). The graph then cannot assume that a committed unit
	// means every earlier one committed: Add marks Ordered every unit that
	// shares a key or table with an uncommitted unit of another domain,
	// and barriers start only when everything before them committed.
	// Only writeset mode sees conflicts: in the other modes every unit
	// stays Ordered.
	Domains bool
	// Chain bounds the chained batches dispatched and not committed: when
	// no batch is ready, the earliest pending units may still go out as a
	// batch whose dependencies are all dispatched. Its worker prepares it
	// while they apply and sends it only once every earlier unit committed
	// (Unit.Chained), so the target does not idle between two dependent
	// batches while the next one is rendered. 0: never.
	Chain int
	// ChainInOrder: only NextInOrder hands out chained batches (to a
	// worker that renders its next batch while its last round trip runs),
	// Next never.
	ChainInOrder bool
	// Conflict, when set, is told each key and table through which Add
	// makes a unit wait for an earlier one in writeset mode (analyze
	// names the hot ones from it); the applier leaves it nil.
	Conflict func(u *Unit, c Conflict)
}

// Conflict is what a unit waits for an earlier one through: a key hash,
// or a table hash (Whole) where either of them takes the table whole.
type Conflict struct {
	Hash  uint64
	Whole bool
}

// Scheduler is the dependency graph. Not safe for concurrent use.
type Scheduler struct {
	cfg       Config
	inflight  int // added, not committed
	bytes     int
	pending   []*Unit // not dispatched, by Seq
	committed uint64  // every unit with Seq <= committed has committed
	// above holds the Seqs above committed that committed already (with
	// Domains, units commit out of Seq order); bounded by the window.
	above     map[uint64]struct{}
	last      *Unit    // last unit added
	barrier   *Unit    // uncommitted barrier, if any
	keys      keyTable // the last holders of each row key
	tableExcl map[uint64]*Unit
	tableLast map[uint64]*Unit // the last unit that touched each table
	spans     spanState        // units with spans in flight, by table
	order     commitOrder
	batchID   uint64
	// ready counts pending units that wait for nothing, so that Next can
	// stop scanning a long window of waiting units early.
	ready int
	// solo counts the solo units dispatched and not committed.
	solo int
	// chained counts the chained batches dispatched and not committed.
	chained int
	// free counts the uncommitted units that are not Ordered, by GTID
	// domain: markCrossDomain looks a unit's keys up only when one of
	// another domain is in flight (with one domain, never: the lookups were
	// 7% of binlane's CPU on the order-entry benchmark).
	free freeUnits
	// grown is where Next builds candidate batches. Most are held back
	// (worthDispatching) and built again after the next Add, which with
	// idle workers is after every transaction (Next was 18% of binlane's
	// CPU with 16 workers on the order-entry benchmark, 0% with one): a
	// fresh slice each time added to it. A batch handed out is a copy.
	grown []*Unit
	// version counts the changes that can make a held-back batch worth
	// dispatching, or let a batch grow: a commit, a requeue, a seal, a
	// batch handed out. Adds are not counted: see held.
	version uint64
	// held records a Next that handed out nothing. Until version
	// changes, only Adds happened since: they append to pending, so every
	// batch the scan grew and held back that stopped before the end of
	// pending would be grown and held back again. The next Next resumes
	// where those end (with the scan's budget and count of ready units as
	// they were there), and returns nil at once if, besides, no batch
	// reached the end of pending and no added unit is ready (ready
	// unchanged). With a backlog and idle workers Next runs after every
	// Add: growing up to 2*MaxBatch units each time from the start was
	// 18% of binlane's CPU (slots, 4 workers) before the early return,
	// and the rescan from the start after every ready Add 11% (grow 7%)
	// after it.
	held heldScan
}

// heldScan is Next's record of a scan that handed out nothing (held).
type heldScan struct {
	valid   bool
	version uint64
	ready   int
	// stuck: the scan ended before the end of pending, and no batch it
	// grew reached that end.
	stuck bool
	// from is where a scan resumes: the first pending unit the scan did
	// not examine, or the first of a batch that reached the end of
	// pending (it may grow with added units); budget and seen are the
	// scan's at from.
	from, budget, seen int
}

// DefaultMaxBatch is Config.MaxBatch as the applier defaults it
// (replicate's --max-batch unset), for any number of workers. Larger merged commits cost the target less per transaction
// (pinned, one thread: sysbench 49.8 against 55.5 target-µs at 128, 9-11%
// more transactions per second). More workers merged 128 until
// 2026-12-01, when a faster machine measured 256 against 128
// (bench/results 20261201-063314 to -064929, 2-3 runs each): pinned and
// non-durable, 4 workers drained 4-14% faster on every scenario (merged
// commits of 194-244 source transactions against 76-125, the target's
// CPU per transaction 5-16% lower) and 16 workers 0-13%; pinned and
// durable, 4 workers 17-28% faster but the documents 2% slower; unpinned
// (two shared cores) alike within the runs' spread, with 3-12% less CPU
// per transaction. With 2 workers, pinned: -3% to +20%. The price is
// memory: the window (DefaultWindow) doubles, peak RSS up to 1.5x (order
// entry with 16 workers 215 against 122 MiB), within --window-bytes.
const DefaultMaxBatch = 256

// DefaultWindow is the units in flight (Config.MaxUnits) the applier
// derives when none is set: four batches of lookahead per worker, counted
// for at most four workers. More workers do not get a larger window: it
// held transactions, and memory, that found no more parallel work. On the
// 2-core benchmark machine with 16 workers, order entry (non-durable):
// window 8,192, peak RSS 492 MiB, binlane 5.4 CPU-s, 0.80x of one worker's
// rate; window 2,048: 411 MiB, 3.9 CPU-s, 0.96x. Durable oltp_write_only
// merged the same 47.8 transactions per commit with either. The applier
// starts from one worker's window and grows it with the workers kept busy
// (apply's windowSizer); DefaultWindow(workers) is its ceiling.
func DefaultWindow(workers, maxBatch int) int { return max(64, min(workers, 4)*maxBatch*4) }

// New returns a scheduler whose first unit will have Seq first.
func New(cfg Config, first uint64) *Scheduler {
	if cfg.MaxUnits <= 0 {
		cfg.MaxUnits = 1000
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 256 << 20
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 1
	}
	if cfg.MaxBatchBytes <= 0 {
		cfg.MaxBatchBytes = 8 << 20
	}
	return &Scheduler{cfg: cfg, committed: first - 1, above: map[uint64]struct{}{}, tableExcl: map[uint64]*Unit{}, tableLast: map[uint64]*Unit{},
		spans: spanState{}, order: commitOrder{domains: map[uint32]*domainState{}}}
}

// SetMaxUnits changes Config.MaxUnits (a window the caller sizes as it
// goes). Units in flight beyond a smaller bound stay: Full is true until
// enough of them committed.
func (s *Scheduler) SetMaxUnits(n int) { s.cfg.MaxUnits = max(1, n) }

// Full reports whether the window has no room for another unit. A window
// with nothing in flight is never full (a single unit may exceed MaxBytes).
func (s *Scheduler) Full() bool {
	return s.inflight > 0 && (s.inflight >= s.cfg.MaxUnits || s.bytes >= s.cfg.MaxBytes)
}

// InFlight returns the number of units added and not committed, and the
// number of those not yet dispatched.
func (s *Scheduler) InFlight() (units, pending int) { return s.inflight, len(s.pending) }

// Committed returns the highest Seq up to which everything committed.
func (s *Scheduler) CommittedSeq() uint64 { return s.committed }

// BarrierPending reports whether an uncommitted barrier is in the window.
func (s *Scheduler) BarrierPending() bool { return s.barrier != nil }

// Add puts a unit (the next in Seq order) into the graph.
func (s *Scheduler) Add(u *Unit) {
	u.state, u.waiting = statePending, 0
	u.depsIn, u.dependentsIn = [2]*Unit{}, [2]*Unit{}
	u.deps, u.dependents = u.depsIn[:0], u.dependentsIn[:0]
	if !s.cfg.Domains || u.Barrier || u.Solo || len(u.Points) > 0 || s.cfg.Mode != ModeWriteset ||
		u.SequenceNumber > 0 || u.LastCommitted > 0 {
		// Fail closed: copied chunks and rows of tables being copied (spans
		// reduce their waits assuming one order), MySQL's logical clock,
		// and the modes without writesets: commit-order mode has nothing
		// to see a conflict across domains with, so only the commit order
		// settles one (as MariaDB's replica, binlane does not trust the
		// domains to be disjoint).
		u.Ordered = true
	}
	if !u.Ordered && u.Set != nil {
		s.markCrossDomain(u)
	}
	if !u.Ordered {
		s.free.add(u.Domain, 1)
	}
	if s.barrier != nil {
		s.depend(u, s.barrier)
	}
	switch {
	case u.Barrier || s.cfg.Mode == ModeSerial:
		s.depend(u, s.last)
	case s.cfg.Mode == ModeCommitOrder:
		s.order.add(s, u)
	default:
		s.addWriteset(u)
	}
	if u.Barrier || u.Open {
		s.barrier = u
	}
	// A barrier starts when every earlier unit committed: its dependency
	// on the last unit says so only when units commit in one order.
	u.headOnly = u.Head || u.Barrier && s.cfg.Domains
	s.last = u
	s.inflight++
	s.bytes += u.Bytes
	s.pending = append(s.pending, u)
	if u.waiting == 0 {
		s.ready++
	}
}

func (s *Scheduler) addWriteset(u *Unit) {
	s.addSpans(u)
	if u.Set == nil {
		return
	}
	// Keys as tables: an exclusive key waits for the last holder of any
	// kind (units commit in order), a shared one for the last exclusive
	// holder only.
	s.keys.reserve(len(u.Set.Keys) + len(u.Set.Shared))
	for i, k := range u.Set.Keys {
		s.keys.touchAhead(u.Set.Keys, i)
		h := s.keys.put(k)
		s.dependFor(u, h.last, Conflict{Hash: k})
		*h = holders{excl: u, last: u}
	}
	for i, k := range u.Set.Shared {
		s.keys.touchAhead(u.Set.Shared, i)
		h := s.keys.put(k)
		s.dependFor(u, h.excl, Conflict{Hash: k})
		h.last = u
	}
	for _, t := range u.Set.Tables {
		if t.Exclusive {
			// A whole table taken: order after every earlier unit that
			// touched the table — waiting for the last one is enough, as
			// units commit in Seq order — and make later users of the
			// table wait for this unit. Units on other tables run beside it
			// (copied chunks of different tables, above all).
			s.dependFor(u, s.tableLast[t.Table], Conflict{Hash: t.Table, Whole: true})
			s.tableExcl[t.Table] = u
		} else {
			s.dependFor(u, s.tableExcl[t.Table], Conflict{Hash: t.Table, Whole: true})
			s.afterSpans(u, t.Table)
		}
		s.tableLast[t.Table] = u
	}
}

// Seal gives an open unit its writeset: units added from now on wait for
// it only where they conflict with set. Its own dependencies stay as Add
// found them (it may already run).
func (s *Scheduler) Seal(u *Unit, set *KeySet) {
	s.version++
	u.Set, u.Open = set, false
	if s.barrier == u {
		s.barrier = nil
	}
	if s.cfg.Mode != ModeWriteset || u.Barrier || set == nil || u.state == stateCommitted {
		return
	}
	// A unit added while u was open (it waits for u already) stays the
	// owner of what it holds: later units must wait for the latest one.
	earlier := func(o *Unit) bool { return o == nil || o.Seq < u.Seq }
	s.keys.reserve(len(set.Keys) + len(set.Shared))
	for _, k := range set.Keys {
		if h := s.keys.put(k); earlier(h.excl) {
			h.excl = u
		}
	}
	for _, keys := range [][]uint64{set.Keys, set.Shared} {
		for _, k := range keys {
			if h := s.keys.put(k); earlier(h.last) {
				h.last = u
			}
		}
	}
	for _, t := range set.Tables {
		if t.Exclusive && earlier(s.tableExcl[t.Table]) {
			s.tableExcl[t.Table] = u
		}
		if earlier(s.tableLast[t.Table]) {
			s.tableLast[t.Table] = u
		}
	}
}

// markCrossDomain makes u Ordered when an uncommitted unit of another
// domain, not Ordered, last held one of its keys or tables. Why this keeps
// the graph's reductions sound (a later unit waits only for the last
// holder of a key, taking its commit to mean every earlier holder's): by
// induction, "the last holder h of k committed" implies "every earlier
// holder of k committed". When u is added and h is uncommitted, either h is
// of u's domain (u commits after it: domain order), or h is Ordered (u
// commits after every earlier Ordered unit), or h is of another domain and
// u becomes Ordered here (it commits after every earlier unit); in each
// case u's commit implies h's, hence every earlier holder's. Shared keys
// count although two shared holders do not wait for each other: an
// exclusive holder after them waits for the last one only.
func (s *Scheduler) markCrossDomain(u *Unit) {
	if s.free.total == s.free.by[u.Domain] {
		return // every unit in flight that is not Ordered is of u's domain
	}
	other := func(h *Unit) bool {
		return h != nil && h != u && h.state != stateCommitted && !h.Ordered && h.Domain != u.Domain
	}
	for _, keys := range [][]uint64{u.Set.Keys, u.Set.Shared} {
		for _, k := range keys {
			if h := s.keys.get(k); other(h.last) || other(h.excl) {
				u.Ordered = true
				return
			}
		}
	}
	for _, t := range u.Set.Tables {
		if other(s.tableLast[t.Table]) || other(s.tableExcl[t.Table]) {
			u.Ordered = true
			return
		}
	}
}

// freeUnits counts units by GTID domain (see Scheduler.free).
type freeUnits struct {
	total int
	by    map[uint32]int
}

func (f *freeUnits) add(domain uint32, n int) {
	if f.by == nil {
		f.by = map[uint32]int{}
	}
	f.total += n
	if f.by[domain] += n; f.by[domain] == 0 {
		delete(f.by, domain)
	}
}

// holders are the last unit that held a row key exclusively and the last
// that held it at all (nil: none in flight). One entry for both: a key
// costs one probe where two tables cost two.
type holders struct{ excl, last *Unit }

// dependFor makes u wait for d through c (see Config.Conflict).
func (s *Scheduler) dependFor(u, d *Unit, c Conflict) {
	if d == nil || d == u || d.state == stateCommitted {
		return
	}
	if s.cfg.Conflict != nil {
		s.cfg.Conflict(u, c)
	}
	s.depend(u, d)
}

// depend makes u wait for d unless d committed already.
func (s *Scheduler) depend(u, d *Unit) {
	if d == nil || d == u || d.state == stateCommitted || d.lastDependent == u {
		return
	}
	d.lastDependent = u
	d.dependents = append(d.dependents, u)
	u.deps = append(u.deps, d)
	u.waiting++
}
