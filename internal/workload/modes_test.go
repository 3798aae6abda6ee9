package workload

import (
	"context"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
)

// newSession is a session as Run makes it, without a server.
func newSession(cfg Config, id int) *session {
	cfg = cfg.withDefaults()
	return &session{rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(id))), id: id, cfg: cfg}
}

// draw returns a session's next n transactions, slots counted from 0.
func draw(cfg Config, id, n int) [][]string {
	s := newSession(cfg, id)
	out := make([][]string, n)
	for i := range out {
		out[i] = s.transaction(int64(i))
	}
	return out
}

// TestModesDeterministic: a session's transactions depend on the seed and
// its number only.
func TestModesDeterministic(t *testing.T) {
	for _, m := range Modes() {
		t.Run(m.Schema(), func(t *testing.T) {
			cfg := Config{Mode: m, Seed: 42, Sessions: 4, Transactions: 1000, BulkEvery: 100, BulkRows: 1000}
			a, b := draw(cfg, 1, 200), draw(cfg, 1, 200)
			if !slices.EqualFunc(a, b, slices.Equal) {
				t.Fatal("the same seed and session gave different transactions")
			}
			cfg.Seed = 43
			if slices.EqualFunc(a, draw(cfg, 1, 200), slices.Equal) {
				t.Error("another seed gave the same transactions")
			}
			cfg.Seed = 42 // the same configuration but for the session
			if slices.EqualFunc(a, draw(cfg, 2, 200), slices.Equal) {
				t.Error("another session gave the same transactions")
			}
		})
	}
}

// TestModeMixes: each mode's transactions come in the shares its table
// gives (within four standard deviations of a binomial draw: the draws
// are fixed by the seed, so this cannot flake), and every transaction is
// of one of the kinds.
func TestModeMixes(t *testing.T) {
	kinds := []struct {
		name string
		re   *regexp.Regexp // on a transaction's first statement
	}{
		{"balance", regexp.MustCompile(`^UPDATE \w+\.customer SET balance`)},
		{"order", regexp.MustCompile(`^UPDATE \w+\.item SET stock`)},
		{"ship", regexp.MustCompile(`^UPDATE \w+\.orders SET status = 'shipped'`)},
		{"delete", regexp.MustCompile(`^DELETE FROM \w+\.orders WHERE id = \d+$`)},
		{"new-order", regexp.MustCompile(`^UPDATE \w+\.district SET next_o_id`)},
		{"payment", regexp.MustCompile(`^UPDATE \w+\.warehouse SET ytd`)},
		{"delivery", regexp.MustCompile(`^SET @no = NULL`)},
		{"insert-doc", regexp.MustCompile(`^INSERT INTO \w+\.doc VALUES`)},
		{"patch-doc", regexp.MustCompile(`^UPDATE \w+\.doc SET body = JSON_SET`)},
		{"replace-doc", regexp.MustCompile(`^UPDATE \w+\.doc SET body = '`)},
		{"delete-doc", regexp.MustCompile(`^DELETE FROM \w+\.doc`)},
		{"profile", regexp.MustCompile(`^UPDATE \w+\.profile SET`)},
	}
	classify := func(txn []string) string {
		for _, k := range kinds {
			if k.re.MatchString(txn[0]) {
				return k.name
			}
		}
		return "?"
	}
	for _, c := range []struct {
		mode Mode
		n    int // documents are costly to draw under -race
	}{{Shop, 8000}, {OrderEntry, 4000}, {Docs, 1500}} {
		m, n := c.mode, c.n
		t.Run(string(m), func(t *testing.T) {
			counts := map[string]int{}
			for _, txn := range draw(Config{Mode: m, Seed: 7, Sessions: 4}, 0, n) {
				counts[classify(txn)]++
			}
			total := 0
			for _, o := range modes[m].ops {
				total += o.weight
			}
			for _, o := range modes[m].ops {
				p := float64(o.weight) / float64(total)
				want, got := 100*p, 100*float64(counts[o.name])/float64(n)
				if tol := 400 * math.Sqrt(p*(1-p)/float64(n)); math.Abs(got-want) > tol {
					t.Errorf("%s: %.1f%% of transactions, want %.1f%%", o.name, got, want)
				}
				delete(counts, o.name)
			}
			if len(counts) > 0 {
				t.Errorf("transactions of no kind: %v", counts)
			}
		})
	}
}

// TestShopOrders: an order has 1-5 lines, takes their stock in key order,
// and its id is the session's own.
func TestShopOrders(t *testing.T) {
	lines := map[int]int{}
	stock := regexp.MustCompile(`^UPDATE shop\.item SET stock = stock - \d WHERE sku = '(SKU\d{7})'$`)
	for _, txn := range draw(Config{Mode: Shop, Seed: 3, Sessions: 2}, 1, 2000) {
		if !strings.HasPrefix(txn[0], "UPDATE shop.item") {
			continue
		}
		var skus []string
		for _, q := range txn {
			if m := stock.FindStringSubmatch(q); m != nil {
				skus = append(skus, m[1])
			}
		}
		if !slices.IsSorted(skus) || len(skus)+3 != len(txn) {
			t.Fatalf("order's stock updates not in key order or not one per line: %q", txn)
		}
		ins := txn[len(txn)-1]
		if !strings.HasPrefix(ins, "INSERT INTO shop.order_line VALUES (2000000") || strings.Count(ins, "), (")+1 != len(skus) {
			t.Fatalf("order lines: %s (%d items)", ins, len(skus))
		}
		lines[len(skus)]++
	}
	for n := 1; n <= 5; n++ {
		if lines[n] == 0 {
			t.Errorf("no order with %d lines (%v)", n, lines)
		}
	}
	if len(lines) != 5 {
		t.Errorf("lines per order: %v", lines)
	}
}

// TestBulkSlots: in Bulk, transaction slot BulkEvery/2 + k*BulkEvery is
// the k-th bulk change, updates and deletes in turn, each on a block of
// its own; the others are the shop's.
func TestBulkSlots(t *testing.T) {
	cfg := Config{Mode: Bulk, Seed: 1, Sessions: 3, Transactions: 1000, BulkEvery: 250, BulkRows: 5000}
	var bulk []string
	for i, txn := range draw(cfg, 0, 1000) {
		if strings.Contains(txn[0], "bulk.history") {
			if i%250 != 125 {
				t.Errorf("bulk change at slot %d", i)
			}
			bulk = append(bulk, txn[0])
		}
	}
	want := []string{
		"UPDATE bulk.history SET amount = amount + 1, note = 'rerated' WHERE id BETWEEN 1 AND 5000",
		"DELETE FROM bulk.history WHERE id BETWEEN 5001 AND 10000",
		"UPDATE bulk.history SET amount = amount + 1, note = 'rerated' WHERE id BETWEEN 10001 AND 15000",
		"DELETE FROM bulk.history WHERE id BETWEEN 15001 AND 20000",
	}
	if !slices.Equal(bulk, want) {
		t.Errorf("bulk changes:\n%s\nwant\n%s", strings.Join(bulk, "\n"), strings.Join(want, "\n"))
	}
	if b := cfg.bulkBlocks(); b != 4 {
		t.Errorf("%d blocks seeded, want 4", b)
	}
}

// TestDocumentSizes: documents are 2-20 KB.
func TestDocumentSizes(t *testing.T) {
	s := newSession(Config{Mode: Docs, Seed: 9}, 0)
	lo, hi := 1<<30, 0
	for i := range 500 {
		n := len(s.document(int64(i)))
		lo, hi = min(lo, n), max(hi, n)
	}
	if lo < 2048 || hi > 20*1024 || hi-lo < 15000 {
		t.Errorf("document sizes %d..%d bytes, want spread over 2-20 KB", lo, hi)
	}
}

// TestModesOnServer prepares every mode but Mixed (its own tests run it)
// on one server and runs a little of each: the statements are valid, the
// sessions rarely fail, and Bulk's changes of history committed.
func TestModesOnServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	db := srv.OpenT(t, "")
	ctx := context.Background()
	for _, m := range []Mode{Shop, OrderEntry, Bulk, Docs, Slots} {
		t.Run(string(m), func(t *testing.T) {
			cfg := Config{Mode: m, Seed: 5, Sessions: 3, Transactions: 150, SeedOrders: 2000, BulkEvery: 50, BulkRows: 2000}
			if err := Prepare(ctx, db, cfg); err != nil {
				t.Fatal(err)
			}
			st, err := Run(ctx, db, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c, f := st.Committed.Load(), st.Failed.Load(); c+f != 150 || f > 10 {
				t.Errorf("%d committed, %d failed", c, f)
			}
		})
	}
	// Bulk slots 25, 75 and 125: block 1 re-rated, block 2 deleted,
	// block 3 re-rated.
	var rows, rerated int
	if err := db.QueryRow("SELECT COUNT(*), SUM(note = 'rerated') FROM bulk.history").Scan(&rows, &rerated); err != nil {
		t.Fatal(err)
	}
	if rows != 4000 || rerated != 4000 {
		t.Errorf("bulk.history: %d rows, %d re-rated; want 4000 and 4000", rows, rerated)
	}
}
