package verify

import (
	"context"
	"database/sql"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sqlquote"
)

// testKeyTypes chunks tables along keys of every keyable type with tiny
// chunks, so bounds fall on awkward values (bytes that are not UTF-8,
// latin1 and utf8mb3 text, unsigned values past 2^63, microseconds). A
// bound that did not round-trip would lose or double rows: the counts
// would not match the table's.
func testKeyTypes(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE keyt",
		"CREATE TABLE keyt.bin (k VARBINARY(8) PRIMARY KEY, v INT)",
		"INSERT INTO keyt.bin SELECT CONCAT(CHAR(seq % 256), CHAR(255 - seq % 256), CHAR(seq DIV 256)), seq FROM keyt.seq_0_to_599",
		"CREATE TABLE keyt.lat (k VARCHAR(10) CHARACTER SET latin1 COLLATE latin1_german1_ci PRIMARY KEY, v INT)",
		"INSERT INTO keyt.lat SELECT CONCAT(ELT(seq % 6 + 1, 'ä', 'Ö', 'ü', 'ß', 'a', 'Z'), seq), seq FROM keyt.seq_1_to_300",
		"CREATE TABLE keyt.mb3 (k VARCHAR(10) CHARACTER SET utf8mb3 COLLATE utf8mb3_unicode_ci, n INT, PRIMARY KEY (k, n))",
		"INSERT INTO keyt.mb3 SELECT ELT(seq % 5 + 1, 'é', 'È', 'ñ', 'e', 'E '), seq FROM keyt.seq_1_to_300",
		"CREATE TABLE keyt.dec (k DECIMAL(25,5) PRIMARY KEY)",
		"INSERT INTO keyt.dec SELECT seq * 1.00001 - 150 FROM keyt.seq_1_to_300",
		"CREATE TABLE keyt.ubig (k BIGINT UNSIGNED PRIMARY KEY)",
		"INSERT INTO keyt.ubig SELECT 18446744073709551615 - seq * 1000000000000000 FROM keyt.seq_0_to_299",
		"CREATE TABLE keyt.ts (k TIMESTAMP(6) NOT NULL PRIMARY KEY)",
		"INSERT INTO keyt.ts SELECT TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq * 1000001 MICROSECOND FROM keyt.seq_1_to_300",
		"CREATE TABLE keyt.dt (d DATE, t TIME(3), y YEAR, PRIMARY KEY (d, t, y))",
		"INSERT INTO keyt.dt SELECT DATE'2024-01-01' + INTERVAL seq % 3 DAY, SEC_TO_TIME(seq / 1000 - 0.15), 2000 + seq % 2 FROM keyt.seq_1_to_300",
	)
	rep := p.run(t, Config{ChunkRows: 7, Parallel: 2}, "keyt")
	mustEqual(t, rep)
	for _, tr := range rep.Tables {
		var n int64
		if err := p.srcDB.QueryRow("SELECT COUNT(*) FROM " + sqlquote.Name(tr.Schema) + "." + sqlquote.Name(tr.Table)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if tr.SourceRows != n || tr.TargetRows != n || tr.Chunks != int(n/7+1) || tr.Key != "PRIMARY" {
			t.Errorf("%s: %d rows in %d chunks, table has %d: %+v", tr.Name(), tr.SourceRows, tr.Chunks, n, tr)
		}
	}

	p.tgt.ExecT(t, "UPDATE keyt.bin SET v = -1 WHERE k = CONCAT(CHAR(255), CHAR(0), CHAR(0))",
		"UPDATE keyt.lat SET v = -1 WHERE k = 'ß3'")
	rep = p.run(t, Config{ChunkRows: 7}, "keyt")
	bin, lat := rep.Table("keyt", "bin"), rep.Table("keyt", "lat")
	if len(bin.Diffs) != 1 || !reflect.DeepEqual(bin.Diffs[0].Key, []string{"0xFF0000"}) {
		t.Errorf("bin: %+v", bin)
	}
	if len(lat.Diffs) != 1 || !reflect.DeepEqual(lat.Diffs[0].Key, []string{"'ß3'"}) {
		t.Errorf("lat: %+v", lat)
	}
	if len(rep.Differing()) != 2 {
		t.Errorf("want 2 differing tables:\n%s", rep)
	}

	// Keys equal in a ci collation but not in bytes: the source's row is
	// missing and the target's is extra.
	p.both(t, "CREATE DATABASE kcase", "CREATE TABLE kcase.t (k VARCHAR(10) PRIMARY KEY, v INT)",
		"INSERT INTO kcase.t VALUES ('abc', 1), ('b', 2)")
	p.tgt.ExecT(t, "UPDATE kcase.t SET k = 'ABC' WHERE k = 'abc'")
	tr := onlyTable(t, p.run(t, Config{ChunkRows: 1}, "kcase"))
	got := map[string]DiffKind{}
	for _, d := range tr.Diffs {
		got[d.Key[0]] = d.Kind
	}
	if want := map[string]DiffKind{"'abc'": DiffMissing, "'ABC'": DiffExtra}; !reflect.DeepEqual(got, want) {
		t.Errorf("key case: %v", got)
	}
}

func testNoPrimaryKey(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE nopk",
		"CREATE TABLE nopk.dup (a INT, b VARCHAR(5))",
		"CREATE TABLE nopk.dupcount (a INT)",
		"CREATE TABLE nopk.pairs (a INT)",
		"CREATE TABLE nopk.eqdup (a INT, b TEXT)",
		"INSERT INTO nopk.eqdup VALUES (1, 'x'), (1, 'x'), (NULL, ''), (NULL, NULL), (NULL, NULL)",
		"CREATE TABLE nopk.uk (a INT NOT NULL, b INT NULL, c INT, UNIQUE KEY ub (b), UNIQUE KEY ua (a))",
		"INSERT INTO nopk.uk SELECT seq, seq, seq FROM nopk.seq_1_to_100",
		"CREATE TABLE nopk.nuk (a INT NULL, UNIQUE KEY (a))",
		"INSERT INTO nopk.nuk VALUES (1), (NULL), (NULL)")
	p.src.ExecT(t, "INSERT INTO nopk.dup VALUES (1, 'a'), (1, 'a'), (2, 'b')", "INSERT INTO nopk.dupcount VALUES (1), (1)",
		"INSERT INTO nopk.pairs VALUES (1), (1), (2), (2)")
	p.tgt.ExecT(t, "INSERT INTO nopk.dup VALUES (1, 'a'), (2, 'b'), (2, 'b')", "INSERT INTO nopk.dupcount VALUES (1)",
		"INSERT INTO nopk.pairs VALUES (3), (3), (4), (4)")
	rep := p.run(t, Config{ChunkRows: 10}, "nopk")

	dup := rep.Table("nopk", "dup")
	if dup.Status != StatusDifferent || dup.Key != "" || dup.Chunks != 1 || dup.SourceRows != 3 || dup.TargetRows != 3 ||
		!reflect.DeepEqual(dup.KeyColumns, []string{"a", "b"}) {
		t.Errorf("dup: %+v", dup)
	}
	kinds := map[DiffKind][]string{}
	for _, d := range dup.Diffs {
		kinds[d.Kind] = append(kinds[d.Kind], strings.Join(d.Key, ","))
	}
	if want := map[DiffKind][]string{DiffMissing: {"1,'a'"}, DiffExtra: {"2,'b'"}}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("dup diffs: %v", kinds)
	}
	if dc := rep.Table("nopk", "dupcount"); len(dc.Diffs) != 1 || dc.Diffs[0].Kind != DiffMissing || dc.Diffs[0].Key[0] != "1" {
		t.Errorf("dupcount: %+v", dc)
	}
	// Same count, and an XOR of row hashes would be 0 on both sides.
	if pr := rep.Table("nopk", "pairs"); pr.Status != StatusDifferent || len(pr.Diffs) != 8 {
		t.Errorf("pairs: %+v", pr)
	}
	if eq := rep.Table("nopk", "eqdup"); !eq.Equal() || eq.SourceRows != 5 {
		t.Errorf("eqdup: %+v", eq)
	}
	if uk := rep.Table("nopk", "uk"); !uk.Equal() || uk.Key != "ua" || uk.Chunks != 11 {
		t.Errorf("uk: %+v", uk)
	}
	if nuk := rep.Table("nopk", "nuk"); !nuk.Equal() || nuk.Key != "" {
		t.Errorf("nuk: %+v", nuk)
	}

	p.tgt.ExecT(t, "UPDATE nopk.uk SET c = 0 WHERE a = 42", "DELETE FROM nopk.nuk WHERE a IS NULL LIMIT 1")
	rep = p.run(t, Config{Rules: filter.Rules{Tables: []string{"nopk.uk", "nopk.nuk"}}, ChunkRows: 10})
	if uk := rep.Table("nopk", "uk"); len(uk.Diffs) != 1 || uk.Diffs[0].Key[0] != "42" || uk.Diffs[0].Columns[0].Column != "c" {
		t.Errorf("uk: %+v", uk)
	}
	if nuk := rep.Table("nopk", "nuk"); len(nuk.Diffs) != 1 || nuk.Diffs[0].Key[0] != "NULL" || nuk.Diffs[0].Kind != DiffMissing {
		t.Errorf("nuk: %+v", nuk)
	}
}

func testSchemas(t *testing.T, p *pair) {
	p.src.ExecT(t, "CREATE DATABASE sch",
		"CREATE TABLE sch.missing (id INT PRIMARY KEY)", "INSERT INTO sch.missing VALUES (1), (2), (3)",
		"CREATE TABLE sch.typ (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE sch.ord (id INT PRIMARY KEY, a INT, b INT)",
		"CREATE TABLE sch.coll (id INT PRIMARY KEY, v VARCHAR(5) COLLATE utf8mb4_general_ci)",
		"CREATE TABLE sch.noidx (id INT PRIMARY KEY, v INT)")
	p.tgt.ExecT(t, "CREATE DATABASE sch",
		"CREATE TABLE sch.extra (id INT PRIMARY KEY)", "INSERT INTO sch.extra VALUES (1), (2)",
		"CREATE TABLE sch.typ (id INT PRIMARY KEY, v BIGINT)",
		"CREATE TABLE sch.ord (id INT PRIMARY KEY, b INT, a INT)",
		"CREATE TABLE sch.coll (id INT PRIMARY KEY, v VARCHAR(5) COLLATE utf8mb4_bin)",
		"CREATE TABLE sch.noidx (id INT NOT NULL, v INT)",
		"CREATE DATABASE onlytgt", "CREATE TABLE onlytgt.t (id INT)")
	p.both(t, "INSERT INTO sch.noidx SELECT seq, seq FROM sch.seq_1_to_50")

	rep := p.run(t, Config{ChunkRows: 10}, "sch", "onlytgt")
	status := map[string]Status{}
	for _, tr := range rep.Tables {
		status[tr.Name()] = tr.Status
	}
	want := map[string]Status{
		"sch.missing": StatusMissing, "sch.extra": StatusOnlyOnTarget, "onlytgt.t": StatusOnlyOnTarget,
		"sch.typ": StatusSchemaDiffers, "sch.ord": StatusSchemaDiffers, "sch.coll": StatusSchemaDiffers,
		"sch.noidx": StatusEqual,
	}
	if !reflect.DeepEqual(status, want) {
		t.Errorf("statuses:\n%s", rep)
	}
	if m := rep.Table("sch", "missing"); m.SourceRows != 3 {
		t.Errorf("missing: %+v", m)
	}
	if e := rep.Table("sch", "extra"); e.TargetRows != 2 {
		t.Errorf("extra: %+v", e)
	}
	if typ := rep.Table("sch", "typ"); !reflect.DeepEqual(typ.SchemaDiffs, []string{"column 2: source `v` int(11), target `v` bigint(20)"}) {
		t.Errorf("typ: %q", typ.SchemaDiffs)
	}
	if ord := rep.Table("sch", "ord"); len(ord.SchemaDiffs) != 2 {
		t.Errorf("ord: %q", ord.SchemaDiffs)
	}

	// A target without the source's key is still compared, by ranges.
	p.tgt.ExecT(t, "UPDATE sch.noidx SET v = 0 WHERE id = 33")
	rep = p.run(t, Config{ChunkRows: 10, Rules: filter.Rules{Tables: []string{"sch.*"}, Exclude: []string{"sch.extra", "sch.missing"}}})
	if len(rep.Tables) != 4 {
		t.Errorf("rules: %d tables:\n%s", len(rep.Tables), rep)
	}
	if n := rep.Table("sch", "noidx"); n == nil || len(n.Diffs) != 1 || n.Diffs[0].Key[0] != "33" {
		t.Errorf("noidx: %+v", n)
	}
}

// testRangeUsesIndex checks with EXPLAIN that the queries on chunks read
// one range of the chunking index over all its columns, even with a
// utf8mb3 key column compared with utf8mb4 parameters.
func testRangeUsesIndex(t *testing.T, p *pair) {
	p.src.ExecT(t, "CREATE DATABASE expl",
		`CREATE TABLE expl.t (a INT, b VARCHAR(20) CHARACTER SET utf8mb3 COLLATE utf8mb3_unicode_ci,
			c DATETIME(6), v VARCHAR(100), PRIMARY KEY (a, b, c))`,
		"INSERT INTO expl.t SELECT seq % 100, CONCAT('k', seq DIV 100 % 50), '2024-01-01' + INTERVAL seq SECOND, seq FROM expl.seq_1_to_20000",
		"ANALYZE TABLE expl.t")
	ctx := context.Background()
	conn, err := p.srcDB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cat, err := readCatalog(ctx, conn, filter.Rules{Databases: []string{"expl"}})
	if err != nil {
		t.Fatal(err)
	}
	// The catalog reads only the selected schemas: information_schema
	// scanned whole creates dozens of temporary tables, some on disk (Aria),
	// on every call.
	diskTables := func() int {
		var name string
		var n int
		if err := conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Created_tmp_disk_tables'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := diskTables()
	if _, err := readCatalog(ctx, conn, filter.Rules{}); err != nil {
		t.Fatal(err)
	}
	if after := diskTables(); after-before > 1 {
		t.Errorf("reading the catalog created %d on-disk temporary tables", after-before)
	}
	def := cat[tableID{"expl", "t"}]
	pl := newPlan(def, def)
	lower := keyBound{int64(5), "k3", "2024-01-01 00:10:00.000000"}
	upper := keyBound{int64(7), "k9", "2024-01-01 01:00:00.000000"}
	fullLen := explain(t, conn, "SELECT a FROM expl.t FORCE INDEX (PRIMARY)")["key_len"]
	queries := map[string]func() (string, []any){
		"checksum": func() (string, []any) { return pl.checksumQuery(onSource, lower, upper) },
		"rows":     func() (string, []any) { return pl.rowsQuery(onSource, lower, upper) },
		"boundary": func() (string, []any) { return pl.boundaryQuery(lower, 1000) },
	}
	for name, build := range queries {
		q, args := build()
		plan := explain(t, conn, q, args...)
		if plan["type"] != "range" || plan["key"] != "PRIMARY" || plan["key_len"] != fullLen {
			t.Errorf("%s: plan %v (full key_len %s)\n%s", name, plan, fullLen, q)
		}
	}
}

// explain returns the first row of EXPLAIN q by column name.
func explain(t *testing.T, conn *sql.Conn, q string, args ...any) map[string]string {
	t.Helper()
	rows, err := conn.QueryContext(context.Background(), "EXPLAIN "+q, args...)
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", q, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if !rows.Next() {
		t.Fatalf("EXPLAIN %s: no rows", q)
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i, c := range cols {
		out[c] = vals[i].String
	}
	return out
}

// testSessions checks that TIMESTAMPs compare in UTC whatever the callers'
// pools use, that the callers' pools keep their own settings, and that a
// run writes nothing: neither server's binlog moves.
func testSessions(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE sess", "CREATE TABLE sess.t (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL)",
		"INSERT INTO sess.t VALUES (1, '2024-03-31 01:30:00.5'), (2, '2024-10-27 02:30:00'), (3, NULL)")
	cfg, err := mysql.ParseDSN(p.src.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+05:00'"
	srcDB, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()
	srcDB.SetMaxOpenConns(2) // the smallest pool that works; Parallel shrinks to 1
	gtids := func() []string {
		var a, b string
		if err := p.srcDB.QueryRow("SELECT @@gtid_binlog_pos").Scan(&a); err != nil {
			t.Fatal(err)
		}
		if err := p.tgtDB.QueryRow("SELECT @@gtid_binlog_pos").Scan(&b); err != nil {
			t.Fatal(err)
		}
		return []string{a, b}
	}
	before := gtids()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, Config{Source: srcDB, Target: p.tgtDB, Rules: filter.Rules{Databases: []string{"sess"}}})
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, rep)
	if after := gtids(); !reflect.DeepEqual(before, after) {
		t.Errorf("binlog moved during verify: %v -> %v", before, after)
	}
	var tz string
	var ro int
	if err := srcDB.QueryRow("SELECT @@time_zone, @@tx_read_only").Scan(&tz, &ro); err != nil || tz != "+05:00" || ro != 0 {
		t.Errorf("caller's pool changed: time_zone=%s read_only=%d err=%v", tz, ro, err)
	}

	one, err := sql.Open("mysql", p.src.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	one.SetMaxOpenConns(1)
	if _, err := Run(ctx, Config{Source: one, Target: p.tgtDB}); err == nil || !strings.Contains(err.Error(), "at least 2") {
		t.Errorf("pool of one connection: %v", err)
	}
}
