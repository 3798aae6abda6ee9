package provision

import (
	"context"
	"log/slog"
	"reflect"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// TestDeferredIndexesEndAsTheSource creates tables of many index layouts
// with their deferrable indexes left out, fills them, builds the indexes,
// and compares SHOW CREATE TABLE with the source's: the same text, index
// order included. It also checks what was deferred: the tail of indexes
// after the last one that must stay.
func TestDeferredIndexesEndAsTheSource(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srv.ExecT(t, "CREATE DATABASE src", "CREATE DATABASE dst",
		// sysbench's table.
		"CREATE TABLE src.sb (id INT NOT NULL AUTO_INCREMENT, k INT NOT NULL DEFAULT 0, c CHAR(120) NOT NULL DEFAULT '', "+
			"pad CHAR(60) NOT NULL DEFAULT '', PRIMARY KEY (id), KEY k_1 (k)) ENGINE=InnoDB",
		// Unique and plain keys of every shape, declared out of the order the
		// server keeps them in.
		"CREATE TABLE src.shapes (id BIGINT PRIMARY KEY, a INT NOT NULL, b VARCHAR(50), c INT, d DATETIME(3), "+
			"KEY plain_b (b(10)) COMMENT 'a prefix', UNIQUE KEY u_nullable (c), UNIQUE KEY u_ab (a, b), "+
			"KEY multi (c, d DESC), UNIQUE KEY `odd``name` (d), KEY hidden (a) IGNORED, KEY bt (c) USING BTREE)",
		// No primary key: the unique key without NULLs names rows and stays.
		"CREATE TABLE src.nopk (a INT NOT NULL, b INT NOT NULL, c INT, UNIQUE KEY byb (b), KEY byc (c), KEY byac (a, c))",
		// A foreign key's index in the middle: only what follows it waits.
		"CREATE TABLE src.parent (id INT PRIMARY KEY, code CHAR(4) NOT NULL, UNIQUE KEY code (code), KEY later (code, id))",
		"CREATE TABLE src.child (id INT PRIMARY KEY, x INT, pid INT, y INT, KEY a_x (x), KEY b_pid (pid), KEY c_y (y), "+
			"CONSTRAINT fk FOREIGN KEY (pid) REFERENCES parent (id) ON DELETE CASCADE, CONSTRAINT positive CHECK (y > 0))",
		// Full-text keys sort last and stay: nothing can follow them.
		"CREATE TABLE src.ft (id INT PRIMARY KEY, t TEXT, v INT, KEY v (v), FULLTEXT KEY t (t))",
		// The AUTO_INCREMENT column's only index stays.
		"CREATE TABLE src.ai (id INT NOT NULL, n INT NOT NULL AUTO_INCREMENT, v INT, PRIMARY KEY (id), KEY n (n), KEY v (v))",
		// A long unique key (USING HASH) stays; so does what comes before it.
		"CREATE TABLE src.longu (id INT PRIMARY KEY, b BLOB, v INT, KEY v (v), UNIQUE KEY b (b))",
		"CREATE TABLE src.nokeys (id INT PRIMARY KEY, v INT)")
	for _, q := range []string{
		"INSERT INTO src.sb (k, c, pad) SELECT seq % 100, 'c', 'p' FROM seq_1_to_2000",
		"INSERT INTO src.shapes SELECT seq, seq, CONCAT('b', seq), IF(seq % 3 = 0, NULL, seq), '2020-01-01' + INTERVAL seq SECOND FROM seq_1_to_500",
		"INSERT INTO src.nopk SELECT seq % 7, seq, seq % 5 FROM seq_1_to_500",
		"INSERT INTO src.parent SELECT seq, LPAD(seq, 4, '0') FROM seq_1_to_50",
		"INSERT INTO src.child SELECT seq, seq, seq % 50 + 1, seq FROM seq_1_to_500",
	} {
		srv.ExecT(t, "USE src", q)
	}
	ctx := context.Background()
	db := srv.OpenBinlaneT(t, "src", "dst")
	rules, err := filter.New([]string{"src"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := schema.ReadCatalog(ctx, db, rules, false)
	if err != nil {
		t.Fatal(err)
	}
	var sources []Source
	want := map[string]string{}
	for _, tb := range tables {
		create, err := schema.ShowCreateTable(ctx, db, "src", tb.Name)
		if err != nil {
			t.Fatal(err)
		}
		want[tb.Name] = create
		def := *tb
		def.Schema = "dst"
		sources = append(sources, Source{Def: &def, Create: create})
	}
	deferred, nonEmpty, err := CreateTables(ctx, db, sources, true, nil)
	if err != nil || len(nonEmpty) != 0 {
		t.Fatal(nonEmpty, err)
	}
	got := map[string][]string{}
	for i, src := range sources {
		for _, ix := range deferred[i] {
			got[src.Def.Name] = append(got[src.Def.Name], ix.Name)
		}
	}
	wantDeferred := map[string][]string{
		"sb": {"k_1"},
		// Unique keys first (all with a NULL-able column: in the order they
		// were declared), then plain ones.
		"shapes": {"u_nullable", "u_ab", "odd`name", "plain_b", "multi", "hidden", "bt"},
		"nopk":   {"byc", "byac"},
		"parent": {"code", "later"},
		"child":  {"c_y"},
		"ai":     {"v"},
		"longu":  {"v"},
	}
	if !reflect.DeepEqual(got, wantDeferred) {
		t.Errorf("deferred:\n got %v\nwant %v", got, wantDeferred)
	}
	// A run stopped before it recorded the copy leaves the tables created
	// and empty: the next one finds them so, and must defer what they lack.
	again, nonEmpty, err := CreateTables(ctx, db, sources, true, nil)
	if err != nil || len(nonEmpty) != 0 {
		t.Fatal(nonEmpty, err)
	}
	if !reflect.DeepEqual(again, deferred) {
		t.Errorf("deferred, the tables found empty:\n got %v\nwant %v", again, deferred)
	}
	for _, src := range sources {
		srv.ExecT(t, "SET SESSION foreign_key_checks = 0",
			"INSERT INTO dst."+sqlquote.Name(src.Def.Name)+" SELECT * FROM src."+sqlquote.Name(src.Def.Name))
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	log := slog.New(slog.DiscardHandler)
	for i, src := range sources {
		b := NewBuild("dst", src.Def.Name, deferred[i], nil)
		if b == nil {
			continue
		}
		if err := Build(ctx, conn, b, log); err != nil {
			t.Fatal(err)
		}
		if err := Build(ctx, conn, b, log); err != nil { // again: a no-op
			t.Fatalf("a second build: %v", err)
		}
	}
	for _, src := range sources {
		create, err := schema.ShowCreateTable(ctx, db, "dst", src.Def.Name)
		if err != nil {
			t.Fatal(err)
		}
		if create != want[src.Def.Name] {
			t.Errorf("%s after the build:\n%s\nwant\n%s", src.Def.Name, create, want[src.Def.Name])
		}
	}
}

// TestBuildNamesTheDuplicate: a value twice under a deferred unique key
// fails the build with the key and the value named, and leaves the index
// out.
func TestBuildNamesTheDuplicate(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	srv.ExecT(t, "CREATE DATABASE s",
		"CREATE TABLE s.t (id INT PRIMARY KEY, email VARCHAR(20) NOT NULL)",
		"INSERT INTO s.t VALUES (1, 'a@x'), (2, 'b@x'), (3, 'a@x')")
	ctx := context.Background()
	db := srv.OpenBinlaneT(t, "s")
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b := NewBuild("s", "t", []Index{{Name: "email", Unique: true, Columns: []string{"email"}, Prefix: []int{0},
		Definition: "UNIQUE KEY `email` (`email`)"}}, nil)
	err = Build(ctx, conn, b, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "'a@x'") || !strings.Contains(err.Error(), "email") ||
		!strings.Contains(err.Error(), "`s`.`t`") {
		t.Fatalf("want an error naming the table, key and value: %v", err)
	}
	tb, err := schema.ReadTable(ctx, db, "s", "t")
	if err != nil || tb.IndexByName("email") != nil {
		t.Fatalf("the index exists after a failed build: %v", err)
	}
}
