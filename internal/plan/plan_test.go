package plan_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
	"github.com/binlane/binlane/internal/writeset"
)

// Tables on both servers. Plans map the source's table maps (read from its
// binlog, as replication sees them) onto the target's definitions.
var common = []string{
	`CREATE TABLE p.parent (id INT PRIMARY KEY, code VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL UNIQUE,
		email VARCHAR(50) NULL UNIQUE, note VARCHAR(100), UNIQUE KEY pfx (note(5)), KEY n (note))`,
	`CREATE TABLE p.child (id INT PRIMARY KEY, parent_id INT, parent_code VARCHAR(20) COLLATE utf8mb4_general_ci,
		FOREIGN KEY (parent_id) REFERENCES p.parent (id) ON DELETE CASCADE,
		FOREIGN KEY (parent_code) REFERENCES p.parent (code) ON UPDATE SET NULL)`,
	`CREATE TABLE p.grandchild (id INT PRIMARY KEY, child_id INT,
		FOREIGN KEY (child_id) REFERENCES p.child (id) ON DELETE SET NULL)`,
	// References a column that is not a unique key of the parent.
	`CREATE TABLE p.loose (id INT PRIMARY KEY, parent_note VARCHAR(100), FOREIGN KEY (parent_note) REFERENCES p.parent (note))`,
	`CREATE TABLE p.pair (a INT, b INT, PRIMARY KEY (a, b), KEY ba (b, a))`,
	`CREATE TABLE p.pair_child (id INT PRIMARY KEY, x INT, y INT, FOREIGN KEY (y, x) REFERENCES p.pair (b, a))`,
	`CREATE TABLE p.uniq (a INT NOT NULL, b INT NULL, UNIQUE KEY ub (b), UNIQUE KEY ua (a))`,
	`CREATE TABLE p.nokey (a INT, b VARCHAR(10))`,
	`CREATE TABLE p.trig (id INT PRIMARY KEY, v INT)`,
	`CREATE TABLE p.gen (id INT PRIMARY KEY, a INT, b INT AS (a * 2) STORED, c INT AS (a + 1) VIRTUAL)`,
	`CREATE TABLE p.uca (id INT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_uca1400_ai_ci UNIQUE)`,
	`CREATE TABLE p.longu (id INT PRIMARY KEY, body TEXT, UNIQUE KEY (body))`, // a long unique key: HASH
	`CREATE TABLE p.loadok (id BIGINT PRIMARY KEY, i INT, y YEAR, d DECIMAL(10,2), f DOUBLE, dt DATETIME(6), ts TIMESTAMP NULL,
		s VARCHAR(20) CHARACTER SET utf8mb4, b VARBINARY(10), j TEXT, g INT AS (i + 1) VIRTUAL)`,
	`CREATE TABLE p.loadbit (id INT PRIMARY KEY, f BIT(3))`,
	`CREATE TABLE p.loadenum (id INT PRIMARY KEY, e ENUM('a', 'b'))`,
	`CREATE TABLE p.joinok (id BIGINT PRIMARY KEY, s VARCHAR(20) CHARACTER SET utf8mb4, d DECIMAL(10,2), dt DATETIME(6), KEY d (d))`,
	`CREATE TABLE p.joinstr (id VARCHAR(10) PRIMARY KEY, v INT)`,
	`CREATE TABLE p.loadjson (id INT PRIMARY KEY, j JSON)`, // MariaDB: LONGTEXT with a CHECK
}

// Tables that differ: source definition, target definition ("" = none).
var differing = []struct{ src, dst string }{
	{"CREATE TABLE p.widen (id INT PRIMARY KEY, v INT UNSIGNED, s SMALLINT)", "CREATE TABLE p.widen (id INT PRIMARY KEY, v BIGINT, s INT)"},
	{"CREATE TABLE p.conv (id INT PRIMARY KEY, name VARCHAR(20) CHARACTER SET latin1 COLLATE latin1_bin UNIQUE)",
		"CREATE TABLE p.conv (id INT PRIMARY KEY, name VARCHAR(20) COLLATE utf8mb4_bin UNIQUE)"},
	{"CREATE TABLE p.missing (id INT PRIMARY KEY)", ""},
	{"CREATE TABLE p.lesscol (id INT PRIMARY KEY, extra INT)", "CREATE TABLE p.lesscol (id INT PRIMARY KEY)"},
	{"CREATE TABLE p.mismatch (id INT PRIMARY KEY, v BIGINT)", "CREATE TABLE p.mismatch (id INT PRIMARY KEY, v VARCHAR(10))"},
	{"CREATE TABLE p.narrow (id INT PRIMARY KEY, v BIGINT)", "CREATE TABLE p.narrow (id INT PRIMARY KEY, v INT)"},
	{"CREATE TABLE p.sign (id INT PRIMARY KEY, v INT)", "CREATE TABLE p.sign (id INT PRIMARY KEY, v INT UNSIGNED)"},
	{"CREATE TABLE p.sign2 (id INT PRIMARY KEY, v BIGINT UNSIGNED)", "CREATE TABLE p.sign2 (id INT PRIMARY KEY, v BIGINT)"},
	{"CREATE TABLE p.nonames (id INT PRIMARY KEY)", "CREATE TABLE p.nonames (id INT PRIMARY KEY)"},
	{"CREATE TABLE p.loadextra (id INT PRIMARY KEY)", "CREATE TABLE p.loadextra (id INT PRIMARY KEY, extra INT DEFAULT 1)"},
	// Created under mysql56_temporal_format=OFF on the source (below).
	{"CREATE TABLE p.old (id INT PRIMARY KEY, t DATETIME(6))", "CREATE TABLE p.old (id INT PRIMARY KEY, t DATETIME(6))"},
}

// setup creates the tables, writes a row into each on the source and
// returns the source's table maps by table name, and a plan builder on
// the target.
func setup(t *testing.T) (map[string]*binlog.TableMap, *plan.Builder) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	for _, s := range []*sandbox.Server{src, dst} {
		s.ExecT(t, append([]string{"CREATE DATABASE p"}, common...)...)
	}
	dst.ExecT(t, "CREATE TRIGGER p.trig_bi BEFORE INSERT ON p.trig FOR EACH ROW SET NEW.v = NEW.v + 1")
	for _, d := range differing {
		if strings.Contains(d.src, "p.old ") {
			src.ExecT(t, "SET GLOBAL mysql56_temporal_format = OFF", d.src, "SET GLOBAL mysql56_temporal_format = ON")
		} else {
			src.ExecT(t, d.src)
		}
		if d.dst != "" {
			dst.ExecT(t, d.dst)
		}
	}
	rows := []string{"SET SESSION foreign_key_checks = 0"}
	for _, tbl := range []string{"parent (id, code)", "child (id)", "grandchild (id)", "loose (id)", "pair (a, b)",
		"pair_child (id)", "uniq (a)", "nokey (a)", "trig (id)", "gen (id, a)", "uca (id)", "longu (id)", "widen (id)", "conv (id)",
		"missing (id)", "lesscol (id)", "mismatch (id)", "narrow (id)", "sign (id)", "sign2 (id)", "old (id)",
		"loadok (id)", "loadbit (id)", "loadenum (id)", "loadextra (id)", "joinok (id)", "joinstr (id)", "loadjson (id)"} {
		values := "(1)"
		if strings.Contains(tbl, ",") {
			values = "(1, 1)"
		}
		rows = append(rows, "INSERT INTO p."+tbl+" VALUES "+values)
	}
	src.ExecT(t, rows...)
	src.ExecT(t, "SET GLOBAL binlog_row_metadata = MINIMAL", "INSERT INTO p.nonames VALUES (1)",
		"SET GLOBAL binlog_row_metadata = FULL", "FLUSH BINARY LOGS")

	maps := map[string]*binlog.TableMap{}
	files, _ := filepath.Glob(filepath.Join(src.DataDir(), "binlog.[0-9]*"))
	sort.Strings(files)
	for _, f := range files[:len(files)-1] { // the last one is still open
		r, err := binlog.OpenFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if tm, ok := ev.Data.(*binlog.TableMap); ok {
				maps[tm.Table] = tm
			}
		}
		r.Close()
	}
	b, _ := targetBuilder(t, dst, "p", plan.Options{AllowTriggers: true})
	return maps, b
}

// targetBuilder returns a plan builder on a target as binlane reads it,
// and its definitions cache.
func targetBuilder(t *testing.T, dst *sandbox.Server, db string, opts plan.Options) (*plan.Builder, *schema.Cache) {
	t.Helper()
	meta := dst.OpenBinlaneT(t, db)
	colls, err := schema.LoadCollations(context.Background(), meta)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := schema.NewCache(context.Background(), meta)
	if err != nil {
		t.Fatal(err)
	}
	return plan.NewBuilder(cache, colls, opts), cache
}

func TestPlan(t *testing.T) {
	maps, b := setup(t)
	ctx := context.Background()
	get := func(table string) *plan.Table {
		t.Helper()
		tm := maps[table]
		if tm == nil {
			t.Fatalf("no table map for %s", table)
		}
		p, err := b.Get(ctx, tm)
		if err != nil {
			t.Fatalf("plan %s: %v", table, err)
		}
		if again, _ := b.Get(ctx, tm); again != p {
			t.Errorf("%s: plan not cached", table)
		}
		return p
	}
	seed := func(table, index string) uint64 {
		return plan.IndexSeed(schema.Ident{Schema: "p", Table: table}, index)
	}
	tbl := func(table string) uint64 { return plan.TableSeed(schema.Ident{Schema: "p", Table: table}) }

	t.Run("keys", func(t *testing.T) {
		p := get("parent")
		want := []plan.Key{
			{Seed: seed("parent", "PRIMARY"), Cols: []int{0}, Prefix: []int{0}, Primary: true},
			{Seed: seed("parent", "code"), Cols: []int{1}, Prefix: []int{0}},
			{Seed: seed("parent", "email"), Cols: []int{2}, Prefix: []int{0}},
			{Seed: seed("parent", "pfx"), Cols: []int{3}, Prefix: []int{5}},
		}
		if !reflect.DeepEqual(p.Keys, want) {
			t.Errorf("keys:\n got %+v\nwant %+v", p.Keys, want)
		}
		if !reflect.DeepEqual(p.RowKey, []int{0}) || !reflect.DeepEqual(p.Write, []int{0, 1, 2, 3}) || p.Name != "`p`.`parent`" {
			t.Errorf("row key %v, write %v, name %s", p.RowKey, p.Write, p.Name)
		}
		if c := p.Cols[1]; c.Introducer != "utf8mb4" || c.Coll.Name != "utf8mb4_general_ci" || !c.Coll.CaseInsensitive || c.Quoted != "`code`" {
			t.Errorf("column code: %+v", c)
		}
		// The nullable unique key cannot identify rows: the NOT NULL one does.
		u := get("uniq")
		if !reflect.DeepEqual(u.RowKey, []int{0}) || len(u.Keys) != 2 || u.Keys[0].Primary || u.Keys[1].Primary {
			t.Errorf("uniq: row key %v, keys %+v", u.RowKey, u.Keys)
		}
		if n := get("nokey"); n.RowKey != nil || len(n.Keys) != 0 || n.Collapsible {
			t.Errorf("nokey: row key %v, keys %+v, collapsible %v", n.RowKey, n.Keys, n.Collapsible)
		}
		if p.Collapsible || !get("gen").Collapsible || get("uniq").Collapsible {
			t.Error("only a table with a primary key and nothing else may collapse")
		}
		// Upserts need a primary key, no trigger and unique keys InnoDB
		// checks (not a long unique key); foreign keys are allowed (their
		// columns are marked, as are unique keys').
		if get("uniq").Upsert || get("nokey").Upsert || get("trig").Upsert || get("longu").Upsert ||
			!p.Upsert || !get("child").Upsert || !get("gen").Upsert {
			t.Error("upsert: only tables with a primary key and BTREE unique keys, without triggers")
		}
		var fk, uk []string
		for _, name := range []string{"parent", "child", "grandchild"} {
			for _, c := range get(name).Cols {
				if c.ForeignKey {
					fk = append(fk, name+"."+c.Name)
				}
				if c.Unique {
					uk = append(uk, name+"."+c.Name)
				}
			}
		}
		// parent.note is referenced by loose (not a unique key of parent:
		// still a column whose change the target checks).
		if want := []string{"parent.id", "parent.code", "parent.note", "child.id", "child.parent_id", "child.parent_code", "grandchild.child_id"}; !slices.Equal(fk, want) {
			t.Errorf("foreign-key columns %v, want %v", fk, want)
		}
		if want := []string{"parent.code", "parent.email", "parent.note"}; !slices.Equal(uk, want) {
			t.Errorf("unique-key columns %v, want %v", uk, want)
		}
	})

	t.Run("loadable", func(t *testing.T) {
		// LOAD DATA writes whole rows of every kind whose text reads as
		// its literal does, generated columns left out; not BIT or ENUM,
		// not into a target with a column the source lacks (a REPLACE
		// would reset it), not across charsets.
		for table, want := range map[string]bool{"loadok": true, "gen": true, "widen": true, "parent": true, "loadjson": true,
			"loadbit": false, "loadenum": false, "loadextra": false, "conv": false} {
			if got := get(table).Loadable; got != want {
				t.Errorf("%s: loadable %v, want %v", table, got, want)
			}
		}
	})

	t.Run("wholerows", func(t *testing.T) {
		// A REPLACE writes whole rows when every stored target column is
		// written, whatever the columns' kinds or charsets (its values are
		// literals); not into a target with a column the source lacks.
		for table, want := range map[string]bool{"loadok": true, "gen": true, "loadbit": true, "loadenum": true, "conv": true,
			"loadextra": false} {
			if got := get(table).WholeRows; got != want {
				t.Errorf("%s: whole rows %v, want %v", table, got, want)
			}
		}
	})

	t.Run("joinable", func(t *testing.T) {
		// A MEMORY table of the written columns can hold a collapsible,
		// loadable table's rows when its key is one integer and no column
		// is a BLOB or TEXT; JoinBytes is a MEMORY row's size: VARCHAR at
		// its maximum (20 utf8mb4 characters: 80 bytes and 2).
		for table, want := range map[string]int{"joinok": 16 + 8 + 82 + 7 + 8, "gen": 16 + 4 + 4, "widen": 16 + 4 + 8 + 4,
			"joinstr": 0, "loadok": 0, "parent": 0, "conv": 0, "pair": 0, "loadjson": 0} {
			if got := get(table).JoinBytes; got != want {
				t.Errorf("%s: join bytes %d, want %d", table, got, want)
			}
		}
		// IntKey: the primary key is one integer column, whatever else
		// the table has (rowsql's range deletes).
		for table, want := range map[string]bool{"joinok": true, "loadok": true, "parent": true, "conv": true,
			"joinstr": false, "pair": false} {
			if got := get(table).IntKey; got != want {
				t.Errorf("%s: IntKey %v, want %v", table, got, want)
			}
		}
	})

	t.Run("foreign keys", func(t *testing.T) {
		p := get("parent")
		// parent <- child: parent_id ON DELETE CASCADE (child rows named by
		// the parent's key; deleting them sets grandchild rows' child_id NULL,
		// rows nobody names: grandchild taken), parent_code ON UPDATE SET NULL
		// (its child rows named by the parent's code; SET NULL of
		// parent_code reaches no further).
		if len(p.Children) != 2 {
			t.Fatalf("parent's children %+v", p.Children)
		}
		for _, ch := range p.Children {
			if ch.Table != tbl("child") || ch.Whole {
				t.Errorf("child %+v", ch)
			}
			switch {
			case reflect.DeepEqual(ch.Cols, []int{0}):
				if ch.OnDelete != plan.Cascade || ch.OnUpdate != plan.NoAction ||
					!reflect.DeepEqual(ch.DeeperDelete, []uint64{tbl("grandchild")}) || len(ch.DeeperUpdate) != 0 {
					t.Errorf("parent_id: %+v", ch)
				}
			case reflect.DeepEqual(ch.Cols, []int{1}):
				if ch.OnDelete != plan.NoAction || ch.OnUpdate != plan.SetNull || len(ch.DeeperDelete)+len(ch.DeeperUpdate) != 0 {
					t.Errorf("parent_code: %+v", ch)
				}
			default:
				t.Errorf("child over columns %v", ch.Cols)
			}
		}
		c := get("child")
		if len(c.Children) != 1 || c.Children[0].Table != tbl("grandchild") || c.Children[0].OnDelete != plan.SetNull ||
			len(get("grandchild").Children) != 0 || len(get("loose").Children) != 0 {
			t.Errorf("child's children %+v", c.Children)
		}
		if len(c.Parents) != 2 {
			t.Fatalf("child parents %+v", c.Parents)
		}
		for _, ref := range c.Parents {
			if ref.TableLevel || ref.ParentTable != tbl("parent") || len(ref.Colls) != 1 {
				t.Errorf("reference %+v", ref)
			}
			switch {
			case reflect.DeepEqual(ref.Cols, []int{1}):
				if ref.Seed != seed("parent", "PRIMARY") {
					t.Error("parent_id must hash like the parent's primary key")
				}
			case reflect.DeepEqual(ref.Cols, []int{2}):
				if ref.Seed != seed("parent", "code") || ref.Colls[0].Name != "utf8mb4_general_ci" {
					t.Errorf("parent_code: %+v", ref)
				}
			default:
				t.Errorf("reference over columns %v", ref.Cols)
			}
		}
		if l := get("loose"); len(l.Parents) != 1 || !l.Parents[0].TableLevel || l.Parents[0].ParentTable != tbl("parent") {
			t.Errorf("reference to a non-unique column: %+v", l.Parents)
		}
		// FOREIGN KEY (y, x) REFERENCES pair (b, a), whose key is (a, b): the
		// child's columns in the key's order are x, y.
		pc := get("pair_child")
		if len(pc.Parents) != 1 || !reflect.DeepEqual(pc.Parents[0].Cols, []int{1, 2}) || pc.Parents[0].Seed != seed("pair", "PRIMARY") {
			t.Errorf("two-column reference: %+v", pc.Parents)
		}
	})

	t.Run("references hash like the parent's keys", func(t *testing.T) {
		i := func(n int64) binlog.Value { return binlog.Value{Kind: binlog.KindInt, N: n} }
		s := func(v string) binlog.Value { return binlog.Value{Kind: binlog.KindString, B: []byte(v)} }
		null := binlog.Value{Kind: binlog.KindNull}
		cases := []struct {
			name   string
			a, b   *plan.Table
			ca, cb txn.Change
			shared int
		}{
			// An insert shares two keys per reference with a parent delete:
			// the parent key (its check locks the row) and the rows
			// referencing it (see writeset.RefSeed).
			{"child row and its parent (by id and by code in another case)", get("child"), get("parent"),
				txn.Change{Kind: binlog.RowsInsert, After: []binlog.Value{i(1), i(7), s("ABC")}},
				txn.Change{Kind: binlog.RowsDelete, Before: []binlog.Value{i(7), s("abc "), null, null}}, 4},
			{"child row keeping its references and its parent's update keeping its keys", get("child"), get("parent"),
				txn.Change{Kind: binlog.RowsUpdate, Before: []binlog.Value{i(1), i(7), s("ABC")}, After: []binlog.Value{i(2), i(7), s("ABC")}},
				txn.Change{Kind: binlog.RowsUpdate, Before: []binlog.Value{i(7), s("abc"), null, null}, After: []binlog.Value{i(7), s("abc"), i(1), null}}, 0},
			{"child row and another parent", get("child"), get("parent"),
				txn.Change{Kind: binlog.RowsInsert, After: []binlog.Value{i(1), i(8), s("abd")}},
				txn.Change{Kind: binlog.RowsDelete, Before: []binlog.Value{i(7), s("abc"), null, null}}, 0},
			{"two-column reference", get("pair_child"), get("pair"),
				txn.Change{Kind: binlog.RowsInsert, After: []binlog.Value{i(1), i(10), i(20)}},
				txn.Change{Kind: binlog.RowsDelete, Before: []binlog.Value{i(10), i(20)}}, 2},
			{"two-column reference, swapped values", get("pair_child"), get("pair"),
				txn.Change{Kind: binlog.RowsInsert, After: []binlog.Value{i(1), i(10), i(20)}},
				txn.Change{Kind: binlog.RowsDelete, Before: []binlog.Value{i(20), i(10)}}, 0},
		}
		for _, c := range cases {
			var wb writeset.Builder
			var sa, sb scheduler.KeySet
			wb.AddChange(&sa, c.a, &c.ca)
			wb.AddChange(&sb, c.b, &c.cb)
			n := 0 // keys one holds exclusively and the other at all
			for _, k := range sa.Keys {
				if slices.Contains(sb.Keys, k) || slices.Contains(sb.Shared, k) {
					n++
				}
			}
			for _, k := range sa.Shared {
				if slices.Contains(sb.Keys, k) {
					n++
				}
			}
			if n != c.shared {
				t.Errorf("%s: %d keys shared, want %d", c.name, n, c.shared)
			}
		}
	})

	t.Run("columns", func(t *testing.T) {
		if tr := get("trig"); tr.Serialize == "" || tr.Collapsible {
			t.Errorf("table with a trigger: serialize %q, collapsible %v", tr.Serialize, tr.Collapsible)
		}
		g := get("gen")
		if !reflect.DeepEqual(g.Write, []int{0, 1}) || !g.Cols[2].Generated || !g.Cols[3].Generated {
			t.Errorf("generated columns must not be written: write %v", g.Write)
		}
		if u := get("uca").Cols[1].Coll; u.Name != "utf8mb4_uca1400_ai_ci" || !u.CaseInsensitive {
			t.Errorf("uca1400 column: %+v", u)
		}
		get("widen") // unsigned into a wider signed type fits
		// latin1 bytes for a utf8mb4 column: inserted with their own
		// charset, hashed by ASCII only.
		c := get("conv").Cols[1]
		if c.Introducer != "latin1" || c.Coll.Name != "utf8mb4_bin" || c.Coll.Charset != "latin1" || c.Coll.Binary {
			t.Errorf("converted column: %+v", c)
		}
	})

	t.Run("errors", func(t *testing.T) {
		cases := []struct {
			table string
			want  []string
		}{
			{"missing", []string{"`p`.`missing`", "does not exist on the target"}},
			{"lesscol", []string{"`p`.`lesscol`", "`extra`", "missing on the target"}},
			{"mismatch", []string{"`p`.`mismatch`", "`v`", "type mismatch", "varchar(10)"}},
			{"narrow", []string{"`p`.`narrow`", "`v`", "type mismatch", "int(11)"}},
			{"sign", []string{"`p`.`sign`", "`v`", "signedness differs", "int(10) unsigned"}},
			{"sign2", []string{"`p`.`sign2`", "`v`", "signedness differs"}},
			{"old", []string{"`p`.`old`", "`t`", "old (pre-MariaDB 10.0) temporal format"}},
			{"nonames", []string{"`p`.`nonames`", "binlog_row_metadata=FULL"}},
		}
		for _, c := range cases {
			tm := maps[c.table]
			if tm == nil {
				t.Fatalf("no table map for %s", c.table)
			}
			p, err := b.Get(ctx, tm)
			if err == nil {
				t.Errorf("%s: planned %+v, want an error", c.table, p)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q lacks %q", c.table, err, w)
				}
			}
		}
	})
}

// TestIdentityAcrossSpellings: a table's identity is the same whether it
// comes from a binlog table map ("Parent", as the source spells it), from a
// foreign key of another table, or from information_schema ("parent", on a
// target that stores names in lower case). Seeds once came from the
// binlog's spelling on one side and information_schema's on the other, so a
// child/parent conflict could go undetected.
func TestIdentityAcrossSpellings(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target, Extra: []string{"lower-case-table-names=1"}})
	ddl := []string{"CREATE DATABASE Shop",
		"CREATE TABLE Shop.Parent (Id INT PRIMARY KEY, Code VARCHAR(10) NOT NULL UNIQUE)",
		"CREATE TABLE Shop.Child (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES Shop.Parent (Id))"}
	src.ExecT(t, ddl...)
	dst.ExecT(t, ddl...)
	src.ExecT(t, "INSERT INTO Shop.Parent VALUES (1, 'a')", "INSERT INTO Shop.Child VALUES (1, 1)", "FLUSH BINARY LOGS")
	maps := tableMaps(t, src)
	ctx := context.Background()
	b, _ := targetBuilder(t, dst, "shop", plan.Options{})
	parent, err := b.Get(ctx, maps["Parent"])
	if err != nil {
		t.Fatal(err)
	}
	child, err := b.Get(ctx, maps["Child"])
	if err != nil {
		t.Fatal(err)
	}
	if maps["Parent"].Table != "Parent" || parent.Target.Name != "parent" {
		t.Fatalf("spellings: binlog %q, target %q (the test needs them to differ)", maps["Parent"].Table, parent.Target.Name)
	}
	if len(child.Parents) != 1 || child.Parents[0].Seed != parent.Keys[0].Seed || child.Parents[0].ParentTable != parent.TableHash {
		t.Fatalf("the child's reference (%+v) does not name the parent's key (%+v, table %x)", child.Parents, parent.Keys, parent.TableHash)
	}
}

// tableMaps reads a server's closed binlogs and returns the last table map
// of each table.
func tableMaps(t *testing.T, s *sandbox.Server) map[string]*binlog.TableMap {
	t.Helper()
	maps := map[string]*binlog.TableMap{}
	files, _ := filepath.Glob(filepath.Join(s.DataDir(), "binlog.[0-9]*"))
	sort.Strings(files)
	for _, f := range files[:len(files)-1] {
		r, err := binlog.OpenFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if tm, ok := ev.Data.(*binlog.TableMap); ok {
				maps[tm.Table] = tm
			}
		}
		r.Close()
	}
	return maps
}

// TestBuiltDropsPendingPlans: once a copy built a table's deferred unique
// key, a transaction planned after the build fails on the table as it is:
// Reload does not report its definition as changed (it did, and the
// stream restarted before the real error showed).
func TestBuiltDropsPendingPlans(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, u INT, UNIQUE KEY uk (u))",
		"INSERT INTO d.t VALUES (1, 1)", "FLUSH BINARY LOGS")
	dst.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, u INT)")
	maps := tableMaps(t, src)
	ctx := context.Background()
	b, cache := targetBuilder(t, dst, "d", plan.Options{})
	cache.SetPending("d", "t", []schema.PendingKey{{Name: "uk", Columns: []string{"u"}, Prefix: []int{0}}})
	before, err := b.Get(ctx, maps["t"])
	if err != nil {
		t.Fatal(err)
	}
	dst.ExecT(t, "ALTER TABLE d.t ADD UNIQUE KEY uk (u)") // the copy's build
	b.Built("d", "t")
	after, err := b.Get(ctx, maps["t"])
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("the plan built while the key was pending is still handed out after the build")
	}
	changed, err := b.Reload(ctx, []*plan.Table{after})
	if err != nil {
		t.Fatal(err)
	}
	if changed {
		t.Fatal("a transaction planned after the build is reported as planned for a changed table")
	}
	if len(after.Keys) != len(before.Keys) {
		t.Fatalf("the keys differ: %d pending, %d built", len(before.Keys), len(after.Keys))
	}
}
