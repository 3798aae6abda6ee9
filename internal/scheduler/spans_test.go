package scheduler

import (
	"strconv"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/keyrange"
)

var intKey = []keyrange.Column{{Name: "id", Kind: keyrange.Int}}

// spanUnit builds a unit from a description like unit's, and also "S:t:lo:hi"
// (a copied chunk of table t over (lo, hi], "-" unbounded; solo), "S!:..."
// (the same, strict) and "P:t:k" (a change of row k of table t).
func spanUnit(seq uint64, desc string) *Unit {
	var rest []string
	u := &Unit{Seq: seq, Bytes: 1}
	bound := func(s string) keyrange.Key {
		if s == "-" {
			return nil
		}
		n, _ := strconv.ParseInt(s, 10, 64)
		return keyrange.Key{n}
	}
	for _, f := range strings.Split(desc, ",") {
		p := strings.Split(f, ":")
		switch p[0] {
		case "S", "S!":
			u.Solo = true
			u.Spans = append(u.Spans, Span{Table: hash(p[1]), Cols: intKey, Range: keyrange.Range{Lo: bound(p[2]), Hi: bound(p[3])},
				Strict: p[0] == "S!"})
		case "P":
			u.Points = append(u.Points, Point{Table: hash(p[1]), Key: bound(p[2])})
		default:
			rest = append(rest, f)
		}
	}
	if len(rest) > 0 {
		u.Set = unit(seq, strings.Join(rest, ",")).Set
		u.Barrier = unit(seq, strings.Join(rest, ",")).Barrier
	}
	return u
}

// TestSpans: chunks of one table write at once when their ranges are
// disjoint; a change waits for the chunk whose range holds its row, and
// for no other; what cannot name its rows waits for all of them.
func TestSpans(t *testing.T) {
	cases := []struct {
		name  string
		units []string
		steps []string // "next [..]" or "commit"
	}{
		{"chunks of one table at once", []string{"S:t:-:10", "S:t:10:20", "S:t:20:-"},
			[]string{"[1]", "[2]", "[3]", "[]"}},
		{"a change waits for the chunk holding its row only", []string{"S:t:-:10", "S:t:10:20", "T:t,P:t:5,a", "T:t,P:t:15,b", "T:t,P:t:25,c"},
			[]string{"[1]", "[2]", "[5]", "[]", "commit", "[3]", "[]", "commit", "[4]"}},
		{"an update across two ranges waits for both", []string{"S:t:-:10", "S:t:10:20", "T:t,P:t:5,P:t:15,a"},
			[]string{"[1]", "[2]", "[]", "commit", "[]", "commit", "[3]"}},
		{"a change without points waits for every span of its table", []string{"S:t:-:10", "S:t:10:20", "T:t,a"},
			[]string{"[1]", "[2]", "[]", "commit", "[]", "commit", "[3]"}},
		{"points in another table do not count", []string{"S:t:-:10", "T:u,P:u:5,a", "T:t,P:u:5,P:t:50,b"},
			[]string{"[1]", "[2]", "[3]"}},
		{"a table taken whole waits for the spans", []string{"S:t:-:10", "T:t,P:t:50,a", "X:t"},
			[]string{"[1]", "[2]", "[]", "commit", "[]", "commit", "[3]"}},
		{"a span waits for a table taken whole", []string{"X:t", "S:t:-:10"},
			[]string{"[1]", "[]", "commit", "[2]"}},
		{"a span does not wait for earlier changes of its table", []string{"T:t,P:t:50,a", "S:t:-:10"},
			[]string{"[1]", "[2]"}},
		{"a strict span waits for every earlier user of its table", []string{"T:t,P:t:50,a", "S!:t:-:10", "S!:t:10:20"},
			[]string{"[1]", "[]", "commit", "[2]", "[]", "commit", "[3]"}},
		{"a committed span holds nothing back", []string{"S:t:-:10"},
			[]string{"[1]", "commit", "add T:t,P:t:5,a", "[2]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(Config{MaxBatch: 1, MaxUnits: 100}, 1)
			for i, d := range c.units {
				s.Add(spanUnit(uint64(i+1), d))
			}
			var dispatched [][]*Unit
			for i, st := range c.steps {
				checkReady(t, s)
				switch {
				case st == "commit":
					dispatched = commitOldest(s, dispatched)
				case strings.HasPrefix(st, "add "):
					n, _ := s.InFlight()
					s.Add(spanUnit(s.CommittedSeq()+uint64(n)+1, st[4:]))
				default:
					b := s.Next()
					if got := seqs(b); got != st {
						t.Fatalf("step %d: next = %s, want %s", i, got, st)
					}
					if b != nil {
						dispatched = append(dispatched, b)
					}
				}
			}
			for range dispatched {
				s.Committed(dispatched[0])
				dispatched = dispatched[1:]
			}
			if len(s.spans) != 0 {
				t.Errorf("spans left after every unit committed: %v", s.spans)
			}
		})
	}
}

// TestSoloGoesOffTheHead: under a backlog, a copied chunk that is ready
// runs at once, not only when it is next to commit (merging could not make
// it larger: it runs alone anyway).
func TestSoloGoesOffTheHead(t *testing.T) {
	s := New(Config{MaxBatch: 8, MaxUnits: 100}, 1)
	s.Add(unit(1, "a"))
	if b := s.Next(); seqs(b) != "[1]" {
		t.Fatalf("first: %s", seqs(b))
	}
	for i := 2; i <= 10; i++ { // a backlog waiting for unit 1
		s.Add(unit(uint64(i), "a"))
	}
	s.Add(spanUnit(11, "S:t:-:10"))
	if b := s.Next(); seqs(b) != "[11]" {
		t.Fatalf("the chunk waited for the head: next = %s", seqs(b))
	}
}

// TestMaxSolo: at most MaxSolo copied chunks are written at once, except
// the one at the head, which always goes (the others wait for its commit).
func TestMaxSolo(t *testing.T) {
	s := New(Config{MaxBatch: 1, MaxUnits: 100, MaxSolo: 2}, 1)
	s.Add(unit(1, "a"))
	for i := 2; i <= 5; i++ {
		s.Add(spanUnit(uint64(i), "S:t"+strconv.Itoa(i)+":-:-"))
	}
	out := map[uint64][]*Unit{}
	next := func() string {
		b := s.Next()
		if b != nil {
			out[b[0].Seq] = b
		}
		return seqs(b)
	}
	var got []string
	for b := next(); b != "[]"; b = next() {
		got = append(got, b)
	}
	if strings.Join(got, "") != "[1][2][3]" {
		t.Fatalf("dispatched %v, want [1][2][3]", got)
	}
	s.Committed(out[1])
	s.Committed(out[2])
	if b := next(); b != "[4]" {
		t.Fatalf("after a chunk committed: %s", b)
	}
	s.Committed(out[3])
	// 4 is out, 5 would be the second: allowed.
	if b := next(); b != "[5]" {
		t.Fatalf("next: %s", b)
	}

	// The chunk at the head goes whatever the bound.
	s = New(Config{MaxBatch: 1, MaxUnits: 100, MaxSolo: 1}, 1)
	s.Add(unit(1, "a"))
	s.Add(spanUnit(2, "S:x:-:-"))
	s.Add(spanUnit(3, "S:y:-:-"))
	out = map[uint64][]*Unit{}
	if b := next(); b != "[1]" {
		t.Fatal(b)
	}
	if b := next(); b != "[2]" {
		t.Fatal(b)
	}
	if b := next(); b != "[]" {
		t.Fatalf("over the bound: %s", b)
	}
	s.Committed(out[1])
	// 2 is out and not at the head any more... 2 is the head now; 3 waits.
	if b := next(); b != "[]" {
		t.Fatalf("over the bound: %s", b)
	}
	// A requeued chunk gives its place back, and runs at the head.
	s.Requeue(out[2])
	if b := next(); b != "[2]" {
		t.Fatalf("after a requeue: %s", b)
	}
	s.Committed(out[2])
	if b := next(); b != "[3]" {
		t.Fatalf("after the commit: %s", b)
	}
}
