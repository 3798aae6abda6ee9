// Package writeset computes, for a transaction, the set of keys it writes
// (a scheduler.KeySet: the scheduler owns the type, this package fills it):
// one hash per primary and unique key value of every row image it touches,
// one per parent row its foreign keys reference, and table-level accesses
// where rows cannot be named with certainty. Two transactions whose sets
// intersect must apply in source order; two whose sets are disjoint may
// apply at the same time.
//
// A worked example. Table u(id PK, email UNIQUE utf8mb4_general_ci):
//
//	T1: UPDATE u SET email='x@a' WHERE id=1   keys {pk(1), email(X@A), email(old1)}
//	T2: INSERT u VALUES (2,'X@A')             keys {pk(2), email(X@A)}  -> conflicts with T1
//	T3: UPDATE u SET email='z' WHERE id=3     keys {pk(3), email(Z), email(old3)} -> independent
//
// T2 must wait for T1 (it claims the e-mail T1 just took, in another case),
// T3 may run beside both. Keys are coarser than the target's equality (case
// folded, trailing spaces trimmed) but never finer: where a value cannot be
// normalized with certainty the change takes the whole table instead.
//
// Foreign keys. Two hashes stand for a parent key value K: K itself (the
// parent index's seed), held by every change of the parent row, and "the
// rows referencing K" (RefSeed), held shared by every change of a child row
// that references K (before and after: children of one parent row do not
// conflict through it) and exclusively by a parent change that creates,
// removes or changes K. That orders a child insert after its parent's
// insert, and a parent delete after changes of its children; a parent
// update that keeps its keys (a balance, a stock count) shares nothing with
// the changes of its child rows and runs beside them. Such an update does
// lock the parent row, and InnoDB checks a child insert, or an update that
// re-points a child row, under a shared lock of the new parent row: those
// child changes hold K shared as well (with foreign_key_checks off nothing is
// checked or locked), so they keep source order with updates of that
// parent row instead of waiting on its lock out of turn. A child change
// that keeps its reference takes no lock on the parent.
//
// The target's foreign-key actions change child rows the binlog never shows
// (a cascaded delete, SET NULL, an ON UPDATE CASCADE). Why naming the parent
// row is enough for one level, and what is taken whole beyond it:
//
//   - An insert, and an update that changes no referenced column (byte for
//     byte: InnoDB cascades a case change too), fire no action. RESTRICT and
//     NO ACTION change no child row either: on the source the statement
//     succeeded, so no child row was in the way. A change applied with
//     foreign_key_checks off (the rows event says so) fires nothing, on the
//     source or on the target.
//   - CASCADE and SET NULL on delete, and CASCADE and SET NULL on an update
//     of the referenced key, change exactly the child rows that reference
//     the parent row's old key value K. The parent change holds K (its
//     before image); every change of such a child row holds K too (its
//     reference). So every earlier transaction that created, re-parented or
//     changed one of those rows is ordered before the parent change: on the
//     target the action meets the child rows the source's did. A later
//     transaction cannot touch them through K: on the source they were gone
//     or re-pointed. It can change them otherwise (a row SET NULL set to
//     NULL, updated again by its primary key) or reuse a value they freed
//     (the primary or a unique key of a cascaded-away row), holding no key
//     of the parent change, and so run first: an update writes only the
//     columns it changed and finds its row by primary key, so it and the
//     action commute; reusing a value that is still taken fails with a
//     duplicate key on the target, and a failure of a transaction that was
//     not first in line is retried once every earlier one committed (the
//     applier's dependency-induced retry) — never taken for a real error.
//     An ON UPDATE CASCADE re-points child rows to the new key K', which the
//     parent change also holds (its after image): later changes of those rows
//     reference K' and wait. A child table without a key that names its rows
//     (changes are matched on the whole row image), or a reference to
//     columns that are not a unique key of the parent (no key to share), is
//     taken whole instead. The child table itself is touched (shared): the
//     action must still keep its place among what takes that table whole,
//     such as a chunk of it the copy writes (its rows have no keys here).
//   - SET DEFAULT re-points child rows to a parent value nobody names: the
//     child table is taken whole.
//   - Deeper levels: the rows a level-one action changes have keys the binlog
//     does not show, so the tables their own actions reach (a customer delete
//     cascading into orders, and through them into order lines) are taken
//     whole (plan.Child.DeeperDelete/DeeperUpdate). Two levels down, an
//     earlier insert made with foreign_key_checks off could otherwise be
//     missed by a cascade that ran before it.
//
// Partial row images (binlog_row_image MINIMAL or NOBLOB on the source,
// txn.Change.Partial). MINIMAL logs, for an update or delete, only the
// columns that name the row (the primary key, or the NOT NULL unique key
// the server uses as one) in the before image and only the columns the
// statement wrote in the after image; NOBLOB leaves out BLOB and TEXT
// columns it did not write. The rules, fail closed:
//
//   - A unique key value a change needs and its image lacks (the old
//     value in a delete's or an update's before image, a column of the new
//     value left to its default by an insert) is not guessed: the table is
//     taken whole, as for a value that cannot be normalized. The
//     transaction then waits for every earlier transaction touching that
//     table, and every later one waits for it. With MINIMAL on a MariaDB
//     source that is every delete from a table with a secondary unique
//     key and every update that writes a column of one. Updates and
//     deletes of tables whose only key is the primary key, and inserts
//     that name every key column, keep row precision.
//   - A child row's reference an image lacks (MINIMAL: the before image of
//     every update and delete of a row with a foreign key): the change
//     takes RefAny of the parent key exclusively, a table access no real
//     table has, which every change that creates, removes or changes a
//     value of that parent key takes shared (beside RefSeed of the value). What RefSeed(K) shared orders for a
//     known K (every change of a child row of K before a parent change
//     whose action reaches it, or whose RESTRICT check needs it gone)
//     RefAny orders for every K at once. Parent changes that keep their
//     keys (a balance) hold neither and stay beside such child changes;
//     such child changes order against each other (exclusive), and a
//     parent key change waits for all of them before it.
//   - An update that wrote none of a key's columns, and whose image shows
//     none of them, holds no key for it. It changes no value of that key,
//     so it takes and frees none, and InnoDB neither changes nor locks the
//     key's index entry (the row is found by the key that names it, which
//     the update holds): another transaction's success on that key does
//     not depend on it. A transaction that takes or frees the row's value
//     changes the row or removes it, so it holds the row's own key too.
//     Without a referenced column changing, no foreign-key action fires
//     (as for full images). A foreign-key check of a child row locks the
//     parent's key entry, which such an update does not touch.
//
// The package is pure computation: it must never talk to a server and
// never allocate per row beyond the key slice.
package writeset

import (
	"encoding/binary"
	"math"

	"github.com/cespare/xxhash/v2"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// Builder hashes row changes. It reuses its buffers; it is not safe for
// concurrent use.
type Builder struct {
	// key collects one key's canonical bytes, hashed in one call: the
	// same hash as a streaming digest fed the same bytes, without its
	// bookkeeping per write (most keys are one or two integers).
	key []byte
	// The change being added: where its keys start in the set (a key is
	// dropped as a repeat only of the same change's previous key, so that
	// each change's keys stay whole: see Span), and whether it took a
	// table exclusively.
	keysAt, sharedAt int
	whole            bool
}

// Span locates the keys one change added to a scheduler.KeySet:
// Keys[Keys[0]:Keys[1]] and Shared[Shared[0]:Shared[1]]. Whole says the
// change took a table exclusively (rows it could not name). The run planner
// of package rowsql reuses them instead of hashing every change a second
// time.
//
// Shared[Lock:Shared[1]] are the change's lock keys: a new reference's
// parent row, which InnoDB's check reads under a shared lock that waits
// for an uncommitted change of that row. They order transactions applied
// on different connections (a lock wait); inside one transaction a parent
// change that keeps its keys leaves the row the check finds, so the run
// planner leaves them out (RefSeed keys order what can change the check's
// outcome).
type Span struct {
	Keys, Shared [2]int32
	Lock         int32
	Whole        bool
}

// AddChange adds the keys of one row change of the table planned by p.
func (b *Builder) AddChange(s *scheduler.KeySet, p *plan.Table, c *txn.Change) {
	b.AddChangeSpan(s, p, c)
}

// AddChangeSpan is AddChange, and says where the change's keys are in s.
func (b *Builder) AddChangeSpan(s *scheduler.KeySet, p *plan.Table, c *txn.Change) Span {
	b.keysAt, b.sharedAt, b.whole = len(s.Keys), len(s.Shared), false
	lock := b.addChange(s, p, c)
	return Span{Keys: [2]int32{int32(b.keysAt), int32(len(s.Keys))},
		Shared: [2]int32{int32(b.sharedAt), int32(len(s.Shared))}, Lock: int32(lock), Whole: b.whole}
}

// table records a table access of the change being added.
func (b *Builder) table(s *scheduler.KeySet, h uint64, exclusive bool) {
	b.whole = b.whole || exclusive
	s.AddTable(h, exclusive)
}

// addChange adds the keys of c; the lock keys (see Span) come last, from
// the returned index of s.Shared on.
func (b *Builder) addChange(s *scheduler.KeySet, p *plan.Table, c *txn.Change) (lock int) {
	// Rows of a table without a usable key cannot be named: take the table.
	b.table(s, p.TableHash, p.RowKey == nil)
	if p.Serialize != "" && s.Barrier == "" {
		s.Barrier = p.Serialize
	}
	for i := range p.Keys {
		k := &p.Keys[i]
		if unwritten(c, k.Cols) {
			continue // a partial image's update that leaves the key alone (see the package doc)
		}
		changed := c.Kind != binlog.RowsUpdate || changesAny(c, k.Cols)
		b.addKey(s, p, k.Seed, c.Before, k.Cols, k.Prefix, nil, p.TableHash, false)
		if changed {
			// An update that leaves the key's bytes alone would add the
			// same key again (dropped as a repeat): not worth its hashing.
			b.addKey(s, p, k.Seed, c.After, k.Cols, k.Prefix, nil, p.TableHash, false)
		}
		if p.Referenced && changed {
			// The key value appears or disappears: the rows that reference
			// it must see that in source order.
			b.addKey(s, p, RefSeed(k.Seed), c.Before, k.Cols, k.Prefix, nil, p.TableHash, false)
			b.addKey(s, p, RefSeed(k.Seed), c.After, k.Cols, k.Prefix, nil, p.TableHash, false)
			// And for a child row whose reference a partial image left
			// out: it takes RefAny exclusively (see the package doc).
			b.table(s, RefAny(k.Seed), false)
		}
	}
	for i := range p.Parents {
		ref := &p.Parents[i]
		if !hasNonNull(c.Before, ref.Cols) && !hasNonNull(c.After, ref.Cols) {
			continue // no parent row referenced
		}
		if ref.TableLevel {
			b.table(s, ref.ParentTable, true)
			continue
		}
		// The reference touches the parent table too (shared): a change of
		// the parent whose key could not be normalized takes that table
		// exclusively, and an equal value here (say 'e' for its 'é') must
		// then wait for it. Likewise a reference that cannot be normalized
		// takes the parent table, not this one.
		b.table(s, ref.ParentTable, false)
		imgs := [][]binlog.Value{c.Before, c.After}
		if c.Kind == binlog.RowsUpdate && !changesAny(c, ref.Cols) {
			imgs = imgs[:1] // the after image's reference is the same key (as above)
		}
		// Shared: children of one parent row change independently.
		for _, img := range imgs {
			if absentIn(img, ref.Cols) {
				// A partial image without the reference: it orders against
				// every change that creates, removes or changes a value
				// of the parent key (see the package doc).
				b.table(s, RefAny(ref.Seed), true)
				continue
			}
			b.addKey(s, p, RefSeed(ref.Seed), img, ref.Cols, nil, ref.Colls, ref.ParentTable, true)
		}
	}
	if c.Kind != binlog.RowsInsert && c.Flags&binlog.RowsFlagNoForeignKeyChecks == 0 {
		b.addChildren(s, p, c)
	}
	lock = len(s.Shared)
	if c.Flags&binlog.RowsFlagNoForeignKeyChecks != 0 {
		return lock
	}
	for i := range p.Parents {
		ref := &p.Parents[i]
		if ref.TableLevel || !hasNonNull(c.Before, ref.Cols) && !hasNonNull(c.After, ref.Cols) {
			continue // as above: a table taken, or no parent row referenced
		}
		if c.Kind == binlog.RowsInsert || c.Kind == binlog.RowsUpdate && changesAny(c, ref.Cols) {
			// InnoDB checks the new reference under a shared lock of the
			// parent row, which waits for any uncommitted change of it
			// (and lets other checks of it through).
			b.addKey(s, p, ref.Seed, c.After, ref.Cols, nil, ref.Colls, ref.ParentTable, true)
		}
	}
	return lock
}

// addChildren adds what the target's foreign-key actions do by themselves
// when a parent row is deleted or its referenced columns change (see the
// package doc): nothing where the child rows they change are named by
// this row's own key, which the change already holds; the tables whose
// rows cannot be named, whole.
func (b *Builder) addChildren(s *scheduler.KeySet, p *plan.Table, c *txn.Change) {
	for i := range p.Children {
		ch := &p.Children[i]
		act, deeper := childAction(ch, c)
		if act == plan.NoAction {
			continue
		}
		// The child table is touched: shared where its rows are named by
		// this row's key (it still waits for, and holds back, whatever takes
		// that table whole: a copied chunk of it, a change of a table without
		// a key), whole where they cannot be named.
		b.table(s, ch.Table, ch.Whole || act == plan.SetDefault)
		for _, h := range deeper {
			b.table(s, h, true)
		}
	}
}

// childAction is what the foreign key ch does to its child rows for the
// change c of a parent row (c is a delete or an update applied with the
// checks on), and the tables the rows it changes cascade into.
func childAction(ch *plan.Child, c *txn.Change) (plan.Action, []uint64) {
	if c.Kind != binlog.RowsUpdate {
		return ch.OnDelete, ch.DeeperDelete
	}
	if !changesAny(c, ch.Cols) {
		return plan.NoAction, nil // no referenced column changes: nothing cascades
	}
	return ch.OnUpdate, ch.DeeperUpdate
}

// FiresActions reports whether the target's foreign-key actions change
// child rows when it applies c (a cascaded delete, SET NULL, ...): rows
// the binlog does not show, which the change's keys name only one level
// deep. The same rule AddChange follows.
func FiresActions(p *plan.Table, c *txn.Change) bool {
	if c.Kind == binlog.RowsInsert || c.Flags&binlog.RowsFlagNoForeignKeyChecks != 0 {
		return false
	}
	for i := range p.Children {
		if act, _ := childAction(&p.Children[i], c); act != plan.NoAction {
			return true
		}
	}
	return false
}

// RefSeed is the seed of the hashes that stand for "the rows referencing
// this key value": a child change holds it for the parent key it
// references, a parent change for each key value it creates, removes or
// changes. A parent change that keeps its keys does not hold it, so it runs
// beside changes of its children (see the package doc).
func RefSeed(keySeed uint64) uint64 { return keySeed ^ 0x9e3779b97f4a7c15 }

// RefAny stands for "the rows referencing any value of this key", as a
// table access (one per set, however many rows): every change that
// creates, removes or changes a value of a referenced key takes it shared,
// and a child change whose partial image lacks its reference takes it
// exclusively. It names no real table.
func RefAny(keySeed uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], RefSeed(keySeed)^0x5bd1e9955bd1e995)
	return xxhash.Sum64(b[:])
}

// absentIn reports whether a partial image lacks one of the columns.
func absentIn(row []binlog.Value, cols []int) bool {
	if row == nil {
		return false
	}
	for _, c := range cols {
		if row[c].Kind == binlog.KindAbsent {
			return true
		}
	}
	return false
}

// changesAny reports whether an update changes one of the columns, byte
// for byte: InnoDB cascades any change of a referenced value, also one its
// collation calls equal ('a' to 'A').
func changesAny(c *txn.Change, cols []int) bool {
	for _, col := range cols {
		a, b := &c.Before[col], &c.After[col]
		if a.Kind != b.Kind || a.N != b.N || a.Micro != b.Micro || a.Neg != b.Neg || string(a.B) != string(b.B) {
			return true
		}
	}
	return false
}

// unwritten reports whether c is an update from a partial image that wrote
// none of the columns and does not show their values: it left them as
// they were (txn completes an after image from the before image, so a
// column is absent from it only when it is in neither image).
func unwritten(c *txn.Change, cols []int) bool {
	if !c.Partial || c.Kind != binlog.RowsUpdate {
		return false
	}
	for _, col := range cols {
		if c.After[col].Kind != binlog.KindAbsent {
			return false
		}
	}
	return true
}

// hasNonNull reports whether no column of the row is NULL (a column a
// partial image lacks counts as not NULL: it may hold a value).
func hasNonNull(row []binlog.Value, cols []int) bool {
	if row == nil {
		return false
	}
	for _, c := range cols {
		if row[c].Kind == binlog.KindNull {
			return false
		}
	}
	return true
}

// addKey hashes one key of one row image. A NULL in any column means no
// key: unique keys admit several NULLs and a NULL reference has no parent.
// colls overrides the columns' own collations (for parent keys). When a
// value cannot be normalized, or a partial image lacks it, the table the
// key belongs to (fallback) is taken exclusively instead.
func (b *Builder) addKey(s *scheduler.KeySet, p *plan.Table, seed uint64, row []binlog.Value, cols, prefix []int,
	colls []schema.Collation, fallback uint64, shared bool) {
	if row == nil {
		return
	}
	b.key = binary.LittleEndian.AppendUint64(b.key[:0], seed)
	for i, c := range cols {
		v := &row[c]
		if v.Kind == binlog.KindNull {
			return
		}
		if v.Kind == binlog.KindAbsent {
			// A partial image without the value: the key cannot be
			// named, so its table is taken whole (see the package doc).
			b.table(s, fallback, true)
			return
		}
		coll := p.Cols[c].Coll
		if colls != nil {
			coll = colls[i]
		}
		n := 0
		if prefix != nil {
			n = prefix[i]
		}
		if !b.writeValue(v, coll, n) {
			b.table(s, fallback, true)
			return
		}
	}
	h := xxhash.Sum64(b.key)
	keys, at := &s.Keys, b.keysAt
	if shared {
		keys, at = &s.Shared, b.sharedAt
	}
	if k := len(*keys); k > at && (*keys)[k-1] == h {
		return // an update that keeps the key: one key is enough
	}
	*keys = append(*keys, h)
}

// writeValue appends a value's canonical bytes to the key; false when the
// value cannot be normalized with certainty.
func (b *Builder) writeValue(v *binlog.Value, coll schema.Collation, prefix int) bool {
	switch v.Kind {
	case binlog.KindString:
		// The length first, filled in once the normalized bytes are
		// appended after it.
		at := len(b.key)
		norm, ok := Normalize(append(b.key, 0, 0, 0, 0), v.B, coll, prefix)
		if !ok {
			return false
		}
		binary.LittleEndian.PutUint32(norm[at:], uint32(len(norm)-at-4))
		b.key = norm
		return true
	case binlog.KindDecimal, binlog.KindJSON, binlog.KindGeometry:
		b.key = binary.LittleEndian.AppendUint32(b.key, uint32(len(v.B)))
		b.key = append(b.key, v.B...)
		return true
	case binlog.KindFloat, binlog.KindDouble:
		f := v.Float()
		if f == 0 {
			f = 0 // -0 equals 0
		}
		b.key = binary.LittleEndian.AppendUint64(b.key, math.Float64bits(f))
	default:
		b.key = binary.LittleEndian.AppendUint64(b.key, uint64(v.N))
	}
	b.key = binary.LittleEndian.AppendUint32(b.key, v.Micro)
	neg := byte(0)
	if v.Neg {
		neg = 1
	}
	b.key = append(b.key, byte(v.Kind), neg)
	return true
}
