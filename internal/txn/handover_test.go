package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"unsafe"

	"github.com/binlane/binlane/internal/binlog"
)

// imageTexts renders the images of the rows events of events, decoded
// alone, in the order the assembler carves them (a row's before image,
// then its after image).
func imageTexts(t *testing.T, events [][]byte) []string {
	d := binlog.NewDecoder()
	d.SetPosition("sysbench.binlog", 4)
	var out []string
	for _, raw := range events {
		ev, err := d.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := ev.Data.(*binlog.RowsEvent)
		if !ok || r.Table == nil {
			continue
		}
		vals, err := r.AppendRows(nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(vals); i += r.Columns {
			out = append(out, rowText(vals[i:i+r.Columns]))
		}
	}
	return out
}

var quiet = slog.New(slog.DiscardHandler)

func rowText(vals []binlog.Value) string {
	s := ""
	for i := range vals {
		s += fmt.Sprintf("%s:%s|", vals[i].Kind, vals[i].String())
	}
	return s
}

// partTexts renders the images of the parts' changes, in order.
func partTexts(parts []Part) []string {
	var out []string
	for _, p := range parts {
		for _, c := range p.Body.Changes {
			for _, img := range [][]binlog.Value{c.Before, c.After} {
				if img != nil {
					out = append(out, rowText(img))
				}
			}
		}
	}
	return out
}

// TestHandedOverValuesStay: consecutive parts are carved from shared
// blocks, so the assembler must never write where a part it handed over
// lies. The applier reads each part while the assembler decodes the next
// ones (the race detector sees any write to a value a part holds); every
// part's images must still be the source's once the whole stream was
// assembled, and a part's arrays must end at their length (an append by
// the receiver must copy, not write into the next part). Transactions
// whole, and cut into a part per rows event (MaxTxnBytes 1).
func TestHandedOverValuesStay(t *testing.T) {
	events := FixtureEvents(t)
	// Thousands of transactions are enough, and quick under -race. The
	// cut is at a commit (the type byte of an XID event).
	n := min(len(events), 30000)
	for n > 0 && binlog.EventType(events[n-1][4]) != binlog.EventXID {
		n--
	}
	events = events[:n]
	want := imageTexts(t, events)
	for _, tc := range []struct {
		name     string
		maxBytes int
	}{{"whole", 0}, {"parts", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			d := binlog.NewDecoder()
			d.SetPosition("sysbench.binlog", 4)
			a := NewAssembler(NewRawSource(d, events), Config{MaxTxnBytes: tc.maxBytes, Logger: quiet})
			pipe := NewPipe(1 << 30)
			done := make(chan error, 1)
			go func() {
				err := a.Run(context.Background(), pipe)
				pipe.Close()
				done <- err
			}()
			var parts []Part
			var seen []string
			for p := range pipe.C() {
				pipe.Taken(&p)
				seen = append(seen, partTexts([]Part{p})...) // read while the assembler goes on
				parts = append(parts, p)
				if cap(p.Body.Changes) != len(p.Body.Changes) || cap(p.Body.Items) != len(p.Body.Items) {
					t.Fatalf("a part's changes or items have capacity beyond their length: an append would write into the next part")
				}
				for _, c := range p.Body.Changes {
					if cap(c.Before) != len(c.Before) || cap(c.After) != len(c.After) {
						t.Fatalf("an image's capacity is beyond its length: an append would write into another's")
					}
				}
			}
			if err := <-done; !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			for name, got := range map[string][]string{"on receipt": seen, "at the end": partTexts(parts)} {
				if len(got) != len(want) {
					t.Fatalf("%s: %d images, want %d", name, len(got), len(want))
				}
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("%s: image %d is %s, want %s", name, i, got[i], want[i])
					}
				}
			}
			if tc.maxBytes == 1 && len(parts) <= len(partTexts(parts))/4 {
				t.Fatalf("%d parts: the transactions were not cut", len(parts))
			}
		})
	}
}

// TestLargeTransactionValuesNotCopied: the values of a transaction of many
// rows events are decoded into blocks, never into one array doubled by
// copying (which allocated two to three times the values and faulted in
// every new array: a fifth of binlane's CPU on a 100,000-row update). The
// bytes allocated stay close to the values' own, and every event's values
// stay where they were decoded.
func TestLargeTransactionValuesNotCopied(t *testing.T) {
	events := FixtureEvents(t)
	d := binlog.NewDecoder()
	d.SetPosition("sysbench.binlog", 4)
	var r *binlog.RowsEvent
	for _, raw := range events {
		ev, err := d.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if rows, ok := ev.Data.(*binlog.RowsEvent); ok && rows.Table != nil && rows.Kind == binlog.RowsUpdate {
			r = rows
			break
		}
	}
	if r == nil {
		t.Fatal("no update rows event in the fixture")
	}
	want, err := r.AppendRows(nil)
	if err != nil {
		t.Fatal(err)
	}
	const k = 20000
	a := NewAssembler(&script{}, Config{Logger: quiet})
	got := make([][]binlog.Value, 0, k)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range k {
		vals, err := a.decodeRows(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, vals)
	}
	runtime.ReadMemStats(&after)
	need := k * len(want) * valueSize
	alloc := after.TotalAlloc - before.TotalAlloc - uint64(k*24) // less got's own array
	t.Logf("%d rows events: %.1f MB allocated for %.1f MB of values", k, float64(alloc)/1e6, float64(need)/1e6)
	if alloc > uint64(need)*5/4+valueBlockMax*uint64(valueSize) {
		t.Fatalf("%.1f MB allocated for %.1f MB of values: the decode buffer was copied as it grew",
			float64(alloc)/1e6, float64(need)/1e6)
	}
	for i, vals := range got {
		if len(vals) != len(want) || rowText(vals) != rowText(want) {
			t.Fatalf("event %d: values %s, want %s", i, rowText(vals), rowText(want))
		}
	}
}

// TestChangesDoubled: the changes of a large transaction grow by doubling
// (append alone grows a large slice by a quarter: some forty copies of
// 100,000 changes against seventeen).
func TestChangesDoubled(t *testing.T) {
	var changes []Change
	grown := 0
	for range 100000 {
		c := cap(changes)
		changes = append(roomFor(changes, 1, firstBlock), Change{})
		if cap(changes) != c {
			grown++
		}
	}
	if grown > 18 {
		t.Fatalf("the changes were copied %d times on their way to 100,000", grown)
	}
}

// TestPartsShareBlocks: small parts handed over one after another lie side
// by side in one block of changes and one of items (no allocation of their
// own), until retainMax bytes were carved from the blocks; the next part
// then starts new ones.
func TestPartsShareBlocks(t *testing.T) {
	a := NewAssembler(&script{}, Config{Logger: quiet})
	var parts []Body
	for range 6 {
		a.body.Changes = append(roomFor(a.body.Changes, 2, a.gen.changeBlock), Change{Kind: binlog.RowsInsert}, Change{Kind: binlog.RowsDelete})
		a.addItem(Item{Kind: ItemRows, First: 0, Last: 2})
		a.bytes = retainMax / 4
		parts = append(parts, a.handOver())
	}
	next := func(x, y Body) bool { // y lies right after x in x's blocks
		at := func(p unsafe.Pointer) uintptr { return uintptr(p) }
		return at(unsafe.Pointer(&y.Changes[0]))-at(unsafe.Pointer(&x.Changes[0])) == 2*uintptr(changeSize) &&
			at(unsafe.Pointer(&y.Items[0]))-at(unsafe.Pointer(&x.Items[0])) == uintptr(itemSize)
	}
	for i := 1; i < len(parts); i++ {
		if want := i != 4; next(parts[i-1], parts[i]) != want {
			t.Errorf("part %d right after part %d in the same blocks: %v, want %v", i, i-1, !want, want)
		}
		if len(parts[i].Changes) != 2 || cap(parts[i].Changes) != 2 || cap(parts[i].Items) != 1 {
			t.Errorf("part %d: %d changes (capacity %d), items' capacity %d", i, len(parts[i].Changes), cap(parts[i].Changes), cap(parts[i].Items))
		}
	}
}

// TestGenerationSizes: the next generation's blocks hold what the last
// one carved, an eighth more, within their bounds (a 100,000-row
// transaction must not make the next small ones allocate its size); a
// large transaction's value blocks double.
func TestGenerationSizes(t *testing.T) {
	for _, tc := range []struct {
		values, changes, items int
		want                   generation
	}{
		{0, 0, 0, generation{valueBlock: valueRoom, changeBlock: blockMin, itemBlock: blockMin}},
		{1600, 40, 40, generation{valueBlock: 1800, changeBlock: 45, itemBlock: 45}},
		{1 << 20, 1 << 16, 8, generation{valueBlock: valueBlockMax, changeBlock: blockMax, itemBlock: blockMin}},
		{1 << 20, 3000, 1 << 16, generation{valueBlock: valueBlockMax, changeBlock: 3375, itemBlock: blockMax}},
	} {
		g := generation{bytes: retainMax, values: tc.values, changes: tc.changes, items: tc.items}
		g.next()
		if g != tc.want {
			t.Errorf("after %d values, %d changes, %d items: %+v, want %+v", tc.values, tc.changes, tc.items, g, tc.want)
		}
	}
	a := NewAssembler(&script{}, Config{Logger: quiet})
	a.gen.valueBlock = valueRoom
	for _, want := range []int{valueRoom, 2 * valueRoom, 4 * valueRoom} {
		a.values = a.values[:cap(a.values)] // full: the next event needs a block
		r := &binlog.RowsEvent{}
		if _, err := a.decodeRows(r); err != nil {
			t.Fatal(err)
		}
		if cap(a.values) != want {
			t.Fatalf("value block of %d, want %d", cap(a.values), want)
		}
	}
}
