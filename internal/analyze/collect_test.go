package analyze

import (
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/apply"
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/txn"
)

// TestReasonCodes: the run-alone codes are the applier's.
func TestReasonCodes(t *testing.T) {
	if AloneDDL != apply.AloneDDL || AloneTooLarge != apply.AloneTooLarge || AloneSavepoint != apply.AloneSavepoint {
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
	parts = append(parts, big, txn.Part{Txn: big.Txn, Body: rows(tm, 12), Last: true, Bytes: 50})
	for _, p := range parts {
		if err := c.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	got := c.Txns()
	if len(got) != 7 {
		t.Fatalf("%d transactions, want 7", len(got))
	}
	type want struct {
		rows, bytes int
		alone       string
		set         bool
	}
	wants := []want{{2, 100, "", true}, {1, 100, "", true}, {1, 100, "", true}, {0, 100, AloneDDL, false},
		{1, 100, "", true}, {1, 100, AloneSavepoint, true}, {3, 150, AloneTooLarge, false}}
	for i, w := range wants {
		g := got[i]
		if g.Rows != w.rows || g.Bytes != w.bytes || g.Alone != w.alone || (g.Set != nil) != w.set {
			t.Errorf("txn %d: rows %d bytes %d alone %q set %v, want %+v", i+1, g.Rows, g.Bytes, g.Alone, g.Set != nil, w)
		}
	}
	if got[0].GTID != "0-1-1" || got[0].CommitID != 5 || !slices.Equal(got[0].Tables, []string{"shop.orders"}) {
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
