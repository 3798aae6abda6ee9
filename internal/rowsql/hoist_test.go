package rowsql

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// keyed gives a test plan the conflict keys writeset hashes: its row key
// as the primary key, and a unique key over each column in unique.
func keyed(p *plan.Table, unique ...int) *plan.Table {
	p.TableHash = xxhash.Sum64String(p.Name)
	p.Keys = []plan.Key{{Seed: xxhash.Sum64String(p.Name + "/PRIMARY"), Cols: p.RowKey, Primary: true}}
	for _, c := range unique {
		p.Cols[c].Unique = true
		p.Keys = append(p.Keys, plan.Key{Seed: xxhash.Sum64String(p.Name + "/" + p.Cols[c].Name), Cols: []int{c}})
	}
	return p
}

// references makes column col of child a foreign key to parent's primary
// key; action, when set, cascades on delete.
func references(child *plan.Table, col int, parent *plan.Table, action plan.Action) {
	child.Cols[col].ForeignKey = true
	child.Parents = append(child.Parents, plan.Parent{Seed: parent.Keys[0].Seed, Cols: []int{col}, ParentTable: parent.TableHash})
	parent.Referenced = true
	parent.Cols[parent.RowKey[0]].ForeignKey = true
	if action != plan.NoAction {
		parent.Children = append(parent.Children, plan.Child{Table: child.TableHash, Cols: parent.RowKey, OnDelete: action})
	}
}

// step is a rows item (p set) or a savepoint (p nil) of a test transaction.
type step struct {
	p       *plan.Table
	changes []txn.Change
}

// bodyOf builds a transaction body of steps.
func bodyOf(steps ...step) (txn.Body, []*plan.Table) {
	var b txn.Body
	var plans []*plan.Table
	for _, s := range steps {
		if s.p == nil {
			b.Items = append(b.Items, txn.Item{Kind: txn.ItemSavepoint, Savepoint: "s"})
			plans = append(plans, nil)
			continue
		}
		first := len(b.Changes)
		b.Changes = append(b.Changes, s.changes...)
		b.Items = append(b.Items, txn.Item{Kind: txn.ItemRows, First: first, Last: len(b.Changes)})
		plans = append(plans, s.p)
	}
	return b, plans
}

// runStatements writes transactions of steps as one target transaction
// with Runs on and returns its row statements (guards and the
// transaction's own statements left out).
//
// It writes them twice, the planner hashing every change itself and
// reusing the keys of a writeset built as the scheduler's is, and fails
// when the two differ.
func runStatements(t *testing.T, txns ...[]step) []string {
	t.Helper()
	return writeStatements(t, true, false, txns...)
}

// writeStatements is runStatements with Runs and Collapse as given.
func writeStatements(t *testing.T, runs, collapse bool, txns ...[]step) []string {
	t.Helper()
	got := writeStatementsKeys(t, runs, collapse, false, txns...)
	if known := writeStatementsKeys(t, runs, collapse, true, txns...); !slices.Equal(got, known) {
		t.Fatalf("with the writeset's keys:\n%s\nhashing every change:\n%s", strings.Join(known, "\n"), strings.Join(got, "\n"))
	}
	return got
}

// writesetKeys builds a body's writeset as the scheduler's coordinator
// does, with each change's span.
func writesetKeys(body *txn.Body, plans []*plan.Table) *Keys {
	k := &Keys{Set: &scheduler.KeySet{}, Spans: make([]writeset.Span, len(body.Changes))}
	var b writeset.Builder
	for i, it := range body.Items {
		for j := it.First; j < it.Last; j++ {
			k.Spans[j] = b.AddChangeSpan(k.Set, plans[i], &body.Changes[j])
		}
	}
	return k
}

func writeStatementsKeys(t *testing.T, runs, collapse, known bool, txns ...[]step) []string {
	t.Helper()
	s := &sink{}
	w := NewWriter(s)
	w.Runs, w.Collapse = runs, collapse
	if err := w.Begin(); err != nil {
		t.Fatal(err)
	}
	for i, steps := range txns {
		body, plans := bodyOf(steps...)
		var keys *Keys
		if known {
			keys = writesetKeys(&body, plans)
		}
		if err := w.Body(&txn.Txn{Seq: uint64(i + 1)}, &body, plans, keys); err != nil {
			t.Fatal(err)
		}
	}
	finish(t, w)
	var got []string
	for _, q := range s.all()[2:] {
		if !strings.HasPrefix(q, "SET @binlane_bad=@binlane_bad+(ROW_COUNT()") {
			got = append(got, q)
		}
	}
	return got
}

// TestRuns: changes move earlier into a run of their table and operation
// only past changes they share no key with.
func TestRuns(t *testing.T) {
	stock := keyed(upsertTable("stock", false, nil, "id", "qty"))
	line := keyed(table("line", 1, false, "id", "item", "n"))
	references(line, 1, stock, plan.NoAction)
	u := keyed(upsertTable("u", false, nil, "id", "email", "n"), 1)
	parent := keyed(table("parent", 1, false, "id"))
	child := keyed(table("child", 1, false, "id", "pid"))
	references(child, 1, parent, plan.NoAction)
	casc := keyed(table("casc", 1, false, "id"))
	kid := keyed(table("kid", 1, false, "id", "cid"))
	references(kid, 1, casc, plan.Cascade)
	nokey := keyed(table("nokey", 0, false, "a"))
	self := keyed(table("self", 1, false, "id", "up"))
	self.OrderedRows = true
	su := func(id, before, after int64) txn.Change {
		return upd(row(i64(id), i64(before)), row(i64(id), i64(after)))
	}
	const stockODKU = " ON DUPLICATE KEY UPDATE `qty`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`qty`),NULL)"
	guard := func(n string) string { return "SET @binlane_bad=@binlane_bad+(@binlane_n<>" + n + "),@binlane_n=0" }
	cases := []struct {
		name string
		txns [][]step
		want []string
	}{
		{"order entry: stock updates and order lines gather across transactions",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {line, []txn.Change{ins(row(i64(10), i64(1), i64(1)))}}, {stock, []txn.Change{su(2, 9, 8)}},
				{line, []txn.Change{ins(row(i64(11), i64(2), i64(1)))}}},
				{{stock, []txn.Change{su(3, 9, 8)}}, {line, []txn.Change{ins(row(i64(12), i64(3), i64(1)))}}}},
			[]string{"INSERT INTO `d`.`stock` (`id`,`qty`) VALUES (1,8),(2,8),(3,8)" + stockODKU, guard("3"),
				"INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (10,1,1),(11,2,1),(12,3,1)"}},
		{"lines inserted between updates of their stock row that keep its key: the check finds the row either way, the updates merge, the lines share a run",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {line, []txn.Change{ins(row(i64(10), i64(1), i64(1)))}}},
				{{stock, []txn.Change{su(1, 8, 7)}}, {line, []txn.Change{ins(row(i64(11), i64(1), i64(1)))}}}},
			[]string{"UPDATE `d`.`stock` SET `qty`=7 WHERE `id`=1", "INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (10,1,1),(11,1,1)"}},
		{"a line after its stock row's insert, and its delete after the line's: parents first, children first",
			[][]step{{{stock, []txn.Change{ins(row(i64(5), i64(1)))}}, {line, []txn.Change{ins(row(i64(12), i64(5), i64(1)))}}},
				{{line, []txn.Change{del(row(i64(12), i64(5), i64(1)))}}, {stock, []txn.Change{del(row(i64(5), i64(1)))}}}},
			[]string{"INSERT INTO `d`.`stock` (`id`,`qty`) VALUES (5,1)", "INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (12,5,1)",
				"DELETE FROM `d`.`line` WHERE `id` IN (12)", "DELETE FROM `d`.`stock` WHERE `id` IN (5)"}},
		{"a line moved to a stock row whose key an earlier update changed stays after it",
			[][]step{{{stock, []txn.Change{upd(row(i64(6), i64(1)), row(i64(7), i64(1)))}}, {line, []txn.Change{ins(row(i64(13), i64(7), i64(1)))}}}},
			[]string{"UPDATE `d`.`stock` SET `id`=7 WHERE `id`=6", "INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (13,7,1)"}},
		{"a unique value handed from one row to another keeps its order",
			[][]step{{{u, []txn.Change{ins(row(i64(1), str("a"), i64(0)))}}, {stock, []txn.Change{su(1, 9, 8)}}},
				{{u, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("z"), i64(0)))}}, {stock, []txn.Change{su(2, 9, 8)}}},
				{{u, []txn.Change{ins(row(i64(2), str("a"), i64(0)))}}, {u, []txn.Change{ins(row(i64(3), str("b"), i64(0)))}}}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,_utf8mb4'a',0)",
				"INSERT INTO `d`.`stock` (`id`,`qty`) VALUES (1,8),(2,8)" + stockODKU, guard("2"),
				"UPDATE `d`.`u` SET `email`=_utf8mb4'z' WHERE `id`=1",
				"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (2,_utf8mb4'a',0),(3,_utf8mb4'b',0)"}},
		{"parents are inserted before their children, children deleted before their parents",
			[][]step{{{parent, []txn.Change{ins(row(i64(1)))}}, {child, []txn.Change{ins(row(i64(10), i64(1)))}}},
				{{parent, []txn.Change{ins(row(i64(2)))}}, {child, []txn.Change{ins(row(i64(11), i64(2)))}}},
				{{child, []txn.Change{del(row(i64(10), i64(1)))}}, {parent, []txn.Change{del(row(i64(1)))}}},
				{{child, []txn.Change{del(row(i64(11), i64(2)))}}, {parent, []txn.Change{del(row(i64(2)))}}}},
			[]string{"INSERT INTO `d`.`parent` (`id`) VALUES (1),(2)", "INSERT INTO `d`.`child` (`id`,`pid`) VALUES (10,1),(11,2)",
				"DELETE FROM `d`.`child` WHERE `id` IN (10,11)", "DELETE FROM `d`.`parent` WHERE `id` IN (1,2)"}},
		{"a child of a parent inserted later does not move before it",
			[][]step{{{child, []txn.Change{ins(row(i64(10), i64(1)))}}, {parent, []txn.Change{ins(row(i64(2)))}}, {child, []txn.Change{ins(row(i64(11), i64(2)))}}}},
			[]string{"INSERT INTO `d`.`child` (`id`,`pid`) VALUES (10,1)", "INSERT INTO `d`.`parent` (`id`) VALUES (2)",
				"INSERT INTO `d`.`child` (`id`,`pid`) VALUES (11,2)"}},
		{"a delete that cascades is a fence",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {casc, []txn.Change{del(row(i64(1)))}}, {stock, []txn.Change{su(2, 9, 8)}}}},
			[]string{"UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1", "DELETE FROM `d`.`casc` WHERE `id` IN (1)", "UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=2"}},
		{"a keyless table is a fence",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {nokey, []txn.Change{ins(row(i64(1)))}}, {stock, []txn.Change{su(2, 9, 8)}}}},
			[]string{"UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1", "INSERT INTO `d`.`nokey` (`a`) VALUES (1)", "UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=2"}},
		{"a self-referencing table is a fence and keeps its rows in order",
			[][]step{{{self, []txn.Change{del(row(i64(2), i64(1)))}}, {stock, []txn.Change{su(1, 9, 8)}}, {self, []txn.Change{del(row(i64(1), null))}}}},
			[]string{"DELETE FROM `d`.`self` WHERE `id` IN (2)", "UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1", "DELETE FROM `d`.`self` WHERE `id` IN (1)"}},
		{"nothing moves past a savepoint",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {line, []txn.Change{ins(row(i64(10), i64(7), i64(1)))}}, {nil, nil}, {stock, []txn.Change{su(2, 9, 8)}}}},
			[]string{"UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1", "INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (10,7,1)", "UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=2"}},
		{"repeated updates of a row that keep its keys merge: one statement writes the last image",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {line, []txn.Change{ins(row(i64(10), i64(2), i64(1)))}}},
				{{stock, []txn.Change{su(1, 8, 7)}}, {stock, []txn.Change{su(3, 9, 8)}}}, {{stock, []txn.Change{su(1, 7, 6)}}}},
			[]string{"INSERT INTO `d`.`stock` (`id`,`qty`) VALUES (1,6),(3,8)" + stockODKU, guard("2"),
				"INSERT INTO `d`.`line` (`id`,`item`,`n`) VALUES (10,2,1)"}},
		{"a row with a unique key: updates of its other columns merge",
			[][]step{{{u, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("a"), i64(1)))}}},
				{{u, []txn.Change{upd(row(i64(1), str("a"), i64(1)), row(i64(1), str("a"), i64(2)))}}}},
			[]string{"UPDATE `d`.`u` SET `n`=2 WHERE `id`=1"}},
		{"an update that moves a unique value shares the run but does not merge, nor one after it",
			[][]step{{{u, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), str("b"), i64(0)))}}},
				{{u, []txn.Change{upd(row(i64(1), str("b"), i64(0)), row(i64(1), str("b"), i64(1)))}}}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,_utf8mb4'b',0),(1,_utf8mb4'b',1) ON DUPLICATE KEY UPDATE `email`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`email`),NULL),`n`=VALUES(`n`)", guard("2")}},
		{"a unique value freed by one row and taken by another: the taker comes after, in the same run",
			[][]step{{{u, []txn.Change{upd(row(i64(1), str("a"), i64(0)), row(i64(1), null, i64(0)))}}, {stock, []txn.Change{su(1, 9, 8)}}},
				{{stock, []txn.Change{su(2, 9, 8)}}, {u, []txn.Change{upd(row(i64(2), null, i64(0)), row(i64(2), str("a"), i64(0)))}}}},
			[]string{"INSERT INTO `d`.`u` (`id`,`email`,`n`) VALUES (1,NULL,0),(2,_utf8mb4'a',0) ON DUPLICATE KEY UPDATE `email`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`email`),NULL),`n`=VALUES(`n`)", guard("2"),
				"INSERT INTO `d`.`stock` (`id`,`qty`) VALUES (1,8),(2,8)" + stockODKU, guard("2")}},
		{"nothing merges across a fence",
			[][]step{{{stock, []txn.Change{su(1, 9, 8)}}, {casc, []txn.Change{del(row(i64(1)))}}, {stock, []txn.Change{su(1, 8, 7)}}}},
			[]string{"UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1", "DELETE FROM `d`.`casc` WHERE `id` IN (1)", "UPDATE `d`.`stock` SET `qty`=7 WHERE `id`=1"}},
		{"different foreign-key sessions are different runs",
			[][]step{{{parent, []txn.Change{ins(row(i64(1)))}}, {stock, []txn.Change{su(1, 9, 8)}}, {parent, []txn.Change{flagged(ins(row(i64(2))))}}}},
			[]string{"INSERT INTO `d`.`parent` (`id`) VALUES (1)", "UPDATE `d`.`stock` SET `qty`=8 WHERE `id`=1",
				"SET SESSION foreign_key_checks=0", "INSERT INTO `d`.`parent` (`id`) VALUES (2)", "SET SESSION foreign_key_checks=1"}},
	}
	for _, c := range cases {
		got := runStatements(t, c.txns...)
		if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func flagged(c txn.Change) txn.Change {
	c.Flags = binlog.RowsFlagNoForeignKeyChecks
	return c
}

// TestRunsBounded: a long run of deletes splits below the server's IN-list
// conversion threshold, and what is pending is written once it is too
// large, keeping source order across the cut.
func TestRunsBounded(t *testing.T) {
	kv := keyed(table("kv", 1, false, "k", "v"))
	other := keyed(table("other", 1, false, "k"))
	var dels []txn.Change
	for i := range maxDeleteRows + 1 {
		dels = append(dels, del(row(i64(int64(i)), null)))
	}
	got := runStatements(t, []step{{kv, dels}})
	if len(got) != 2 || strings.Count(got[0], ",") != maxDeleteRows-1 || got[1] != "DELETE FROM `d`.`kv` WHERE `k` IN (500)" {
		t.Errorf("deletes: %d statements, first with %d values", len(got), strings.Count(got[0], ",")+1)
	}
	var steps []step
	for i := range maxPendingChanges/2 + 1 {
		steps = append(steps, step{kv, []txn.Change{ins(row(i64(int64(i)), null))}}, step{other, []txn.Change{ins(row(i64(int64(i))))}})
	}
	got = runStatements(t, steps)
	if len(got) != 4 || !strings.HasPrefix(got[2], "INSERT INTO `d`.`kv`") || !strings.HasSuffix(got[2], "VALUES (2048,NULL)") {
		t.Errorf("pending bound: %d statements", len(got))
	}
}

type nullSink struct{}

func (nullSink) Send(_ []byte, stmts []Stmt) ([]int64, error) {
	counts := make([]int64, len(stmts))
	for i, st := range stmts {
		counts[i] = max(st.Expect, 0)
	}
	return counts, nil
}

// BenchmarkRuns: binlane's own cost of writing an order-entry-like merged
// commit (126 transactions of 5 stock updates and 5 order lines) with and
// without the run planner.
func BenchmarkRuns(b *testing.B) {
	stock := keyed(upsertTable("stock", false, nil, "id", "qty"))
	line := keyed(table("line", 1, false, "id", "item", "n"))
	references(line, 1, stock, plan.NoAction)
	var bodies []txn.Body
	var plans [][]*plan.Table
	for i := range 126 {
		var steps []step
		for j := range 5 {
			id := int64(i*5 + j)
			steps = append(steps, step{stock, []txn.Change{upd(row(i64(id%997), i64(9)), row(i64(id%997), i64(8)))}},
				step{line, []txn.Change{ins(row(i64(id), i64(id%997), i64(1)))}})
		}
		body, p := bodyOf(steps...)
		bodies, plans = append(bodies, body), append(plans, p)
	}
	keys := make([]*Keys, len(bodies))
	for i := range bodies {
		keys[i] = writesetKeys(&bodies[i], plans[i])
	}
	for _, c := range []struct {
		runs, known bool
	}{{false, false}, {true, false}, {true, true}} {
		b.Run(fmt.Sprintf("runs=%v/writeset-keys=%v", c.runs, c.known), func(b *testing.B) {
			w := NewWriter(nullSink{})
			w.Runs = c.runs
			for b.Loop() {
				w.Begin()
				for i := range bodies {
					var k *Keys
					if c.known {
						k = keys[i]
					}
					if err := w.Body(t1, &bodies[i], plans[i], k); err != nil {
						b.Fatal(err)
					}
				}
				w.Finish()
				w.Discard()
			}
		})
	}
}
