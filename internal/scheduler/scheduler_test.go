package scheduler

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// unit builds a writeset unit from a compact description: "k1,k2" are row
// keys, "S:k" a row key held shared, "T:x" a shared access to table x,
// "X:x" an exclusive one, "B" a barrier.
func unit(seq uint64, desc string) *Unit {
	u := &Unit{Seq: seq, Set: &KeySet{}, Bytes: 1}
	for _, f := range strings.Split(desc, ",") {
		switch {
		case f == "":
		case f == "B":
			u.Barrier = true
		case f == "H":
			u.Head = true
		case f == "L":
			u.Lingers = true
		case f == "O":
			u.Solo = true
		case strings.HasPrefix(f, "S:"):
			u.Set.Shared = append(u.Set.Shared, hash(f[2:]))
		case strings.HasPrefix(f, "T:"):
			u.Set.Tables = append(u.Set.Tables, TableAccess{Table: hash(f[2:])})
		case strings.HasPrefix(f, "X:"):
			u.Set.Tables = append(u.Set.Tables, TableAccess{Table: hash(f[2:]), Exclusive: true})
		default:
			u.Set.Keys = append(u.Set.Keys, hash(f))
		}
	}
	return u
}

func hash(s string) uint64 {
	var h uint64 = 1469598103934665603
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

func seqs(b []*Unit) string {
	var parts []string
	for _, u := range b {
		parts = append(parts, fmt.Sprint(u.Seq))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// run adds units and then performs steps: "next" takes a batch and expects
// it, "commit" commits the oldest dispatched batch.
func TestSchedulerScenarios(t *testing.T) {
	cases := []struct {
		name     string
		units    []string
		maxBatch int
		steps    []step
	}{
		{"independent units run at once", []string{"a", "b", "c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[3]"}, {"next", "[]"}}},
		{"conflict waits for commit", []string{"a", "a"}, 1,
			[]step{{"next", "[1]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}}},
		{"no head-of-line blocking", []string{"a", "a", "b"}, 1,
			[]step{{"next", "[1]"}, {"next", "[3]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}}},
		{"batch absorbs a conflict", []string{"a", "a", "b"}, 8,
			[]step{{"next", "[1 2 3]"}, {"next", "[]"}}},
		{"batch absorbs a non-adjacent conflict", []string{"a", "b", "a", "c"}, 8,
			[]step{{"next", "[1 2 3 4]"}}},
		{"batch stops at a dependency in flight elsewhere", []string{"a"}, 8,
			[]step{{"next", "[1]"}, {"add", "b"}, {"add", "a"}, {"add", "c"}, {"next", "[2]"}, {"next", "[4]"},
				{"commit", ""}, {"next", "[3]"}}},
		{"batch stops where a dependency is in flight elsewhere", []string{"a", "b", "b", "c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[4]"}, {"next", "[]"}}},
		{"barrier waits for everything and blocks everything", []string{"a", "B", "c"}, 8,
			[]step{{"next", "[1]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}, {"next", "[]"}, {"commit", ""}, {"next", "[3]"}}},
		{"barrier never joins a batch", []string{"a", "b", "B"}, 8,
			[]step{{"next", "[1 2]"}, {"next", "[]"}, {"commit", ""}, {"next", "[3]"}}},
		{"exclusive table orders after all earlier", []string{"a", "T:t,b", "X:t", "T:t,c", "d"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[5]"}, {"next", "[]"}, {"commit", ""}, {"commit", ""},
				{"next", "[3]"}, {"next", "[]"}, {"commit", ""}, {"next", "[4]"}}},
		// Copied chunks take their table exclusively; chunks of different
		// tables and work on other tables must run beside them.
		{"exclusive table runs beside other tables", []string{"T:u,a", "X:t", "X:v", "T:u,b"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[3]"}, {"next", "[4]"}}},
		{"exclusive table waits for the last earlier user of the table", []string{"T:t,a", "T:u,b", "X:t", "T:t,c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[]"}, {"commit", ""}, {"next", "[3]"}, {"next", "[]"},
				{"commit", ""}, {"commit", ""}, {"next", "[4]"}}},
		{"shared table accesses do not conflict", []string{"T:t,a", "T:t,b"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}}},
		// Children of one parent row hold its reference shared; a change
		// of the parent's key holds it exclusively.
		{"shared keys do not conflict", []string{"S:k,a", "S:k,b"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}}},
		{"an exclusive key waits for the last shared holder", []string{"S:k,a", "S:k,b", "k", "c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"next", "[4]"}, {"next", "[]"}, {"commit", ""}, {"next", "[]"},
				{"commit", ""}, {"next", "[3]"}}},
		{"a shared key waits for the exclusive holder, not for other shared ones", []string{"k", "S:k,a", "S:k,b", "S:k,c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}, {"next", "[3]"}, {"next", "[4]"}}},
		{"shared after a committed exclusive holder runs at once", []string{"k"}, 1,
			[]step{{"next", "[1]"}, {"commit", ""}, {"add", "S:k"}, {"next", "[2]"}, {"add", "k"}, {"next", "[]"},
				{"commit", ""}, {"next", "[3]"}}},
		{"batch bound", []string{"a", "b", "c"}, 2,
			[]step{{"next", "[1 2]"}, {"next", "[3]"}}},
		{"head unit waits for every earlier one, but not later ones for it", []string{"a", "b,H", "c", "b"}, 8,
			[]step{{"next", "[1]"}, {"next", "[3]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}, {"next", "[]"},
				{"commit", ""}, {"commit", ""}, {"next", "[4]"}}},
		{"head unit never joins a batch", []string{"a", "H,b", "c"}, 8,
			[]step{{"next", "[1]"}, {"commit", ""}, {"next", "[2]"}, {"next", "[3]"}}},
		// A backlog in flight: a small batch behind it waits to grow or to
		// be at the head, although little is pending.
		{"small batch waits behind a backlog in flight", []string{"a", "b", "c", "d"}, 4,
			[]step{{"next", "[1 2 3 4]"}, {"add", "e"}, {"next", "[]"}, {"commit", ""}, {"next", "[5]"}}},
		{"small batch goes out when little is in flight", []string{"a", "b"}, 4,
			[]step{{"next", "[1 2]"}, {"add", "c"}, {"next", "[3]"}}},
		{"requeued batch runs only at the head", []string{"a", "b", "c"}, 1,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"requeue", ""}, {"next", "[3]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{MaxBatch: c.maxBatch, MaxUnits: 100}, 1)
			for i, d := range c.units {
				s.Add(unit(uint64(i+1), d))
			}
			play(t, s, c.steps)
		})
	}
}

// step is one action of a scenario: "next" takes a batch and expects it
// ("[]" for none), "chained" too and expects it chained, "commit" commits
// the oldest dispatched batch, "add" adds a unit (want describes it),
// "requeue" puts back the last dispatched batch.
type step struct {
	op   string
	want string
}

func play(t *testing.T, s *Scheduler, steps []step) {
	t.Helper()
	var dispatched [][]*Unit
	for i, st := range steps {
		checkReady(t, s)
		switch st.op {
		case "next", "chained":
			b := s.Next()
			if got := seqs(b); got != st.want {
				t.Fatalf("step %d: next = %s, want %s", i, got, st.want)
			}
			if b != nil {
				if b[0].Chained() != (st.op == "chained") {
					t.Fatalf("step %d: batch %s chained = %v", i, seqs(b), b[0].Chained())
				}
				dispatched = append(dispatched, b)
			}
		case "commit":
			dispatched = commitOldest(s, dispatched)
		case "add":
			n, _ := s.InFlight()
			s.Add(unit(s.CommittedSeq()+uint64(n)+1, st.want))
		case "requeue":
			b := dispatched[len(dispatched)-1]
			dispatched = dispatched[:len(dispatched)-1]
			s.Requeue(b)
		}
	}
}

// commitOldest commits the dispatched batch with the lowest Seq and
// returns the others.
func commitOldest(s *Scheduler, dispatched [][]*Unit) [][]*Unit {
	best := 0
	for j := range dispatched {
		if dispatched[j][0].Seq < dispatched[best][0].Seq {
			best = j
		}
	}
	s.Committed(dispatched[best])
	return append(dispatched[:best], dispatched[best+1:]...)
}

// TestChain: with Config.Chain, the earliest pending units go out as a
// chained batch when no batch is ready and what they wait for is
// dispatched; at most Chain such batches at once; never a barrier, a unit
// of a copy or a retry; a batch that became ready is an ordinary one.
func TestChain(t *testing.T) {
	cases := []struct {
		name     string
		units    []string
		maxBatch int
		chain    int
		steps    []step
	}{
		{"a dependent batch chains behind the one in flight", []string{"a", "a", "a"}, 1, 1,
			[]step{{"next", "[1]"}, {"chained", "[2]"}, {"next", "[]"}, {"commit", ""}, {"next", "[]"},
				{"commit", ""}, {"next", "[3]"}}},
		{"two chained at once with Chain 2", []string{"a", "a", "a"}, 1, 2,
			[]step{{"next", "[1]"}, {"chained", "[2]"}, {"chained", "[3]"}, {"next", "[]"}}},
		{"never without Chain", []string{"a", "a"}, 1, 0,
			[]step{{"next", "[1]"}, {"next", "[]"}}},
		{"a chained batch grows over conflicts with any unit dispatched", []string{"a", "b"}, 8, 1,
			[]step{{"next", "[1 2]"}, {"add", "a"}, {"add", "b"}, {"add", "b"}, {"add", "a"}, {"chained", "[3 4 5 6]"}}},
		{"an independent unit inside the run goes out unchained first", []string{"a", "b"}, 8, 1,
			[]step{{"next", "[1 2]"}, {"add", "a"}, {"add", "c"}, {"add", "b"}, {"next", "[4]"}, {"chained", "[3]"}}},
		{"an independent ready batch goes first, unchained", []string{"a"}, 1, 1,
			[]step{{"next", "[1]"}, {"add", "a"}, {"add", "b"}, {"next", "[3]"}, {"chained", "[2]"}}},
		{"a barrier never chains", []string{"a", "B"}, 8, 1,
			[]step{{"next", "[1]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2]"}}},
		{"a chained batch stops before a barrier", []string{"a"}, 8, 1,
			[]step{{"next", "[1]"}, {"add", "a"}, {"add", "B"}, {"chained", "[2]"}}},
		{"never after a unit that lingers after its commit", []string{"X:t,L,O", "T:t", "T:t"}, 8, 1,
			[]step{{"next", "[1]"}, {"next", "[]"}, {"commit", ""}, {"next", "[2 3]"}}},
		{"a chained batch stops before a unit that waits for one that lingers", []string{"a", "X:t,L,O"}, 8, 2,
			[]step{{"next", "[1]"}, {"next", "[2]"}, {"add", "a"}, {"add", "T:t"}, {"chained", "[3]"}, {"next", "[]"}}},
		{"a requeued chained batch runs at the head, unchained", []string{"a", "a", "a"}, 1, 1,
			[]step{{"next", "[1]"}, {"chained", "[2]"}, {"requeue", ""}, {"next", "[]"}, {"commit", ""},
				{"next", "[2]"}, {"chained", "[3]"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{MaxBatch: c.maxBatch, MaxUnits: 100, Chain: c.chain}, 1)
			for i, d := range c.units {
				s.Add(unit(uint64(i+1), d))
			}
			play(t, s, c.steps)
		})
	}
}

// TestChainWaitsToGrow: under a backlog a chained batch, like any batch
// not at the head, goes out only when it is large enough to pay for its
// commit.
func TestChainWaitsToGrow(t *testing.T) {
	s := New(Config{MaxBatch: 4, MaxUnits: 100, Chain: 1}, 1)
	for i := range 5 {
		s.Add(unit(uint64(i+1), "a"))
	}
	first := s.Next()
	if seqs(first) != "[1 2 3 4]" {
		t.Fatalf("first batch %s", seqs(first))
	}
	for i := 5; i < 9; i++ {
		s.Add(unit(uint64(i+1), "b"))
	}
	// Pending: 5 (waits for 4), 6-9 (ready, independent of 5): the ready
	// run 6-9 is a full batch and goes first.
	if b := s.Next(); seqs(b) != "[6 7 8 9]" || b[0].Chained() {
		t.Fatalf("second batch %s", seqs(b))
	}
	for i := 9; i < 12; i++ {
		s.Add(unit(uint64(i+1), "a"))
	}
	// Pending 5, 10-12, all behind batch 1; 8 pending of MaxBatch 4 is a
	// backlog: the chained run 5 alone is too small (5 and 10 are not
	// contiguous), and nothing else is ready.
	if b := s.Next(); b != nil {
		t.Fatalf("held-back chained batch dispatched: %s", seqs(b))
	}
}

// TestOpenUnit: a transaction that arrives in parts joins the graph before
// its writeset is known, runs at the head, and once sealed holds back only
// the later units that conflict with it.
func TestOpenUnit(t *testing.T) {
	s := New(Config{MaxBatch: 8, MaxUnits: 100}, 1)
	s.Add(unit(1, "a"))
	big := &Unit{Seq: 2, Head: true, Open: true, Bytes: 1}
	s.Add(big)
	first := s.Next()
	if seqs(first) != "[1]" {
		t.Fatalf("next = %s", seqs(first))
	}
	if b := s.Next(); b != nil {
		t.Fatalf("the open unit ran before the head: %s", seqs(b))
	}
	s.Committed(first)
	if b := s.Next(); seqs(b) != "[2]" {
		t.Fatalf("next = %s, want the open unit at the head", seqs(b))
	}
	set := &KeySet{Keys: []uint64{hash("x"), hash("y")}, Tables: []TableAccess{{Table: hash("t")}}}
	s.Seal(big, set)
	s.Add(unit(3, "z"))
	s.Add(unit(4, "y"))
	s.Add(unit(5, "X:t"))
	if b := s.Next(); seqs(b) != "[3]" {
		t.Fatalf("next = %s: an independent unit must run beside the sealed one", seqs(b))
	}
	if b := s.Next(); b != nil {
		t.Fatalf("a unit conflicting with the sealed one ran: %s", seqs(b))
	}
	s.Committed([]*Unit{big})
	if b := s.Next(); seqs(b) != "[4 5]" {
		t.Fatalf("next = %s", seqs(b))
	}
}

func TestWindowBound(t *testing.T) {
	s := New(Config{MaxUnits: 2, MaxBatch: 1}, 1)
	s.Add(unit(1, "a"))
	if s.Full() {
		t.Fatal("full after one unit")
	}
	s.Add(unit(2, "b"))
	if !s.Full() {
		t.Fatal("not full at the bound")
	}
	b := s.Next()
	s.Committed(b)
	if s.Full() {
		t.Fatal("still full after a commit")
	}
	if n, _ := s.InFlight(); n != 1 {
		t.Fatalf("in flight = %d", n)
	}
}

func TestCommitOrderMariaDB(t *testing.T) {
	s := New(Config{Mode: ModeCommitOrder, MaxBatch: 1}, 1)
	// Group 10: units 1,2; group 11: unit 3; domain 1 unit 4 independent.
	for _, u := range []*Unit{
		{Seq: 1, CommitID: 10}, {Seq: 2, CommitID: 10}, {Seq: 3, CommitID: 11}, {Seq: 4, Domain: 1, CommitID: 5},
	} {
		s.Add(u)
	}
	var got []string
	for b := s.Next(); b != nil; b = s.Next() {
		got = append(got, seqs(b))
	}
	if strings.Join(got, "") != "[1][2][4]" {
		t.Fatalf("ready = %v", got)
	}
}

func TestCommitOrderMySQL(t *testing.T) {
	s := New(Config{Mode: ModeCommitOrder, MaxBatch: 1}, 1)
	// seq 1,2,3 with last_committed 0,0,2; a new file resets the clock.
	for _, u := range []*Unit{
		{Seq: 1, File: "f1", LastCommitted: 0, SequenceNumber: 1},
		{Seq: 2, File: "f1", LastCommitted: 0, SequenceNumber: 2},
		{Seq: 3, File: "f1", LastCommitted: 2, SequenceNumber: 3},
		{Seq: 4, File: "f2", LastCommitted: 0, SequenceNumber: 1},
	} {
		s.Add(u)
	}
	b1, b2, none := s.Next(), s.Next(), s.Next()
	if seqs(b1) != "[1]" || seqs(b2) != "[2]" || none != nil {
		t.Fatalf("got %s %s %s", seqs(b1), seqs(b2), seqs(none))
	}
	s.Committed(b1)
	s.Committed(b2)
	if b := s.Next(); seqs(b) != "[3]" {
		t.Fatalf("got %s", seqs(b))
	}
	if b := s.Next(); b != nil {
		t.Fatalf("unit of the next file ran before the previous file finished: %s", seqs(b))
	}
}

func TestSerialMode(t *testing.T) {
	s := New(Config{Mode: ModeSerial, MaxBatch: 4}, 1)
	s.Add(unit(1, "a"))
	s.Add(unit(2, "b"))
	if b := s.Next(); seqs(b) != "[1 2]" {
		t.Fatalf("serial units must still batch: %s", seqs(b))
	}
}

func BenchmarkAddNextCommit(b *testing.B) {
	s := New(Config{MaxUnits: 1 << 20, MaxBatch: 16}, 1)
	units := make([]*Unit, b.N)
	for i := range units {
		units[i] = &Unit{Seq: uint64(i + 1), Set: &KeySet{Keys: []uint64{uint64(i % 1000), uint64(i%1000 + 5000)}}}
	}
	b.ResetTimer()
	for _, u := range units {
		s.Add(u)
		if batch := s.Next(); batch != nil {
			s.Committed(batch)
		}
	}
}

func TestDeps(t *testing.T) {
	cases := []struct {
		name  string
		units []string
		want  []string // per unit: the Seqs it depends on
	}{
		{"independent", []string{"a", "b"}, []string{"[]", "[]"}},
		{"last holder of the key only", []string{"a", "a", "a"}, []string{"[]", "[1]", "[2]"}},
		{"two keys, two holders", []string{"a", "b", "a,b"}, []string{"[]", "[]", "[1 2]"}},
		{"one edge per holder", []string{"a,b", "a,b"}, []string{"[]", "[1]"}},
		{"barrier after the last, then everything after it", []string{"a", "b", "B", "c"}, []string{"[]", "[]", "[2]", "[3]"}},
		{"exclusive table after the last", []string{"a", "T:t,b", "X:t", "T:t,c"}, []string{"[]", "[]", "[2]", "[3]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{MaxBatch: 1, MaxUnits: 100}, 1)
			for i, d := range c.units {
				u := unit(uint64(i+1), d)
				s.Add(u)
				if got := seqs(u.Deps()); got != c.want[i] {
					t.Errorf("unit %d (%s): deps %s, want %s", i+1, d, got, c.want[i])
				}
			}
		})
	}
	// Dropped once committed; a unit added after its conflict committed has none.
	s := New(Config{MaxBatch: 1, MaxUnits: 100}, 1)
	u1, u2 := unit(1, "a"), unit(2, "a")
	s.Add(u1)
	s.Committed(s.Next())
	s.Add(u2)
	if len(u1.Deps()) != 0 || len(u2.Deps()) != 0 {
		t.Errorf("deps after commit: %s %s", seqs(u1.Deps()), seqs(u2.Deps()))
	}
}

// TestHeldBackRunsDoNotAllocate: under a backlog, Next builds and holds back
// short runs again after every Add while workers are idle; building them
// must not allocate (Next was 18% of binlane's CPU with 16 workers on the
// order-entry benchmark, a fresh slice per run part of it).
func TestHeldBackRunsDoNotAllocate(t *testing.T) {
	s := New(Config{MaxBatch: 16, MaxUnits: 1000}, 1)
	s.Add(unit(1, "hot"))
	if b := s.Next(); seqs(b) != "[1]" {
		t.Fatalf("first batch %s", seqs(b))
	}
	// 2, 4, 6, ... wait for 1 (in flight); 3, 5, 7, ... are ready runs of
	// one, too short to pay for a commit of their own under this backlog.
	for seq := uint64(2); seq <= 100; seq++ {
		desc := fmt.Sprint("k", seq)
		if seq%2 == 0 {
			desc = "hot"
		}
		s.Add(unit(seq, desc))
	}
	allocs := testing.AllocsPerRun(100, func() {
		if b := s.Next(); b != nil {
			t.Fatalf("a short run went out: %s", seqs(b))
		}
	})
	if allocs != 0 {
		t.Fatalf("Next allocated %.0f times holding back short runs", allocs)
	}
}

// TestDefaultWindow: four batches of lookahead per worker, for at most four
// workers (more held memory and found no more parallel work).
func TestDefaultWindow(t *testing.T) {
	for _, c := range []struct{ workers, batch, want int }{
		{1, 1, 64}, {1, 128, 512}, {4, 128, 2048}, {8, 128, 2048}, {16, 128, 2048}, {16, 8, 128},
	} {
		if got := DefaultWindow(c.workers, c.batch); got != c.want {
			t.Errorf("DefaultWindow(%d workers, batch %d) = %d, want %d", c.workers, c.batch, got, c.want)
		}
	}
}

// TestConflicts: Config.Conflict is told what each unit waits for an
// earlier one through, as Add finds it — never a key the unit itself
// holds twice, nor anything of a committed unit.
func TestConflicts(t *testing.T) {
	cases := []struct {
		name  string
		units []string
		want  string // per unit after the first: its conflicts
	}{
		{"row after row", []string{"a", "a,b"}, "2:a"},
		{"shared after exclusive", []string{"a", "S:a", "S:a"}, "2:a 3:a"},
		{"shared after shared", []string{"S:a", "S:a"}, ""},
		{"exclusive after shared", []string{"S:a", "a"}, "2:a"},
		{"a key held twice in one unit", []string{"b", "a,S:a"}, ""},
		{"whole table after an access, access after whole", []string{"T:x", "X:x", "T:x", "T:x"}, "2:x* 3:x* 4:x*"},
		{"shared accesses alone", []string{"T:x", "T:x"}, ""},
		{"one unit, two conflicts", []string{"a,b", "a,b"}, "2:a 2:b"},
	}
	names := map[uint64]string{}
	for _, n := range []string{"a", "b", "x"} {
		names[hash(n)] = n
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			s := New(Config{Mode: ModeWriteset, MaxUnits: 100, MaxBytes: 100, MaxBatch: 1, Conflict: func(u *Unit, c Conflict) {
				n := fmt.Sprintf("%d:%s", u.Seq, names[c.Hash])
				if c.Whole {
					n += "*"
				}
				got = append(got, n)
			}}, 1)
			for i, d := range c.units {
				s.Add(unit(uint64(i+1), d))
			}
			if g := strings.Join(got, " "); g != c.want {
				t.Errorf("conflicts %q, want %q", g, c.want)
			}
		})
	}
	// A committed unit is no conflict.
	var got []Conflict
	s := New(Config{Mode: ModeWriteset, MaxUnits: 100, MaxBytes: 100, MaxBatch: 1,
		Conflict: func(_ *Unit, c Conflict) { got = append(got, c) }}, 1)
	s.Add(unit(1, "a"))
	s.Committed(s.Next())
	s.Add(unit(2, "a"))
	if len(got) != 0 {
		t.Errorf("conflicts with a committed unit: %v", got)
	}
}

// TestDomains: with Config.Domains, batches commit out of Seq order; the
// scheduler keeps the Seq up to which everything committed, hands a
// barrier out only at that head, keeps each batch to one domain, and makes
// Ordered a unit that shares a key or table with an uncommitted unit of
// another domain (fail closed: commit order across domains stays the
// source's where they conflict).
func TestDomains(t *testing.T) {
	s := New(Config{Mode: ModeWriteset, MaxBatch: 8, Domains: true}, 1)
	add := func(seq uint64, domain uint32, desc string) *Unit {
		u := unit(seq, desc)
		u.Domain = domain
		s.Add(u)
		return u
	}
	u1 := add(1, 1, "a")
	u2 := add(2, 2, "b")
	u3 := add(3, 2, "c")
	u4 := add(4, 1, "T:t")
	u5 := add(5, 2, "T:t")
	u6 := add(6, 3, "B")
	for _, u := range []*Unit{u1, u2, u3, u4} {
		if u.Ordered {
			t.Errorf("unit %d Ordered; it shares nothing with another domain", u.Seq)
		}
	}
	if !u5.Ordered || !u6.Ordered {
		t.Errorf("Ordered: unit 5 (shares table t with unit 4, domain 1) %v, unit 6 (a barrier) %v", u5.Ordered, u6.Ordered)
	}
	if got := seqs(s.Next()); got != "[1]" {
		t.Fatalf("first batch %s, want [1] (one domain per batch)", got)
	}
	if got := seqs(s.Next()); got != "[2 3]" {
		t.Fatalf("second batch %s, want [2 3]", got)
	}
	s.Committed([]*Unit{u2, u3})
	if s.CommittedSeq() != 0 {
		t.Fatalf("everything committed up to %d; unit 1 has not", s.CommittedSeq())
	}
	if got := seqs(s.Next()); got != "[4]" {
		t.Fatalf("third batch %s, want [4]", got)
	}
	s.Committed([]*Unit{u4})
	if got := seqs(s.Next()); got != "[5]" {
		t.Fatalf("fourth batch %s, want [5]", got)
	}
	s.Committed([]*Unit{u5})
	if got := s.Next(); got != nil {
		t.Fatalf("the barrier went out before unit 1 committed: %s", seqs(got))
	}
	s.Committed([]*Unit{u1})
	if s.CommittedSeq() != 5 {
		t.Fatalf("everything committed up to %d, want 5", s.CommittedSeq())
	}
	if got := seqs(s.Next()); got != "[6]" {
		t.Fatalf("the barrier: %s, want [6]", got)
	}
}

// TestKeySetCopyFrom: a copy has the source's keys in arrays of its own,
// exactly sized, so the source can be reused and the copy extended.
func TestKeySetCopyFrom(t *testing.T) {
	var src, dst KeySet
	src.Keys = append(src.Keys, 1, 2, 3)
	src.Shared = append(src.Shared, 4)
	src.AddTable(9, true)
	src.Barrier = "b"
	dst.CopyFrom(&src)
	src.Reset()
	src.Keys = append(src.Keys, 7, 7, 7, 7)
	src.Shared = append(src.Shared, 7)
	src.AddTable(7, false)
	if !slices.Equal(dst.Keys, []uint64{1, 2, 3}) || !slices.Equal(dst.Shared, []uint64{4}) ||
		!slices.Equal(dst.Tables, []TableAccess{{9, true}}) || dst.Barrier != "b" {
		t.Fatalf("copy changed with its source: %+v", dst)
	}
	if cap(dst.Keys) != 3 || cap(dst.Shared) != 1 || cap(dst.Tables) != 1 {
		t.Fatalf("capacities %d %d %d: not exact", cap(dst.Keys), cap(dst.Shared), cap(dst.Tables))
	}
	dst.Keys = append(dst.Keys, 5) // must not write into Shared
	if dst.Shared[0] != 4 {
		t.Fatalf("appending a key overwrote a shared key")
	}
	var empty KeySet
	empty.CopyFrom(&KeySet{})
	if empty.Keys != nil || empty.Shared != nil || empty.Tables != nil {
		t.Fatalf("empty copy allocated: %+v", empty)
	}
}

// TestNextInOrder: a worker rendering ahead gets only a batch that starts
// at the earliest pending unit. Next would hand out the ready unit past
// one that waits; a worker holding both would wait for a unit only it
// could take.
func TestNextInOrder(t *testing.T) {
	cases := []struct {
		name  string
		units []string
		chain int
		want  string // NextInOrder's batch after Next took the first
	}{
		{"the next unit, ready", []string{"a", "b", "c"}, 0, "[2]"},
		{"nothing past a waiting unit", []string{"a", "a", "b"}, 0, "[]"},
		{"the waiting unit itself, chained", []string{"a", "a", "b"}, 2, "[2]"},
		{"nothing when the earliest is a barrier", []string{"a", "B"}, 2, "[]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{MaxBatch: 1, MaxUnits: 100, Chain: c.chain}, 1)
			for i, d := range c.units {
				s.Add(unit(uint64(i+1), d))
			}
			if b := s.Next(); seqs(b) != "[1]" {
				t.Fatalf("first batch %s", seqs(b))
			}
			if got := seqs(s.NextInOrder()); got != c.want {
				t.Fatalf("NextInOrder = %s, want %s", got, c.want)
			}
		})
	}
	// A batch that could still grow waits for the units to come.
	s := New(Config{MaxBatch: 4, MaxUnits: 100}, 1)
	for i := range 5 {
		s.Add(unit(uint64(i+1), fmt.Sprint("k", i)))
	}
	if b := s.Next(); seqs(b) != "[1 2 3 4]" {
		t.Fatalf("first batch %s", seqs(b))
	}
	if b := s.NextInOrder(); b != nil {
		t.Fatalf("incomplete batch handed out ahead: %s", seqs(b))
	}
	for i := 5; i < 8; i++ {
		s.Add(unit(uint64(i+1), fmt.Sprint("k", i)))
	}
	if b := s.NextInOrder(); seqs(b) != "[5 6 7 8]" {
		t.Fatalf("NextInOrder = %s, want [5 6 7 8]", seqs(b))
	}
	// Next, by contrast, hands out unit 3 past the waiting 2.
	s = New(Config{MaxBatch: 1, MaxUnits: 100}, 1)
	for i, d := range []string{"a", "a", "b"} {
		s.Add(unit(uint64(i+1), d))
	}
	s.Next()
	if b := s.Next(); seqs(b) != "[3]" {
		t.Fatalf("Next = %s, want [3]", seqs(b))
	}
}

// TestChainInOrder: with Config.ChainInOrder a chained batch goes only to
// NextInOrder (the worker that renders ahead); Next hands out ready
// batches as before, and nothing chained.
func TestChainInOrder(t *testing.T) {
	s := New(Config{MaxBatch: 1, MaxUnits: 100, Chain: 2, ChainInOrder: true}, 1)
	for i, d := range []string{"a", "a", "a", "b"} {
		s.Add(unit(uint64(i+1), d))
	}
	if b := s.Next(); seqs(b) != "[1]" {
		t.Fatalf("first batch %s", seqs(b))
	}
	if b := s.Next(); seqs(b) != "[4]" {
		t.Fatalf("Next = %s, want the ready [4]", seqs(b))
	}
	if b := s.Next(); b != nil {
		t.Fatalf("Next handed out %s (chained %v), want nothing", seqs(b), b[0].Chained())
	}
	b := s.NextInOrder()
	if seqs(b) != "[2]" || !b[0].Chained() {
		t.Fatalf("NextInOrder = %s, want [2] chained", seqs(b))
	}
	if b := s.Next(); b != nil {
		t.Fatalf("Next handed out %s after the chained batch, want nothing", seqs(b))
	}
}

// TestPendingBefore: a requeued batch is pending again before the batches
// handed out after it.
func TestPendingBefore(t *testing.T) {
	s := New(Config{MaxBatch: 1, MaxUnits: 100}, 1)
	for i, d := range []string{"a", "b", "c"} {
		s.Add(unit(uint64(i+1), d))
	}
	first, second := s.Next(), s.Next()
	if s.PendingBefore(3) || !s.PendingBefore(4) {
		t.Fatalf("before a requeue: PendingBefore(3) %v, PendingBefore(4) %v", s.PendingBefore(3), s.PendingBefore(4))
	}
	s.Requeue(second)
	if !s.PendingBefore(3) || s.PendingBefore(2) {
		t.Fatalf("after requeueing [2]: PendingBefore(3) %v, PendingBefore(2) %v", s.PendingBefore(3), s.PendingBefore(2))
	}
	_ = first
}

// TestAddEdgesDoNotAllocate: the first two edges each way of a unit live
// in the unit itself: adding a chain of units that each wait for the one
// before allocates nothing for the edges (it was two small arrays per
// transaction, a tenth of binlane's allocations on the shop benchmark).
func TestAddEdgesDoNotAllocate(t *testing.T) {
	s := New(Config{MaxBatch: 16, MaxUnits: 1 << 16}, 1)
	units := make([]*Unit, 202)
	for i := range units {
		units[i] = unit(uint64(i+1), "hot")
	}
	s.Add(units[0])
	if b := s.Next(); seqs(b) != "[1]" {
		t.Fatalf("first batch %s", seqs(b))
	}
	for _, u := range units[1:101] { // the pending list grows to its size once
		s.Add(u)
	}
	next := 101
	allocs := testing.AllocsPerRun(100, func() {
		s.Add(units[next])
		next++
	})
	if allocs != 0 {
		t.Fatalf("Add allocated %.0f times for a unit waiting for one other", allocs)
	}
	if got := seqs(units[150].Deps()); got != "[150]" {
		t.Fatalf("unit 151 waits for %s, want [150]", got)
	}
}
