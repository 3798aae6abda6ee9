package schema_test

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"testing"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/schema"
)

// TestLoadTable reads definitions through the cache: columns, keys with
// prefixes and nullability, foreign keys in both directions with their
// rules, triggers, generated columns, and a table that does not exist.
func TestLoadTable(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srv.ExecT(t, "CREATE DATABASE s",
		`CREATE TABLE s.parent (id INT UNSIGNED NOT NULL, code VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL,
			note VARCHAR(100) CHARACTER SET latin1 NULL, seen DATETIME(3), raw VARBINARY(16),
			doubled INT AS (id * 2) STORED, tripled INT AS (id * 3) VIRTUAL,
			PRIMARY KEY (id), UNIQUE KEY code (code), UNIQUE KEY pfx (note(5), raw), KEY n (note))`,
		`CREATE TABLE s.child (id INT PRIMARY KEY, pid INT UNSIGNED, pcode VARCHAR(20) COLLATE utf8mb4_general_ci,
			CONSTRAINT by_id FOREIGN KEY (pid) REFERENCES s.parent (id) ON DELETE CASCADE,
			CONSTRAINT by_code FOREIGN KEY (pcode) REFERENCES s.parent (code) ON UPDATE SET NULL)`,
		`CREATE TABLE s.pair (a INT, b INT, PRIMARY KEY (a, b), KEY ba (b, a))`,
		`CREATE TABLE s.pair_child (id INT PRIMARY KEY, x INT, y INT,
			CONSTRAINT two FOREIGN KEY (y, x) REFERENCES s.pair (b, a))`,
		"CREATE TABLE s.logged (id INT PRIMARY KEY)",
		"CREATE TRIGGER s.logged_bi BEFORE INSERT ON s.logged FOR EACH ROW SET NEW.id = NEW.id")
	ctx := context.Background()
	cache, err := schema.NewCache(ctx, srv.OpenBinlaneT(t, "s"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *schema.Table {
		t.Helper()
		tbl, err := cache.Get(ctx, "s", name)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}

	p := get("parent")
	type col struct {
		name, dataType, charset, collation string
		nullable, unsigned, generated      bool
		fsp                                int
		maxBytes                           int64
	}
	var cols []col
	for _, c := range p.Columns {
		cols = append(cols, col{c.Name, c.DataType, c.Charset, c.Collation, c.Nullable, c.Unsigned, c.Generated, c.DatetimePrecision, c.MaxBytes})
	}
	wantCols := []col{
		{"id", "int", "", "", false, true, false, 0, 0},
		{"code", "varchar", "utf8mb4", "utf8mb4_general_ci", false, false, false, 0, 80},
		{"note", "varchar", "latin1", "latin1_swedish_ci", true, false, false, 0, 100},
		{"seen", "datetime", "", "", true, false, false, 3, 0},
		{"raw", "varbinary", "", "", true, false, false, 0, 16},
		{"doubled", "int", "", "", true, false, true, 0, 0},
		{"tripled", "int", "", "", true, false, true, 0, 0},
	}
	if !reflect.DeepEqual(cols, wantCols) {
		t.Errorf("columns:\n got %+v\nwant %+v", cols, wantCols)
	}
	if i, ok := p.Column("CODE"); !ok || i != 1 {
		t.Errorf("Column(CODE) = %d, %v: names are case-insensitive", i, ok)
	}
	if p.PrimaryKey == nil || !reflect.DeepEqual(*p.PrimaryKey, schema.Index{Name: "PRIMARY", Columns: []int{0}, Prefix: []int{0}, Unique: true, Type: "BTREE"}) {
		t.Errorf("primary key %+v", p.PrimaryKey)
	}
	wantUnique := []schema.Index{
		{Name: "code", Columns: []int{1}, Prefix: []int{0}, Unique: true, Type: "BTREE"},
		{Name: "pfx", Columns: []int{2, 4}, Prefix: []int{5, 0}, Nullable: true, Unique: true, Type: "BTREE"},
	}
	if !reflect.DeepEqual(p.UniqueKeys, wantUnique) {
		t.Errorf("unique keys (the plain key n must not be listed):\n got %+v\nwant %+v", p.UniqueKeys, wantUnique)
	}
	if k := p.UsableKey(); k != p.PrimaryKey {
		t.Errorf("usable key %+v, want the primary key", k)
	}
	if n := p.IndexByName("N"); n == nil || n.Unique || !reflect.DeepEqual(p.ColumnNames(n), []string{"note"}) || len(p.Indexes) != 4 {
		t.Errorf("indexes %+v: want the plain key n among them", p.Indexes)
	}
	if k := p.ChunkKey(); k == nil || k.Name != "PRIMARY" {
		t.Errorf("chunk key %+v, want the primary key", k)
	}
	if len(p.ForeignKeys) != 0 || len(p.ReferencedBy) != 2 || p.HasTriggers {
		t.Errorf("parent: foreign keys %+v, referenced by %+v, triggers %v", p.ForeignKeys, p.ReferencedBy, p.HasTriggers)
	}

	c := get("child")
	wantFKs := []schema.ForeignKey{
		{Name: "by_code", ChildSchema: "s", ChildTable: "child", ChildColumns: []string{"pcode"}, ParentSchema: "s",
			ParentTable: "parent", ParentColumns: []string{"code"}, OnDelete: "RESTRICT", OnUpdate: "SET NULL"},
		{Name: "by_id", ChildSchema: "s", ChildTable: "child", ChildColumns: []string{"pid"}, ParentSchema: "s",
			ParentTable: "parent", ParentColumns: []string{"id"}, OnDelete: "CASCADE", OnUpdate: "RESTRICT"},
	}
	if !reflect.DeepEqual(c.ForeignKeys, wantFKs) {
		t.Errorf("child foreign keys:\n got %+v\nwant %+v", c.ForeignKeys, wantFKs)
	}
	if !reflect.DeepEqual(p.ReferencedBy, wantFKs) {
		t.Errorf("parent referenced by:\n got %+v\nwant %+v", p.ReferencedBy, wantFKs)
	}
	for _, fk := range wantFKs {
		if !fk.Cascades() {
			t.Errorf("%s: Cascades() = false", fk.Name)
		}
	}
	pc := get("pair_child")
	if len(pc.ForeignKeys) != 1 || !reflect.DeepEqual(pc.ForeignKeys[0].ChildColumns, []string{"y", "x"}) ||
		!reflect.DeepEqual(pc.ForeignKeys[0].ParentColumns, []string{"b", "a"}) || pc.ForeignKeys[0].Cascades() {
		t.Errorf("two-column foreign key: %+v", pc.ForeignKeys)
	}
	if !get("logged").HasTriggers {
		t.Error("trigger not seen")
	}
	if get("absent") != nil {
		t.Error("a missing table must load as nil")
	}

	// An account with SELECT only (a source's) sees the foreign keys but
	// not their rules: they count as acting on child rows.
	srv.ExecT(t, "CREATE USER reader@'%' IDENTIFIED BY 'r3ader'", "GRANT SELECT ON s.* TO reader@'%'")
	rdb, err := sql.Open("mysql", fmt.Sprintf("reader:r3ader@tcp(%s)/", srv.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	rcache, err := schema.NewCache(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcache.Get(ctx, "s", "pair_child")
	if err != nil {
		t.Fatal(err)
	}
	if len(rc.ForeignKeys) != 1 || !rc.ForeignKeys[0].RulesHidden || rc.ForeignKeys[0].OnDelete != "" ||
		!reflect.DeepEqual(rc.ForeignKeys[0].ChildColumns, []string{"y", "x"}) || !rc.ForeignKeys[0].Cascades() {
		t.Errorf("foreign key with hidden rules: %+v", rc.ForeignKeys)
	}

	// The cache returns the same definition until invalidated; then a
	// reload sees the change (with a new version), and so do the tables
	// linked by foreign keys.
	if get("parent") != p {
		t.Error("cached definition reloaded")
	}
	srv.ExecT(t, "ALTER TABLE s.parent ADD COLUMN extra INT")
	cache.Invalidate("s", "parent")
	p2 := get("parent")
	if p2 == p || p2.Version == p.Version || len(p2.Columns) != len(p.Columns)+1 {
		t.Errorf("after Invalidate: same definition (version %d -> %d, %d columns)", p.Version, p2.Version, len(p2.Columns))
	}
	if get("child") == c {
		t.Error("invalidating the parent must drop the child's definition too")
	}
}

// TestCatalog reads the tables the rules select at once, with the key that
// chunks each, and the unique keys a copy deferred as the cache lists them.
func TestCatalog(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srv.ExecT(t, "CREATE DATABASE s", "CREATE DATABASE other",
		"CREATE TABLE s.pk (id BIGINT PRIMARY KEY, u INT NOT NULL, UNIQUE KEY u (u))",
		// No primary key: the unique key with the fewest columns, of those
		// that qualify (not the one with a NULL-able column, not a prefix).
		`CREATE TABLE s.uk (a INT NOT NULL, b INT NOT NULL, c VARCHAR(20) NOT NULL, d INT NULL,
			UNIQUE KEY ab (a, b), UNIQUE KEY c (c), UNIQUE KEY d (d), UNIQUE KEY pc (c(3), a))`,
		"CREATE TABLE s.nokey (a FLOAT, b TEXT, KEY a (a))",
		"CREATE TABLE s.floaty (f DOUBLE NOT NULL, UNIQUE KEY f (f))",
		"CREATE VIEW s.v AS SELECT id FROM s.pk",
		"CREATE TABLE other.x (id INT PRIMARY KEY)")
	ctx := context.Background()
	db := srv.OpenBinlaneT(t, "s", "other")
	rules, err := filter.New([]string{"s"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := schema.ReadCatalog(ctx, db, rules, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tb := range tables {
		key := "-"
		if k := tb.ChunkKey(); k != nil {
			key = k.Name
		}
		got[tb.Name] = tb.Type + " " + key
	}
	want := map[string]string{"pk": "BASE TABLE PRIMARY", "uk": "BASE TABLE c", "nokey": "BASE TABLE -",
		"floaty": "BASE TABLE -", "v": "VIEW -"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("catalog:\n got %v\nwant %v", got, want)
	}

	cache, err := schema.NewCache(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	srv.ExecT(t, "ALTER TABLE s.pk DROP INDEX u")
	cache.SetPending("s", "pk", []schema.PendingKey{{Name: "u", Columns: []string{"u"}, Prefix: []int{0}}})
	pk, err := cache.Get(ctx, "s", "pk")
	if err != nil || pk == nil {
		t.Fatal(pk, err)
	}
	if len(pk.UniqueKeys) != 1 || !pk.UniqueKeys[0].Deferred || pk.UniqueKeys[0].Name != "u" || pk.IndexByName("u") != nil {
		t.Errorf("a deferred unique key: unique keys %+v, indexes %+v", pk.UniqueKeys, pk.Indexes)
	}
	srv.ExecT(t, "ALTER TABLE s.pk ADD UNIQUE KEY u (u)") // built
	cache.SetPending("s", "pk", nil)
	if pk, err = cache.Get(ctx, "s", "pk"); err != nil || len(pk.UniqueKeys) != 1 || pk.UniqueKeys[0].Deferred {
		t.Errorf("after the build: %+v %v", pk.UniqueKeys, err)
	}
}

// cacheFixture is a target with schema s (foreign keys within it and from
// schema o, a self-reference, a trigger, a view) and an empty schema e,
// for the cache's tests.
func cacheFixture(t *testing.T) (*sandbox.Server, *sql.DB) {
	t.Helper()
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srv.ExecT(t, "CREATE DATABASE s", "CREATE DATABASE o", "CREATE DATABASE e",
		"CREATE TABLE s.parent (id INT PRIMARY KEY, code VARCHAR(20) NOT NULL, UNIQUE KEY code (code))",
		"CREATE TABLE s.child (id INT PRIMARY KEY, pid INT, CONSTRAINT c1 FOREIGN KEY (pid) REFERENCES s.parent (id) ON DELETE CASCADE)",
		"CREATE TABLE s.self (id INT PRIMARY KEY, up INT, CONSTRAINT up FOREIGN KEY (up) REFERENCES s.self (id))",
		"CREATE TABLE s.logged (id INT PRIMARY KEY)",
		"CREATE TRIGGER s.logged_bi BEFORE INSERT ON s.logged FOR EACH ROW SET NEW.id = NEW.id",
		"CREATE VIEW s.v AS SELECT id FROM s.parent",
		"CREATE TABLE o.far (id INT PRIMARY KEY, code VARCHAR(20), CONSTRAINT far FOREIGN KEY (code) REFERENCES s.parent (code) ON UPDATE SET NULL)")
	return srv, srv.OpenBinlaneT(t, "s", "o", "e")
}

// sameAsRead checks that the cache hands out for s.name what ReadTable
// reads for it alone, and returns it.
func sameAsRead(t *testing.T, cache *schema.Cache, db *sql.DB, name string) *schema.Table {
	t.Helper()
	ctx := context.Background()
	got, err := cache.Get(ctx, "s", name)
	if err != nil {
		t.Fatal(err)
	}
	want, err := schema.ReadTable(ctx, db, "s", name)
	if err != nil {
		t.Fatal(err)
	}
	if got == nil || want == nil {
		t.Fatalf("%s: cached %v, read %v", name, got, want)
	}
	g, w := *got, *want
	g.Version, w.Version = 0, 0
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: cached\n%+v\nread alone\n%+v", name, g, w)
	}
	return got
}

// selects counts the server's SELECT statements so far.
func selects(t *testing.T, db *sql.DB) int {
	t.Helper()
	var name string
	var n int
	if err := db.QueryRowContext(context.Background(), "SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrefetch: the cache reads a schema's tables at once on its first
// miss, and what it hands out for each is what ReadTable reads for it
// alone: foreign keys from other schemas, triggers, unique keys. After
// Invalidate of one table, its next read is its own and sees the change.
func TestPrefetch(t *testing.T) {
	srv, db := cacheFixture(t)
	ctx := context.Background()
	cache, err := schema.NewCache(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	same := func(name string) *schema.Table { t.Helper(); return sameAsRead(t, cache, db, name) }
	if _, err := cache.Get(ctx, "s", "self"); err != nil { // the first miss reads the schema
		t.Fatal(err)
	}
	before := selects(t, db)
	if _, err := cache.Get(ctx, "s", "child"); err != nil {
		t.Fatal(err)
	}
	if n := selects(t, db) - before; n != 0 {
		t.Errorf("%d queries to get a table of a schema read already", n)
	}
	self := same("self")
	for _, name := range []string{"parent", "child", "logged", "v"} {
		same(name)
	}
	if p := same("parent"); len(p.ReferencedBy) != 2 {
		t.Errorf("parent referenced by %+v: want s.child and o.far", p.ReferencedBy)
	}
	if got, _ := cache.Get(ctx, "s", "self"); got != self {
		t.Error("a prefetched definition was read again")
	}
	srv.ExecT(t, "ALTER TABLE s.logged ADD COLUMN extra INT")
	cache.Invalidate("s", "logged")
	if l := same("logged"); len(l.Columns) != 2 {
		t.Errorf("logged after Invalidate: %d columns, want 2", len(l.Columns))
	}
}

// TestWarm: Warm reads the selected schemas into the cache and returns
// the tables ReadCatalog returns for the same rules; a table of a warmed
// schema is then served without a query, and is what ReadTable reads for
// it alone (foreign keys from another schema, triggers). A schema the
// rules leave out is not read; one empty at Warm (a copy is to fill it)
// (e) is read whole at its first miss.
func TestWarm(t *testing.T) {
	srv, db := cacheFixture(t)
	ctx := context.Background()
	rules, err := filter.New([]string{"s", "e"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := schema.NewCache(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	warmed, err := cache.Warm(ctx, rules)
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := schema.ReadCatalog(ctx, db, rules, true)
	if err != nil {
		t.Fatal(err)
	}
	names := func(ts []*schema.Table) (out []string) {
		for _, tb := range ts {
			out = append(out, tb.Schema+"."+tb.Name+" "+tb.Type)
		}
		return out
	}
	if g, w := names(warmed), names(catalog); !reflect.DeepEqual(g, w) {
		t.Errorf("Warm returned %v, ReadCatalog %v", g, w)
	}
	before := selects(t, db)
	cached := map[string]*schema.Table{}
	for _, name := range []string{"parent", "child", "self", "logged", "v"} {
		if cached[name], err = cache.Get(ctx, "s", name); err != nil || cached[name] == nil {
			t.Fatal(name, cached[name], err)
		}
	}
	if n := selects(t, db) - before; n != 0 {
		t.Errorf("%d queries to get tables of a warmed schema", n)
	}
	for name, tb := range cached {
		if got := sameAsRead(t, cache, db, name); got != tb {
			t.Errorf("%s was read again", name)
		}
	}
	if p := cached["parent"]; len(p.ReferencedBy) != 2 {
		t.Errorf("parent referenced by %+v: want s.child and o.far", p.ReferencedBy)
	}
	before = selects(t, db)
	if far, err := cache.Get(ctx, "o", "far"); err != nil || far == nil {
		t.Fatal(far, err)
	}
	if selects(t, db) == before {
		t.Error("a table of a schema the rules leave out was not read: Warm read more than it was asked")
	}
	srv.ExecT(t, "CREATE TABLE e.a (id INT PRIMARY KEY)", "CREATE TABLE e.b (id INT PRIMARY KEY)")
	if a, err := cache.Get(ctx, "e", "a"); err != nil || a == nil {
		t.Fatal(a, err)
	}
	before = selects(t, db)
	if b, err := cache.Get(ctx, "e", "b"); err != nil || b == nil {
		t.Fatal(b, err)
	}
	if n := selects(t, db) - before; n != 0 {
		t.Errorf("%d queries for e.b: a schema empty at Warm was not read whole at its first miss", n)
	}
}
