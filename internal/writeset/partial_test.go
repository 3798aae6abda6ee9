package writeset_test

import (
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

var absent = binlog.Value{Kind: binlog.KindAbsent}

// partial marks a change as a MINIMAL/NOBLOB image, its update's after
// image completed from the before image as txn does.
func partial(c txn.Change) txn.Change {
	c.Partial = true
	c.FillUnwritten()
	return c
}

// TestPartialImages: a key value a partial image lacks takes the key's
// table whole; an update that leaves a key alone holds nothing for it.
func TestPartialImages(t *testing.T) {
	cases := []struct {
		name   string
		ch     change
		keys   int
		shared []*plan.Table
		excl   []*plan.Table
	}{
		{"MINIMAL update of a plain column: the primary key only", change{users,
			partial(upd(row(i64(1), absent, absent), row(absent, absent, str("B"))))}, 1, []*plan.Table{users}, nil},
		{"NOBLOB update: every key present, as a full image", change{users,
			partial(upd(row(i64(1), str("a@x"), str("A")), row(i64(1), str("a@x"), str("B"))))}, 2, []*plan.Table{users}, nil},
		{"update writing the unique key without its old value: table whole", change{users,
			partial(upd(row(i64(1), absent, absent), row(absent, str("b@x"), absent)))}, 3, nil, []*plan.Table{users}},
		{"update of the primary key: old and new keys, references moved", change{users,
			partial(upd(row(i64(1), absent, absent), row(i64(2), absent, absent)))}, 4, []*plan.Table{users}, nil},
		{"MINIMAL delete: the unique key's value is unknown", change{users,
			partial(del(i64(1), absent, absent))}, 2, []*plan.Table{orders}, []*plan.Table{users}},
		{"insert leaving the unique key to its default", change{users,
			partial(ins(i64(1), absent, str("A")))}, 2, nil, []*plan.Table{users}},
		{"insert naming every key: row precision", change{users,
			partial(ins(i64(1), str("a@x"), absent))}, 4, []*plan.Table{users}, nil},
		{"child update without its reference: any reference to the parent key, exclusively", change{orders,
			partial(upd(row(i64(10), absent), row(i64(11), absent)))}, 2, []*plan.Table{orders, users}, nil},
		{"child delete without its reference", change{orders,
			partial(del(i64(10), absent))}, 1, []*plan.Table{orders, users}, nil},
		{"child update re-pointing with the old reference unknown", change{orders,
			partial(upd(row(i64(10), absent), row(absent, i64(2))))}, 3, []*plan.Table{orders, users}, nil},
	}
	refAny := writeset.RefAny(users.Keys[0].Seed)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := setOf(c.ch)
			checkSet(t, s, c.keys, c.shared, c.excl)
			// A child change without its reference takes RefAny of the
			// parent key exclusively; a change of a referenced key's value
			// takes it shared.
			touched, excl := accessHash(s, refAny)
			wantTouched := c.ch.p == orders || c.ch.c.Kind != binlog.RowsUpdate || changesKey(c.ch.c)
			if touched != wantTouched || excl != (c.ch.p == orders) {
				t.Errorf("RefAny: touched %v exclusive %v, want %v %v", touched, excl, wantTouched, c.ch.p == orders)
			}
		})
	}
}

// changesKey reports whether a users update changes its primary key.
func changesKey(c txn.Change) bool { return c.Before[0].N != c.After[0].N }

// TestPartialImagesOrder: what a partial image cannot name still orders
// against the transactions that could conflict with it.
func TestPartialImagesOrder(t *testing.T) {
	conflict := func(a, b *change) bool {
		s := scheduler.New(scheduler.Config{Mode: scheduler.ModeWriteset, MaxUnits: 100, MaxBytes: 1 << 20, MaxBatch: 1, MaxBatchBytes: 1 << 20}, 1)
		s.Add(&scheduler.Unit{Seq: 1, Set: setOf(*a), Bytes: 1})
		later := &scheduler.Unit{Seq: 2, Set: setOf(*b), Bytes: 1}
		s.Add(later)
		return later.Blocked()
	}
	minimalDelete := change{users, partial(del(i64(1), absent, absent))}
	cases := []struct {
		name string
		a, b change
		want bool
	}{
		{"a delete whose freed e-mail a later insert takes", minimalDelete, change{users, ins(i64(2), str("a@x"), null)}, true},
		{"a child update and its parent's cascading delete", change{orders, partial(upd(row(i64(10), absent), row(i64(10), absent)))},
			change{users, del(i64(1), str("a@x"), null)}, true},
		{"updates of different rows leaving the unique key alone", change{users, partial(upd(row(i64(1), absent, absent), row(absent, absent, str("B"))))},
			change{users, partial(upd(row(i64(2), absent, absent), row(absent, absent, str("C"))))}, false},
		{"updates of one row", change{users, partial(upd(row(i64(1), absent, absent), row(absent, absent, str("B"))))},
			change{users, partial(upd(row(i64(1), absent, absent), row(absent, absent, str("C"))))}, true},
		{"a child update without its reference beside a parent update keeping its keys",
			change{orders, partial(upd(row(i64(10), absent), row(i64(10), absent)))},
			change{users, partial(upd(row(i64(1), absent, absent), row(absent, absent, str("C"))))}, false},
		{"a parent insert after a child update without its reference",
			change{orders, partial(upd(row(i64(10), absent), row(i64(10), absent)))}, change{users, ins(i64(9), null, null)}, true},
		{"a child delete after a parent's key change", change{users, partial(upd(row(i64(1), absent, absent), row(i64(2), absent, absent)))},
			change{orders, partial(del(i64(10), absent))}, true},
		{"child updates without their references, one after the other",
			change{orders, partial(upd(row(i64(10), absent), row(i64(10), absent)))},
			change{orders, partial(upd(row(i64(11), absent), row(i64(11), absent)))}, true},
	}
	for _, c := range cases {
		if got := conflict(&c.a, &c.b); got != c.want {
			t.Errorf("%s: conflict %v, want %v", c.name, got, c.want)
		}
	}
}
