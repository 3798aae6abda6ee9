package writeset_test

import (
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// The web shop of issue 17, planned by hand as plan.Builder plans it:
//
//	cust(id PK, email UNIQUE)
//	orders(id PK, cust_id -> cust ON DELETE CASCADE)
//	lines((order_id, ln) PK, order_id -> orders ON DELETE CASCADE, sku -> item ON UPDATE CASCADE)
//	item(sku PK, price)
//
// and one parent per other action:
//
//	snp(id PK) <- snc(id PK, p -> snp ON DELETE SET NULL ON UPDATE SET NULL)
//	sdp(id PK) <- sdc(id PK, p -> sdp ON DELETE SET DEFAULT)
//	wp(id PK, code) <- wc(id PK, code -> wp.code ON DELETE CASCADE), code not unique in wp
func ident(t string) schema.Ident { return schema.Ident{Schema: "d", Table: t} }
func tbl(t string) uint64         { return plan.TableSeed(ident(t)) }
func pk(t string, cols ...int) plan.Key {
	return plan.Key{Seed: plan.IndexSeed(ident(t), "PRIMARY"), Cols: cols, Prefix: make([]int, len(cols)), Primary: true}
}
func ref(parent string, cols ...int) plan.Parent {
	return plan.Parent{Seed: plan.IndexSeed(ident(parent), "PRIMARY"), Cols: cols, Colls: make([]schema.Collation, len(cols)), ParentTable: tbl(parent)}
}
func planned(name string, cols int, keys []plan.Key, parents []plan.Parent, children ...plan.Child) *plan.Table {
	p := &plan.Table{Name: "`d`.`" + name + "`", TableHash: tbl(name), Keys: keys, Parents: parents, Children: children,
		Referenced: len(children) > 0}
	for i := 0; i < cols; i++ {
		p.Cols = append(p.Cols, plan.Col{Name: string(rune('a' + i))})
	}
	p.RowKey = keys[0].Cols
	return p
}

var (
	cust = planned("cust", 3, []plan.Key{pk("cust", 0), {Seed: plan.IndexSeed(ident("cust"), "email"), Cols: []int{1}, Prefix: []int{0}}}, nil,
		plan.Child{Table: tbl("orders"), Cols: []int{0}, OnDelete: plan.Cascade, DeeperDelete: []uint64{tbl("lines")}})
	shopOrders = planned("orders", 3, []plan.Key{pk("orders", 0)}, []plan.Parent{ref("cust", 1)},
		plan.Child{Table: tbl("lines"), Cols: []int{0}, OnDelete: plan.Cascade})
	lines = planned("lines", 4, []plan.Key{pk("lines", 0, 1)}, []plan.Parent{ref("orders", 0), ref("item", 2)})
	item  = planned("item", 2, []plan.Key{pk("item", 0)}, nil, plan.Child{Table: tbl("lines"), Cols: []int{0}, OnUpdate: plan.Cascade})
	snp   = planned("snp", 2, []plan.Key{pk("snp", 0)}, nil, plan.Child{Table: tbl("snc"), Cols: []int{0}, OnDelete: plan.SetNull, OnUpdate: plan.SetNull})
	snc   = planned("snc", 2, []plan.Key{pk("snc", 0)}, []plan.Parent{ref("snp", 1)})
	sdp   = planned("sdp", 2, []plan.Key{pk("sdp", 0)}, nil, plan.Child{Table: tbl("sdc"), Cols: []int{0}, OnDelete: plan.SetDefault})
	wp    = planned("wp", 2, []plan.Key{pk("wp", 0)}, nil, plan.Child{Table: tbl("wc"), Cols: []int{1}, OnDelete: plan.Cascade, Whole: true})
)

func noFK(c txn.Change) txn.Change {
	c.Flags |= binlog.RowsFlagNoForeignKeyChecks
	return c
}

// TestForeignKeyActions: what a parent change adds for the rows the
// target's own foreign-key actions change, per action.
func TestForeignKeyActions(t *testing.T) {
	cases := []struct {
		name string
		ch   change
		keys int
		excl []string // tables taken whole
	}{
		{"update changing no referenced column: nothing cascades", change{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("b"), i64(6)))}, 5, nil},
		{"ON DELETE CASCADE, one level: the parent's key names the child rows", change{shopOrders, del(i64(9), i64(1), i64(0))}, 3, nil},
		{"ON DELETE CASCADE, two levels: the second level is taken", change{cust, del(i64(1), str("a"), i64(5))}, 4, []string{"lines"}},
		{"foreign key checks off: nothing cascades", change{cust, noFK(del(i64(1), str("a"), i64(5)))}, 4, nil},
		{"ON UPDATE CASCADE of the key: before and after keys name the child rows", change{item, upd(row(i64(3), i64(10)), row(i64(4), i64(10)))}, 4, nil},
		{"ON UPDATE CASCADE, key unchanged", change{item, upd(row(i64(3), i64(10)), row(i64(3), i64(11)))}, 1, nil},
		{"ON UPDATE only: a delete cascades nothing", change{item, del(i64(3), i64(10))}, 2, nil},
		{"ON DELETE SET NULL", change{snp, del(i64(3), i64(0))}, 2, nil},
		{"ON UPDATE SET NULL", change{snp, upd(row(i64(3), i64(0)), row(i64(4), i64(0)))}, 4, nil},
		{"ON DELETE SET DEFAULT: child rows take another parent's key: taken", change{sdp, del(i64(3), i64(0))}, 2, []string{"sdc"}},
		{"referenced columns not unique in the parent: the child is taken", change{wp, del(i64(3), str("x"))}, 2, []string{"wc"}},
		{"a change of the referenced column that is only a case change still cascades",
			change{wp, upd(row(i64(3), str("x")), row(i64(3), str("X")))}, 1, nil},
	}
	for _, c := range cases {
		s := setOf(c.ch)
		if n := len(s.Keys) + len(s.Shared); n != c.keys {
			t.Errorf("%s: %d keys, want %d", c.name, n, c.keys)
		}
		var excl []uint64
		for _, a := range s.Tables {
			if a.Exclusive {
				excl = append(excl, a.Table)
			}
		}
		var want []uint64
		for _, name := range c.excl {
			want = append(want, tbl(name))
		}
		slices.Sort(excl)
		slices.Sort(want)
		if !slices.Equal(excl, want) {
			t.Errorf("%s: tables taken %x, want %v", c.name, excl, c.excl)
		}
	}
}

// TestForeignKeyOrder runs the shop's transactions through the scheduler:
// whether the last one must wait for the ones before it.
func TestForeignKeyOrder(t *testing.T) {
	cases := []struct {
		name string
		txns [][]change
		wait bool
	}{
		{"a customer's balance and another customer's order run at once", [][]change{
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}},
			{{shopOrders, ins(i64(9), i64(2), i64(0))}, {lines, ins(i64(9), i64(1), i64(3), i64(1))}, {item, upd(row(i64(3), i64(10)), row(i64(3), i64(9)))}}}, false},
		{"a balance update and a line of the same customer's order run at once", [][]change{
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}},
			{{lines, ins(i64(9), i64(2), i64(4), i64(1))}}}, false},
		{"an order delete and lines of another order run at once", [][]change{
			{{shopOrders, del(i64(9), i64(1), i64(0))}},
			{{lines, upd(row(i64(8), i64(1), i64(3), i64(1)), row(i64(8), i64(1), i64(3), i64(2)))}}}, false},
		{"a line of the deleted order waits for the delete (it cascades into it)", [][]change{
			{{lines, ins(i64(9), i64(1), i64(3), i64(1))}},
			{{shopOrders, del(i64(9), i64(1), i64(0))}}}, true},
		{"an order's delete waits for earlier changes of its lines", [][]change{
			{{lines, upd(row(i64(9), i64(1), i64(3), i64(1)), row(i64(9), i64(1), i64(3), i64(2)))}},
			{{shopOrders, del(i64(9), i64(1), i64(0))}}}, true},
		{"a customer delete takes the lines two levels down: a later line change waits", [][]change{
			{{cust, del(i64(1), str("a"), i64(5))}},
			{{lines, upd(row(i64(8), i64(1), i64(3), i64(1)), row(i64(8), i64(1), i64(3), i64(2)))}}}, true},
		{"an item's key change waits for earlier lines of the old key", [][]change{
			{{lines, ins(i64(9), i64(1), i64(3), i64(1))}},
			{{item, upd(row(i64(3), i64(10)), row(i64(4), i64(10)))}}}, true},
		{"a line of the item's new key waits for the key change", [][]change{
			{{item, upd(row(i64(3), i64(10)), row(i64(4), i64(10)))}},
			{{lines, ins(i64(9), i64(1), i64(4), i64(1))}}}, true},
		{"a parent update keeping its keys runs beside an earlier change of a child row that references it", [][]change{
			{{lines, upd(row(i64(9), i64(1), i64(3), i64(1)), row(i64(9), i64(1), i64(3), i64(2)))}},
			{{item, upd(row(i64(3), i64(10)), row(i64(3), i64(11)))}}}, false},
		{"a child change keeping its reference runs beside an earlier update of the parent row", [][]change{
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}},
			{{shopOrders, upd(row(i64(9), i64(1), i64(0)), row(i64(9), i64(1), i64(1)))}}}, false},
		{"a child insert waits for an earlier update of its parent row (its check locks that row)", [][]change{
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}},
			{{shopOrders, ins(i64(9), i64(1), i64(0))}}}, true},
		{"a parent update waits for an earlier child insert that locked it", [][]change{
			{{shopOrders, ins(i64(9), i64(1), i64(0))}},
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}}}, true},
		{"a child re-pointed to a parent waits for an earlier update of that parent", [][]change{
			{{item, upd(row(i64(4), i64(10)), row(i64(4), i64(11)))}},
			{{lines, upd(row(i64(9), i64(1), i64(3), i64(1)), row(i64(9), i64(1), i64(4), i64(1)))}}}, true},
		{"a child insert made with foreign key checks off locks no parent", [][]change{
			{{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))}},
			{{shopOrders, noFK(ins(i64(9), i64(1), i64(0)))}}}, false},
		{"lines of two orders for the same item run at once", [][]change{
			{{lines, ins(i64(9), i64(1), i64(3), i64(1))}},
			{{lines, ins(i64(8), i64(1), i64(3), i64(1))}}}, false},
		{"two orders of one customer run at once", [][]change{
			{{shopOrders, ins(i64(9), i64(1), i64(0))}},
			{{shopOrders, upd(row(i64(8), i64(1), i64(0)), row(i64(8), i64(1), i64(1)))}}}, false},
		{"SET NULL: an earlier child of the deleted parent goes first", [][]change{
			{{snc, ins(i64(1), i64(3))}},
			{{snp, del(i64(3), i64(0))}}}, true},
		{"SET DEFAULT: every later child change waits", [][]change{
			{{sdp, del(i64(3), i64(0))}},
			{{planned("sdc", 2, []plan.Key{pk("sdc", 0)}, []plan.Parent{ref("sdp", 1)}), ins(i64(5), i64(7))}}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scheduler.New(scheduler.Config{Mode: scheduler.ModeWriteset, MaxUnits: 100, MaxBytes: 1 << 20, MaxBatch: 1, MaxBatchBytes: 1 << 20}, 1)
			var last *scheduler.Unit
			for i, changes := range c.txns {
				last = &scheduler.Unit{Seq: uint64(i + 1), Set: setOf(changes...), Bytes: 1}
				s.Add(last)
			}
			if last.Blocked() != c.wait {
				t.Fatalf("last transaction waits = %v, want %v (set %+v)", last.Blocked(), c.wait, *last.Set)
			}
		})
	}
}

// TestCascadeAfterChunk: a copied chunk of the child table takes it whole
// (its rows have no keys in the scheduler); a later parent delete that
// cascades into it must wait for it, or the cascade runs before the rows
// are there and they stay (the chunk is written with foreign key checks
// off).
func TestCascadeAfterChunk(t *testing.T) {
	s := scheduler.New(scheduler.Config{Mode: scheduler.ModeWriteset, MaxUnits: 100, MaxBytes: 1 << 20, MaxBatch: 1, MaxBatchBytes: 1 << 20}, 1)
	chunk := &scheduler.Unit{Seq: 1, Solo: true, Bytes: 1, Set: &scheduler.KeySet{Tables: []scheduler.TableAccess{{Table: tbl("orders"), Exclusive: true}}}}
	s.Add(chunk)
	drop := &scheduler.Unit{Seq: 2, Bytes: 1, Set: setOf(change{cust, del(i64(1), str("a"), i64(5))})}
	s.Add(drop)
	if !drop.Blocked() {
		t.Fatal("a parent delete cascading into a table ran beside a chunk of it")
	}
	balance := &scheduler.Unit{Seq: 3, Bytes: 1, Set: setOf(change{cust, upd(row(i64(2), str("b"), i64(5)), row(i64(2), str("b"), i64(6)))})}
	s.Add(balance)
	if balance.Blocked() {
		t.Fatal("a parent update that cascades nothing waits for a chunk of the child table")
	}
}

// TestLockKeys: a change's lock keys (Span: Shared[Lock:]) are exactly
// the parent rows its new references make InnoDB read under a shared lock
// (the hash the parent row's own change holds); its other shared keys
// (the references' RefSeed keys) come before them. A change with the
// checks off, or one that keeps its references, has none.
func TestLockKeys(t *testing.T) {
	custRow := func() uint64 { // the key a customer's balance update holds
		s := setOf(change{cust, upd(row(i64(1), str("a"), i64(5)), row(i64(1), str("a"), i64(6)))})
		return s.Keys[0]
	}()
	cases := []struct {
		name string
		c    change
		lock []uint64
	}{
		{"an order's insert locks its customer", change{shopOrders, ins(i64(9), i64(1), i64(0))}, []uint64{custRow}},
		{"an order re-pointed to the customer locks it", change{shopOrders, upd(row(i64(9), i64(2), i64(0)), row(i64(9), i64(1), i64(0)))}, []uint64{custRow}},
		{"an order update keeping its customer locks nothing", change{shopOrders, upd(row(i64(9), i64(1), i64(0)), row(i64(9), i64(1), i64(1)))}, nil},
		{"an insert with the checks off locks nothing", change{shopOrders, noFK(ins(i64(9), i64(1), i64(0)))}, nil},
		{"a delete locks nothing", change{shopOrders, del(i64(9), i64(1), i64(0))}, nil},
	}
	for _, c := range cases {
		var b writeset.Builder
		s := &scheduler.KeySet{}
		sp := b.AddChangeSpan(s, c.c.p, &c.c.c)
		lock := s.Shared[sp.Lock:sp.Shared[1]]
		if !slices.Equal(lock, c.lock) {
			t.Errorf("%s: lock keys %x, want %x", c.name, lock, c.lock)
		}
		if sem := s.Shared[sp.Shared[0]:sp.Lock]; c.c.c.Kind != binlog.RowsDelete && len(sem) == 0 {
			t.Errorf("%s: no reference key before the lock keys", c.name)
		}
		if slices.Contains(s.Shared[sp.Shared[0]:sp.Lock], custRow) {
			t.Errorf("%s: the customer's row key is among the reference keys", c.name)
		}
	}
}
