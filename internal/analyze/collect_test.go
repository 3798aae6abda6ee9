package analyze

import (
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// TestReasonCodes: the run-alone codes are the applier's.
func TestReasonCodes(t *testing.T) {
	if AloneDDL != apply.AloneDDL || AloneTooLarge != apply.AloneTooLarge || AloneSavepoint != apply.AloneSavepoint ||
		AloneStatementDML != apply.AloneStatementDML {
		t.Fatal("reason codes differ from package apply's")
	}
}

func TestCollector(t *testing.T) {
	tm := &binlog.TableMap{Schema: "shop", Table: "orders", HasNames: true, PrimaryKey: []int{0},
		Columns: []binlog.Column{{Name: "id", Type: binlog.TypeLong}, {Name: "v", Type: binlog.TypeLong}}}
	nokey := &binlog.TableMap{Schema: "shop", Table: "log", HasNames: true,
		Columns: []binlog.Column{{Name: "msg", Type: binlog.TypeLong}}}
	rows := func(tm *binlog.TableMap, ids ...int64) txn.Body {
		var b txn.Body
		for _, id := range ids {
			b.Changes = append(b.Changes, txn.Change{Table: tm, Kind: binlog.RowsInsert,
				After: []binlog.Value{{Kind: binlog.KindInt, N: id}, {Kind: binlog.KindInt, N: 7}}[:len(tm.Columns)]})
		}
		b.Items = []txn.Item{{Kind: txn.ItemRows, Rows: &binlog.RowsEvent{Table: tm}, First: 0, Last: len(ids)}}
		return b
	}
	seq := uint64(0)
	part := func(b txn.Body, first, last bool, mod func(*txn.Txn)) txn.Part {
		seq++
		tx := &txn.Txn{Seq: seq, GTID: gtid.GTID{Flavor: gtid.MariaDB, Domain: 0, ServerID: 1, Seq: seq}, CommitID: 5}
		if mod != nil {
			mod(tx)
		}
		return txn.Part{Txn: tx, Body: b, First: first, Last: last, Bytes: 100}
	}
	ddl := txn.Body{Items: []txn.Item{{Kind: txn.ItemStatement, Statement: &txn.Statement{Query: "ALTER TABLE t ADD c INT"}}}}
	c := NewCollector(func(tm *binlog.TableMap) (*plan.Table, error) { return TableMapPlan(tm), nil })
	parts := []txn.Part{
		part(rows(tm, 1, 2), true, true, nil),
		part(rows(tm, 3), true, true, nil),
		part(rows(tm, 2), true, true, nil), // conflicts on id=2
		part(ddl, true, true, nil),
		part(rows(nokey, 1), true, true, nil),
		part(rows(tm, 9), true, true, func(t *txn.Txn) { t.Savepoints = true }),
	}
	big := part(rows(tm, 10, 11), true, false, nil)
	parts = append(parts, big, txn.Part{Txn: big.Txn, Body: rows(tm, 12), Last: true, Bytes: 50},
		part(rows(nokey, 2), true, true, nil)) // waits for the first change of the keyless table
	for _, p := range parts {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Txns()
	if len(got) != 8 {
		t.Fatalf("%d transactions, want 8", len(got))
	}
	type want struct {
		rows, bytes int
		alone       string
		set         bool
	}
	wants := []want{{2, 100, "", true}, {1, 100, "", true}, {1, 100, "", true}, {0, 100, AloneDDL, false},
		{1, 100, "", true}, {1, 100, AloneSavepoint, true}, {3, 150, AloneTooLarge, false}, {1, 100, "", true}}
	for i, w := range wants {
		g := got[i]
		if g.Rows != w.rows || g.Bytes != w.bytes || g.Alone != w.alone || (g.Set != nil) != w.set {
			t.Errorf("txn %d: rows %d bytes %d alone %q set %v, want %+v", i+1, g.Rows, g.Bytes, g.Alone, g.Set != nil, w)
		}
	}
	if got[0].GTID != "0-1-1" || got[0].CommitID != 5 || !slices.Equal(got[0].Tables, []TableRows{{"shop.orders", 2}}) {
		t.Errorf("first: %+v", got[0])
	}
	// A table without a key is taken whole.
	if ts := got[4].Set.Tables; len(ts) != 1 || !ts[0].Exclusive {
		t.Errorf("keyless table access: %+v", ts)
	}
	r := Analyze(got, Options{Model: unitModel(), Workers: []int{1, 2}, Namer: c.Namer()})
	if len(r.HotKeys) != 1 || r.HotKeys[0] != (Count{"shop.orders PRIMARY (id=2)", 1}) {
		t.Errorf("hot keys: %v", r.HotKeys)
	}
	if !slices.Contains(r.HotTables, Count{"shop.log (whole table)", 1}) {
		t.Errorf("hot tables: %v", r.HotTables)
	}
}

// TestCollectorMultiTable: a transaction's rows are counted per table, and
// a key it holds twice (a customer row and an order's reference to it)
// is no conflict; a later change of the customer is one, on its table.
func TestCollectorMultiTable(t *testing.T) {
	cust := &binlog.TableMap{Schema: "fk", Table: "customer", HasNames: true, PrimaryKey: []int{0},
		Columns: []binlog.Column{{Name: "id", Type: binlog.TypeLong}, {Name: "balance", Type: binlog.TypeLong}}}
	ord := &binlog.TableMap{Schema: "fk", Table: "orders", HasNames: true, PrimaryKey: []int{0},
		Columns: []binlog.Column{{Name: "id", Type: binlog.TypeLong}, {Name: "customer_id", Type: binlog.TypeLong}}}
	custID := schema.Ident{Schema: "fk", Table: "customer"}
	plans := map[*binlog.TableMap]*plan.Table{cust: TableMapPlan(cust), ord: TableMapPlan(ord)}
	op := *plans[ord]
	op.Parents = []plan.Parent{{Seed: plan.IndexSeed(custID, "PRIMARY"), Cols: []int{1}, ParentTable: plan.TableSeed(custID)}}
	plans[ord] = &op
	val := func(n int64) binlog.Value { return binlog.Value{Kind: binlog.KindInt, N: n} }
	// body builds one transaction from rows events: (table, kind, rows).
	type ev struct {
		tm   *binlog.TableMap
		kind binlog.RowsKind
		rows [][2]int64
	}
	body := func(evs ...ev) txn.Body {
		var b txn.Body
		for _, e := range evs {
			first := len(b.Changes)
			for _, r := range e.rows {
				row := []binlog.Value{val(r[0]), val(r[1])}
				ch := txn.Change{Table: e.tm, Kind: e.kind, After: row}
				if e.kind == binlog.RowsUpdate {
					ch.Before = []binlog.Value{val(r[0]), val(r[1] - 1)}
				}
				b.Changes = append(b.Changes, ch)
			}
			b.Items = append(b.Items, txn.Item{Kind: txn.ItemRows, Rows: &binlog.RowsEvent{Table: e.tm}, First: first, Last: len(b.Changes)})
		}
		return b
	}
	c := NewCollector(func(tm *binlog.TableMap) (*plan.Table, error) { return plans[tm], nil })
	bodies := []txn.Body{
		// An order: the customer's counter, the order, two more orders.
		body(ev{cust, binlog.RowsUpdate, [][2]int64{{1, 5}}}, ev{ord, binlog.RowsInsert, [][2]int64{{10, 1}, {11, 1}, {12, 1}}}),
		// Another customer's order.
		body(ev{cust, binlog.RowsUpdate, [][2]int64{{2, 5}}}, ev{ord, binlog.RowsInsert, [][2]int64{{20, 2}}}),
		// The first customer's balance.
		body(ev{cust, binlog.RowsUpdate, [][2]int64{{1, 6}}}),
	}
	for i, b := range bodies {
		tx := &txn.Txn{Seq: uint64(i + 1), GTID: gtid.GTID{Flavor: gtid.MariaDB, ServerID: 1, Seq: uint64(i + 1)}}
		if err := c.Add(txn.Part{Txn: tx, Body: b, First: true, Last: true, Bytes: 100}); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Txns()
	if want := []TableRows{{"fk.customer", 1}, {"fk.orders", 3}}; !slices.Equal(got[0].Tables, want) || got[0].Rows != 4 {
		t.Errorf("first transaction: tables %v rows %d, want %v and 4", got[0].Tables, got[0].Rows, want)
	}
	r := Analyze(got, Options{Model: unitModel(), Workers: []int{1}, Namer: c.Namer()})
	if want := []Count{{"fk.orders", 4}, {"fk.customer", 3}}; !slices.Equal(r.TablesByRows, want) {
		t.Errorf("tables by rows %v, want %v", r.TablesByRows, want)
	}
	if want := []Count{{"fk.customer", 1}}; !slices.Equal(r.HotTables, want) {
		t.Errorf("hot tables %v, want %v", r.HotTables, want)
	}
	if want := []Count{{"fk.customer PRIMARY (id=1)", 1}}; !slices.Equal(r.HotKeys, want) {
		t.Errorf("hot keys %v, want %v", r.HotKeys, want)
	}
}
