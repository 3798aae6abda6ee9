package writeset_test

import (
	"math"
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

var (
	ci  = schema.ClassifyCollation("utf8mb4_general_ci", "utf8mb4")
	bin = schema.ClassifyCollation("utf8mb4_bin", "utf8mb4")
)

// The tables of the tests, planned by hand as plan.Builder would plan them
// (seeds from plan.IndexSeed and plan.TableSeed, so a reference hashes like
// the parent's own key):
//
//	users(id INT PK, email VARCHAR utf8mb4_general_ci UNIQUE NULL, name)
//	  ON DELETE CASCADE from orders
//	orders(id PK, user_id -> users.id)
//	accounts(id PK, login VARCHAR utf8mb4_general_ci UNIQUE), no cascade
//	posts(id PK, author VARCHAR utf8mb4_bin -> accounts.login)
//	logs(id PK, user_name -> users.name, not a unique key of users)
//	nokey(a, b): no primary or unique key
//	pairs(a VARCHAR, b VARCHAR, PRIMARY KEY (a, b))
//	floats(f DOUBLE PK, g FLOAT UNIQUE)
//	audited(id PK) with triggers
var (
	users = &plan.Table{Name: "`d`.`users`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "users"}),
		Cols:   []plan.Col{{Name: "id"}, {Name: "email", Coll: ci}, {Name: "name", Coll: ci}},
		RowKey: []int{0},
		Keys: []plan.Key{
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "users"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true},
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "users"}, "email"), Cols: []int{1}, Prefix: []int{0}},
		},
		Children:   []plan.Child{{Table: plan.TableSeed(schema.Ident{Schema: "d", Table: "orders"}), Cols: []int{0}, OnDelete: plan.Cascade}},
		Referenced: true,
	}
	orders = &plan.Table{Name: "`d`.`orders`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "orders"}),
		Cols:    []plan.Col{{Name: "id"}, {Name: "user_id"}},
		RowKey:  []int{0},
		Keys:    []plan.Key{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "orders"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true}},
		Parents: []plan.Parent{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "users"}, "PRIMARY"), Cols: []int{1}, Colls: []schema.Collation{{}}, ParentTable: users.TableHash}},
	}
	accounts = &plan.Table{Name: "`d`.`accounts`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "accounts"}),
		Cols:   []plan.Col{{Name: "id"}, {Name: "login", Coll: ci}},
		RowKey: []int{0},
		Keys: []plan.Key{
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "accounts"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true},
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "accounts"}, "login"), Cols: []int{1}, Prefix: []int{0}},
		},
		Referenced: true,
	}
	// The child's own column is utf8mb4_bin: the reference must hash under
	// the parent's collation.
	posts = &plan.Table{Name: "`d`.`posts`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "posts"}),
		Cols:    []plan.Col{{Name: "id"}, {Name: "author", Coll: bin}},
		RowKey:  []int{0},
		Keys:    []plan.Key{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "posts"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true}},
		Parents: []plan.Parent{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "accounts"}, "login"), Cols: []int{1}, Colls: []schema.Collation{ci}, ParentTable: accounts.TableHash}},
	}
	logs = &plan.Table{Name: "`d`.`logs`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "logs"}),
		Cols:    []plan.Col{{Name: "id"}, {Name: "user_name", Coll: ci}},
		RowKey:  []int{0},
		Keys:    []plan.Key{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "logs"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true}},
		Parents: []plan.Parent{{Cols: []int{1}, TableLevel: true, ParentTable: users.TableHash}},
	}
	nokey = &plan.Table{Name: "`d`.`nokey`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "nokey"}),
		Cols: []plan.Col{{Name: "a"}, {Name: "b", Coll: ci}}}
	pairs = &plan.Table{Name: "`d`.`pairs`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "pairs"}),
		Cols:   []plan.Col{{Name: "a", Coll: bin}, {Name: "b", Coll: bin}},
		RowKey: []int{0, 1},
		Keys:   []plan.Key{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "pairs"}, "PRIMARY"), Cols: []int{0, 1}, Prefix: []int{0, 0}, Primary: true}},
	}
	floats = &plan.Table{Name: "`d`.`floats`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "floats"}),
		Cols:   []plan.Col{{Name: "f"}, {Name: "g"}},
		RowKey: []int{0},
		Keys: []plan.Key{
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "floats"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true},
			{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "floats"}, "g"), Cols: []int{1}, Prefix: []int{0}},
		},
	}
	audited = &plan.Table{Name: "`d`.`audited`", TableHash: plan.TableSeed(schema.Ident{Schema: "d", Table: "audited"}),
		Cols:      []plan.Col{{Name: "id"}},
		RowKey:    []int{0},
		Keys:      []plan.Key{{Seed: plan.IndexSeed(schema.Ident{Schema: "d", Table: "audited"}, "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true}},
		Serialize: "table has triggers on the target",
	}
)

func i64(n int64) binlog.Value  { return binlog.Value{Kind: binlog.KindInt, N: n} }
func str(s string) binlog.Value { return binlog.Value{Kind: binlog.KindString, B: []byte(s)} }
func f64(f float64) binlog.Value {
	return binlog.Value{Kind: binlog.KindDouble, N: int64(math.Float64bits(f))}
}
func f32(f float32) binlog.Value {
	return binlog.Value{Kind: binlog.KindFloat, N: int64(math.Float32bits(f))}
}

var null = binlog.Value{Kind: binlog.KindNull}

func row(v ...binlog.Value) []binlog.Value { return v }

func ins(after ...binlog.Value) txn.Change { return txn.Change{Kind: binlog.RowsInsert, After: after} }
func del(before ...binlog.Value) txn.Change {
	return txn.Change{Kind: binlog.RowsDelete, Before: before}
}
func upd(before, after []binlog.Value) txn.Change {
	return txn.Change{Kind: binlog.RowsUpdate, Before: before, After: after}
}

// change is one row change of one table.
type change struct {
	p *plan.Table
	c txn.Change
}

// setOf computes the writeset of a transaction made of changes.
func setOf(changes ...change) *scheduler.KeySet {
	var b writeset.Builder
	s := &scheduler.KeySet{}
	for _, ch := range changes {
		b.AddChange(s, ch.p, &ch.c)
	}
	return s
}

func access(s *scheduler.KeySet, p *plan.Table) (touched, exclusive bool) {
	return accessHash(s, p.TableHash)
}

func accessHash(s *scheduler.KeySet, h uint64) (touched, exclusive bool) {
	for _, t := range s.Tables {
		if t.Table == h {
			return true, t.Exclusive
		}
	}
	return false, false
}

// checkSet checks a set's key count and its access to each test table:
// shared (touched, not exclusively), excl (taken whole), or none.
func checkSet(t *testing.T, s *scheduler.KeySet, keys int, shared, excl []*plan.Table) {
	t.Helper()
	if n := len(s.Keys) + len(s.Shared); n != keys {
		t.Errorf("%d keys (exclusive and shared), want %d", n, keys)
	}
	for _, p := range []*plan.Table{users, accounts, orders, posts, logs, nokey, audited} {
		touched, isExcl := access(s, p)
		wantExcl := slices.Contains(excl, p)
		wantTouched := wantExcl || slices.Contains(shared, p)
		if touched != wantTouched || isExcl != wantExcl {
			t.Errorf("table %s: touched %v exclusive %v, want %v %v", p.Name, touched, isExcl, wantTouched, wantExcl)
		}
	}
}

func TestAddChange(t *testing.T) {
	cases := []struct {
		name    string
		ch      change
		keys    int
		shared  []*plan.Table // tables touched, not exclusively
		excl    []*plan.Table // tables taken exclusively
		barrier bool
	}{
		{"insert: primary and unique key", change{users, ins(i64(1), str("a@x"), str("Ann"))}, 4, []*plan.Table{users}, nil, false},
		{"insert with NULL unique: primary key only", change{users, ins(i64(1), null, str("Ann"))}, 2, []*plan.Table{users}, nil, false},
		{"update keeping its keys: one of each", change{users, upd(row(i64(1), str("a@x"), str("A")), row(i64(1), str("a@x"), str("B")))},
			2, []*plan.Table{users}, nil, false},
		{"update of the primary key: before and after", change{users, upd(row(i64(1), str("a@x"), str("A")), row(i64(2), str("a@x"), str("A")))},
			5, []*plan.Table{users}, nil, false},
		{"update of both keys", change{users, upd(row(i64(1), str("a@x"), null), row(i64(2), str("b@x"), null))},
			8, []*plan.Table{users}, nil, false},
		{"update keeping the key in another case", change{users, upd(row(i64(1), str("a@x"), null), row(i64(1), str("A@X "), null))},
			3, []*plan.Table{users}, nil, false},
		{"unique value that cannot be normalized: table exclusive", change{users, ins(i64(1), str("é@x"), null)},
			2, nil, []*plan.Table{users}, false},
		{"a one-level cascade is named by the deleted row's key; the child table is touched", change{users, del(i64(1), str("a@x"), null)},
			4, []*plan.Table{users, orders}, nil, false},
		{"insert does not cascade", change{users, ins(i64(1), str("a@x"), null)}, 4, []*plan.Table{users}, nil, false},
		{"no usable key: table exclusive", change{nokey, ins(i64(1), str("x"))}, 0, nil, []*plan.Table{nokey}, false},
		{"reference: own key and parent key, parent shared", change{orders, ins(i64(10), i64(1))}, 3, []*plan.Table{orders, users}, nil, false},
		{"reference under the parent's collation", change{posts, ins(i64(10), str("Ann"))}, 3, []*plan.Table{posts, accounts}, nil, false},
		{"NULL reference: no parent", change{orders, ins(i64(10), null)}, 1, []*plan.Table{orders}, nil, false},
		{"reference that cannot be normalized takes the parent table", change{posts, ins(i64(1), str("é@x"))},
			1, []*plan.Table{posts}, []*plan.Table{accounts}, false},
		{"table-level reference", change{logs, ins(i64(1), str("Ann"))}, 1, []*plan.Table{logs}, []*plan.Table{users}, false},
		{"table-level NULL reference", change{logs, ins(i64(1), null)}, 1, []*plan.Table{logs}, nil, false},
		{"trigger table: barrier", change{audited, ins(i64(1))}, 1, []*plan.Table{audited}, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := setOf(c.ch)
			checkSet(t, s, c.keys, c.shared, c.excl)
			if (s.Barrier != "") != c.barrier {
				t.Errorf("barrier %q, want %v", s.Barrier, c.barrier)
			}
		})
	}
}

// TestKeysCollide checks which row changes share a key: values the target
// considers equal must, different ones must not.
func TestKeysCollide(t *testing.T) {
	cases := []struct {
		name    string
		a, b    change
		collide bool
	}{
		{"same primary key", change{users, ins(i64(1), null, null)}, change{users, del(i64(1), null, null)}, true},
		{"different primary keys", change{users, ins(i64(1), null, null)}, change{users, ins(i64(2), null, null)}, false},
		{"unique key in another case", change{users, ins(i64(1), str("abc"), null)}, change{users, ins(i64(2), str("ABC"), null)}, true},
		{"unique key with trailing spaces", change{users, ins(i64(1), str("abc"), null)}, change{users, ins(i64(2), str("abc  "), null)}, true},
		{"different unique values", change{users, ins(i64(1), str("abc"), null)}, change{users, ins(i64(2), str("abd"), null)}, false},
		{"NULLs in a unique key never collide", change{users, ins(i64(1), null, null)}, change{users, ins(i64(2), null, null)}, false},
		{"same value, different tables", change{users, ins(i64(1), null, null)}, change{orders, ins(i64(1), null)}, false},
		{"reference equals the parent's primary key", change{orders, ins(i64(10), i64(7))}, change{users, del(i64(7), null, null)}, true},
		{"reference to another parent row", change{orders, ins(i64(10), i64(8))}, change{users, del(i64(7), null, null)}, false},
		{"reference hashed with the parent's collation", change{posts, ins(i64(1), str("X@A"))}, change{accounts, ins(i64(2), str("x@a "))}, true},
		{"-0.0 equals 0.0 (DOUBLE)", change{floats, ins(f64(math.Copysign(0, -1)), null)}, change{floats, ins(f64(0), null)}, true},
		{"-0.0 equals 0.0 (FLOAT)", change{floats, ins(f64(1), f32(float32(math.Copysign(0, -1))))}, change{floats, ins(f64(2), f32(0))}, true},
		{"different doubles", change{floats, ins(f64(1.5), null)}, change{floats, ins(f64(2.5), null)}, false},
		{"composite key: column order matters", change{pairs, ins(str("a"), str("b"))}, change{pairs, ins(str("b"), str("a"))}, false},
		{"composite key: values not concatenated", change{pairs, ins(str("ab"), str("c"))}, change{pairs, ins(str("a"), str("bc"))}, false},
		{"composite key: equal", change{pairs, ins(str("ab"), str("c "))}, change{pairs, del(str("ab "), str("c"))}, true},
	}
	for _, c := range cases {
		a, b := setOf(c.a), setOf(c.b)
		// A key held exclusively by one and at all by the other; shared
		// with shared is no conflict.
		shared := false
		for _, k := range a.Keys {
			shared = shared || slices.Contains(b.Keys, k) || slices.Contains(b.Shared, k)
		}
		for _, k := range a.Shared {
			shared = shared || slices.Contains(b.Keys, k)
		}
		if shared != c.collide {
			t.Errorf("%s: keys %x/%x and %x/%x: collide = %v, want %v", c.name, a.Keys, a.Shared, b.Keys, b.Shared, shared, c.collide)
		}
	}
}

// TestSchedulerOrder runs writesets through the scheduler: each scenario
// is a list of transactions in source order, and whether the last one must
// wait for the ones before it.
func TestSchedulerOrder(t *testing.T) {
	cases := []struct {
		name string
		txns [][]change
		wait bool
	}{
		{"independent rows run at once",
			[][]change{{{users, ins(i64(1), str("a"), null)}}, {{users, ins(i64(2), str("b"), null)}}}, false},
		{"e-mail taken in another case waits",
			[][]change{{{users, upd(row(i64(1), str("old"), null), row(i64(1), str("x@a"), null))}}, {{users, ins(i64(2), str("X@A"), null)}}}, true},
		{"child insert waits for its parent's insert",
			[][]change{{{users, ins(i64(7), null, null)}}, {{orders, ins(i64(1), i64(7))}}}, true},
		{"child of another parent runs at once",
			[][]change{{{users, ins(i64(7), null, null)}}, {{orders, ins(i64(1), i64(8))}}}, false},
		{"child insert waits for a parent stored under a value that cannot be normalized",
			// 'é' = 'e' under utf8mb4_general_ci: the parent could not name its
			// row, so its table is taken and the reference must wait for it.
			[][]change{{{accounts, ins(i64(1), str("é"))}}, {{posts, ins(i64(1), str("e"))}}}, true},
		{"parent delete waits for the removal of a child that referenced it with an uncertain value",
			[][]change{{{posts, ins(i64(1), str("é"))}}, {{posts, del(i64(1), str("é"))}}, {{accounts, del(i64(3), str("e"))}}}, true},
		{"child change of the parent a delete cascades from waits for it",
			[][]change{{{users, del(i64(7), null, null)}}, {{orders, upd(row(i64(1), i64(7)), row(i64(1), i64(9)))}}}, true},
		{"child change of another parent runs beside a cascading delete (the cascade changes rows of 7 only)",
			[][]change{{{users, del(i64(7), null, null)}}, {{orders, upd(row(i64(1), i64(8)), row(i64(1), i64(9)))}}}, false},
		{"child change does not wait for a parent insert of another row",
			[][]change{{{users, ins(i64(7), null, null)}}, {{orders, upd(row(i64(1), i64(8)), row(i64(1), i64(9)))}}}, false},
		{"table without key: the next change of it waits",
			[][]change{{{nokey, ins(i64(1), str("x"))}}, {{nokey, ins(i64(2), str("y"))}}}, true},
		{"table-level reference waits for any parent change",
			[][]change{{{users, upd(row(i64(1), null, str("Ann")), row(i64(1), null, str("Bob")))}}, {{logs, ins(i64(1), str("Bob"))}}}, true},
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

// TestAddChangeAllocations: after the first row, hashing allocates nothing
// (the key slice and buffers are reused across Reset).
func TestAddChangeAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	var b writeset.Builder
	var s scheduler.KeySet
	ch := upd(row(i64(1), str("a@x"), str("Ann")), row(i64(2), str("B@X  "), str("Bob")))
	child := ins(i64(1), i64(2))
	allocs := testing.AllocsPerRun(100, func() {
		s.Reset()
		b.AddChange(&s, users, &ch)
		b.AddChange(&s, orders, &child)
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per run, want 0", allocs)
	}
}

// BenchmarkAddChange measures one row update with a primary key, a unique
// key in a _ci collation and a cascade: allocs/op must stay 0.
func BenchmarkAddChange(b *testing.B) {
	var wb writeset.Builder
	var s scheduler.KeySet
	ch := upd(row(i64(1), str("someone@example.com"), str("Ann")), row(i64(1), str("Someone@Example.com"), str("Bob")))
	b.ReportAllocs()
	for b.Loop() {
		s.Reset()
		wb.AddChange(&s, users, &ch)
	}
}
