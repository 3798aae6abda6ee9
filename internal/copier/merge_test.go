package copier

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/txn"
)

// mergeRig runs a merger between two pipes; transactions go in with in,
// what comes out is read with next.
type mergeRig struct {
	t       *testing.T
	ctx     context.Context
	m       *Merger
	in, out *txn.Pipe
}

func newMergeRig(t *testing.T) *mergeRig {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	start, _ := gtid.ParseSet("0-1-0")
	r := &mergeRig{t: t, ctx: ctx, m: NewMerger(start), in: txn.NewPipe(1 << 20), out: txn.NewPipe(1 << 20)}
	go func() { _ = r.m.Run(ctx, r.in, r.out) }()
	return r
}

// tx sends transaction 0-1-n, which starts at file:from and ends at to.
func (r *mergeRig) tx(n int, file string, from, to uint64) {
	t := &txn.Txn{GTID: gtid.GTID{Flavor: gtid.MariaDB, Domain: 0, ServerID: 1, Seq: uint64(n)}, File: file, StartPos: from, EndPos: to}
	if err := r.in.Send(r.ctx, txn.Part{Txn: t, First: true, Last: true}); err != nil {
		r.t.Fatal(err)
	}
}

// mark sends a heartbeat's place.
func (r *mergeRig) mark(file string, pos uint64) {
	if err := r.in.Send(r.ctx, txn.Part{Mark: &txn.BinlogPos{File: file, Pos: pos}}); err != nil {
		r.t.Fatal(err)
	}
}

// next names what the merger emitted next: "T<n>" or "chunk <table>".
func (r *mergeRig) next() string {
	select {
	case p := <-r.out.C():
		r.out.Taken(&p)
		if p.Abort != nil {
			return "abort"
		}
		if p.Chunk != nil {
			return "chunk " + p.Chunk.Table
		}
		return fmt.Sprintf("T%d", p.Txn.GTID.Seq)
	case <-time.After(2 * time.Second):
		return "nothing"
	}
}

func (r *mergeRig) expect(want ...string) {
	r.t.Helper()
	var got []string
	for range want {
		got = append(got, r.next())
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		r.t.Fatalf("emitted %v, want %v", got, want)
	}
}

// chunk places a chunk of table read at pos; placed reports whether the
// merger took the position (the chunk is then sent).
func (r *mergeRig) chunk(table string, pos snapshot.Position) (placed bool) {
	tk, err := r.m.Reserve(r.ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	ok, err := tk.SetPos(r.ctx, pos)
	if err != nil {
		r.t.Fatal(err)
	}
	if ok {
		go func() { _ = tk.Send(r.ctx, &txn.Chunk{Table: table}, true) }()
	}
	return ok
}

func at(file string, off uint64) snapshot.Position { return snapshot.Position{File: file, Offset: off} }

func gtids(s string) snapshot.Position {
	set, _ := gtid.ParseSet(s)
	return snapshot.Position{GTIDs: set, HasGTIDs: true}
}

const f1, f2 = "binlog.000001", "binlog.000002"

func TestMergerPlacesCoordinates(t *testing.T) {
	t.Run("at the stream's place", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.tx(2, f1, 200, 300)
		r.expect("T1", "T2")
		if !r.chunk("a", at(f1, 300)) {
			t.Fatal("a snapshot at the stream's place was refused")
		}
		r.expect("chunk a") // the stream holds everything the snapshot does
		r.tx(3, f1, 300, 400)
		r.expect("T3")
	})
	t.Run("ahead of the stream", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.expect("T1")
		if !r.chunk("a", at(f1, 400)) {
			t.Fatal("refused")
		}
		r.tx(2, f1, 200, 300) // in the snapshot
		r.tx(3, f1, 300, 400) // in the snapshot: the chunk follows it
		r.tx(4, f1, 400, 500) // not in it
		r.expect("T2", "T3", "chunk a", "T4")
	})
	t.Run("the stream passed it", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.tx(2, f1, 200, 300)
		r.expect("T1", "T2")
		if r.chunk("a", at(f1, 200)) {
			t.Fatal("a snapshot the stream passed (it lacks T2) was placed")
		}
	})
	t.Run("in the next binlog file", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.expect("T1")
		if !r.chunk("a", at(f2, 256)) { // after the rotation, before any transaction of the new file
			t.Fatal("refused")
		}
		r.tx(2, f1, 200, 300)
		r.expect("T2") // the old file's end is not the new file's start: the chunk waits
		r.tx(3, f2, 256, 400)
		r.expect("chunk a", "T3")
	})
	t.Run("GTID and coordinate tickets placed out of order", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.tx(2, f1, 200, 300)
		r.expect("T1", "T2")
		if !r.chunk("late", gtids("0-1-4")) || !r.chunk("early", at(f1, 300)) || !r.chunk("mid", at(f1, 400)) {
			t.Fatal("refused")
		}
		r.expect("chunk early")
		r.tx(3, f1, 300, 400)
		r.expect("T3", "chunk mid")
		r.tx(4, f1, 400, 500)
		r.expect("T4", "chunk late")
		r.tx(5, f1, 500, 600)
		r.expect("T5")
	})
	t.Run("an idle stream's heartbeat", func(t *testing.T) {
		r := newMergeRig(t)
		if !r.chunk("a", at(f1, 300)) { // nothing streamed yet: where is the stream?
			t.Fatal("refused")
		}
		r.mark(f1, 250) // not there yet
		if got := r.next(); got != "nothing" {
			t.Fatalf("emitted %s before the stream reached the chunk's place", got)
		}
		r.mark(f1, 300)
		r.expect("chunk a")
		if !r.chunk("b", at(f2, 256)) {
			t.Fatal("refused")
		}
		r.mark(f2, 256) // the rotation, seen by a heartbeat
		r.expect("chunk b")
	})
	t.Run("a transaction without a binlog position stops the merger", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.expect("T1")
		if !r.chunk("a", at(f1, 300)) {
			t.Fatal("refused")
		}
		r.tx(2, f1, 0, 300)
		if got := r.next(); got != "nothing" {
			t.Fatalf("emitted %s", got)
		}
	})
}

// TestMergerGivenUpTicket: a reader that gives its ticket up after SetPos
// (a failed read, or a stop while SetPos waited) blocks nothing: the stream
// goes past the ticket's place with nothing placed, and the parts of a
// chunk sent in parts before it gave up are rolled back (an abort part).
func TestMergerGivenUpTicket(t *testing.T) {
	placed := func(r *mergeRig, pos snapshot.Position) *Ticket {
		r.t.Helper()
		tk, err := r.m.Reserve(r.ctx)
		if err != nil {
			r.t.Fatal(err)
		}
		if ok, err := tk.SetPos(r.ctx, pos); !ok || err != nil {
			r.t.Fatalf("placed %v, %v", ok, err)
		}
		return tk
	}
	t.Run("nothing sent", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.expect("T1")
		tk := placed(r, at(f1, 300))
		tk.GiveUp()
		tk.GiveUp() // twice is harmless
		r.tx(2, f1, 200, 300)
		r.tx(3, f1, 300, 400)
		r.expect("T2", "T3")
	})
	t.Run("a part sent", func(t *testing.T) {
		r := newMergeRig(t)
		r.tx(1, f1, 100, 200)
		r.expect("T1")
		tk := placed(r, at(f1, 200))
		if err := tk.Send(r.ctx, &txn.Chunk{Table: "a"}, false); err != nil {
			t.Fatal(err)
		}
		tk.GiveUp()
		r.expect("chunk a", "abort")
		r.tx(2, f1, 200, 300)
		r.expect("T2")
	})
}
