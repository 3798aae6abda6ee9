package verify

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sandbox"
)

// pair is a source-role and a target-role sandbox server shared by the
// subtests of one test; each subtest works in its own databases.
type pair struct {
	src, tgt     *sandbox.Server
	srcDB, tgtDB *sql.DB
}

func startPair(t *testing.T) *pair {
	t.Helper()
	p := &pair{
		src: sandbox.StartT(t, sandbox.Options{Role: sandbox.Source}),
		tgt: sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}),
	}
	// verify runs as an account that may only read (SELECT is all it
	// needs; its sessions are read-only besides); the test sets up data as
	// root through both().
	p.srcDB, p.tgtDB = readerPool(t, p.src), readerPool(t, p.tgt)
	return p
}

func readerPool(t *testing.T, s *sandbox.Server) *sql.DB {
	t.Helper()
	s.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE USER verifier@'%' IDENTIFIED BY 'v3rifier'", "GRANT SELECT ON *.* TO verifier@'%'")
	db, err := sql.Open("mysql", "verifier:v3rifier@tcp("+s.Addr()+")/?charset=utf8mb4")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// both runs the same statements on both servers.
func (p *pair) both(t *testing.T, stmts ...string) {
	t.Helper()
	p.src.ExecT(t, stmts...)
	p.tgt.ExecT(t, stmts...)
}

// run verifies the given databases and fails the test on an error.
func (p *pair) run(t *testing.T, cfg Config, dbs ...string) *Report {
	t.Helper()
	cfg.Source, cfg.Target = p.srcDB, p.tgtDB
	if cfg.Rules.Databases == nil && cfg.Rules.Tables == nil {
		cfg.Rules = filter.Rules{Databases: dbs}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func mustEqual(t *testing.T, rep *Report) {
	t.Helper()
	if !rep.Equal() {
		t.Fatalf("expected equal:\n%s", rep)
	}
}

// onlyTable returns the report's single table.
func onlyTable(t *testing.T, rep *Report) TableReport {
	t.Helper()
	if len(rep.Tables) != 1 {
		t.Fatalf("want 1 table:\n%s", rep)
	}
	return rep.Tables[0]
}

func TestVerify(t *testing.T) {
	p := startPair(t)
	t.Run("EqualTypes", func(t *testing.T) { testEqualTypes(t, p) })
	t.Run("BigTable", func(t *testing.T) { testBigTable(t, p) })
	t.Run("SingleDifferences", func(t *testing.T) { testSingleDifferences(t, p) })
	t.Run("KeyTypes", func(t *testing.T) { testKeyTypes(t, p) })
	t.Run("NoPrimaryKey", func(t *testing.T) { testNoPrimaryKey(t, p) })
	t.Run("Schemas", func(t *testing.T) { testSchemas(t, p) })
	t.Run("RangeUsesIndex", func(t *testing.T) { testRangeUsesIndex(t, p) })
	t.Run("Interrupted", func(t *testing.T) { testInterrupted(t, p) })
	t.Run("SessionsAreIsolatedAndReadOnly", func(t *testing.T) { testSessions(t, p) })
}

// typesDDL has a column of every type family, NULL-able so a row of NULLs
// fits.
const typesDDL = `CREATE TABLE eq.types (
	id INT PRIMARY KEY,
	ti TINYINT, si SMALLINT UNSIGNED, mi MEDIUMINT, bi BIGINT UNSIGNED,
	de DECIMAL(30,10), fl FLOAT, db DOUBLE, dd DOUBLE(10,2),
	bt BIT(12), en ENUM('', 'a', 'b'), st SET('x', 'y', 'z'),
	ch CHAR(5), vc VARCHAR(20), l1 VARCHAR(20) CHARACTER SET latin1, vb VARBINARY(20), bn BINARY(4),
	tx TEXT, bl BLOB, js JSON,
	da DATE, tm TIME(6), dt DATETIME(6), ts TIMESTAMP(6) NULL, yr YEAR,
	pt POINT, ge GEOMETRY, i6 INET6, uu UUID)`

func testEqualTypes(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE eq", typesDDL,
		`INSERT INTO eq.types VALUES
		(1, -128, 65535, -8388608, 18446744073709551615, -12345678901234567890.0123456789, 1.0000001, 1.0000000000000002, 2.67,
		 b'101010101010', '', 'x,z', 'ab', 'Grüße', 'façade', 0xFF0001, 0x00, REPEAT('t', 300), 0xDEADBEEF, '{"a": [1, 2.5, null]}',
		 '2024-02-29', '-838:59:58.999999', '2024-01-01 23:59:59.999999', '2030-06-01 12:00:00.499999', 2155,
		 POINT(1.5, -2), ST_GeomFromText('LINESTRING(0 0, 1 1)', 4326), '::ffff:1.2.3.4', '123e4567-e89b-12d3-a456-426655440000'),
		(2`+strings.Repeat(", NULL", 28)+`),
		(3, 0, 0, 0, 0, 0, 5e-45, 5e-324, 0, 0, 'b', '', '', '', '', '', '', '', '', '[]',
		 '0000-00-00', '00:00:00', '0000-00-00 00:00:00', '2001-01-01 00:00:00', 0000,
		 POINT(0, 0), POINT(0, 0), '::', '00000000-0000-0000-0000-000000000000')`,
		`CREATE TABLE eq.composite (a INT, b VARCHAR(10), c DATETIME(6), v VARCHAR(10), PRIMARY KEY (a, b, c))`,
		`INSERT INTO eq.composite SELECT seq % 7, CONCAT('k', seq % 13), '2024-01-01' + INTERVAL seq MICROSECOND, seq FROM eq.seq_1_to_500`,
		`CREATE TABLE eq.empty (id INT PRIMARY KEY)`,
	)
	rep := p.run(t, Config{ChunkRows: 37}, "eq")
	mustEqual(t, rep)
	if tr := rep.Table("eq", "types"); tr.SourceRows != 3 || tr.TargetRows != 3 || tr.Key != "PRIMARY" {
		t.Errorf("types: %+v", tr)
	}
	if tr := rep.Table("eq", "composite"); tr.SourceRows != 500 || tr.Chunks != 14 ||
		!reflect.DeepEqual(tr.KeyColumns, []string{"a", "b", "c"}) {
		t.Errorf("composite: %+v", tr)
	}
	if tr := rep.Table("eq", "empty"); tr.Chunks != 1 || tr.SourceRows != 0 {
		t.Errorf("empty: %+v", tr)
	}

	// The same values written differently on the target: every column of
	// row 1 changed in its last bit, byte, microsecond or element.
	p.tgt.ExecT(t, `UPDATE eq.types SET ti = -127, si = 65534, mi = -8388607, bi = 18446744073709551614,
		de = -12345678901234567890.0123456788, fl = 1.0000002, db = 1, dd = 2.68, bt = b'101010101011', en = 'a',
		st = 'x,y,z', ch = 'aB', vc = 'Grüsse', l1 = 'facade', vb = 0xFF0002, bn = 0x01, tx = REPEAT('t', 301),
		bl = 0xDEADBEEE, js = '{"a":[1,2.5,null]}', da = '2024-02-28', tm = '-838:59:58.999998', dt = '2024-01-01 23:59:59.999998',
		ts = '2030-06-01 12:00:00.499998', yr = 2154, pt = POINT(1.5, -2.0000000000000004),
		ge = ST_GeomFromText('LINESTRING(0 0, 1 1)', 0), i6 = '::ffff:1.2.3.5', uu = '123e4567-e89b-12d3-a456-426655440001'
		WHERE id = 1`)
	rep = p.run(t, Config{}, "eq")
	tr := rep.Table("eq", "types")
	if tr.Status != StatusDifferent || len(tr.Diffs) != 1 || tr.Diffs[0].Kind != DiffValues {
		t.Fatalf("types after update:\n%s", rep)
	}
	var changed []string
	for _, c := range tr.Diffs[0].Columns {
		changed = append(changed, c.Column)
	}
	want := []string{"ti", "si", "mi", "bi", "de", "fl", "db", "dd", "bt", "en", "st", "ch", "vc", "l1", "vb", "bn",
		"tx", "bl", "js", "da", "tm", "dt", "ts", "yr", "pt", "ge", "i6", "uu"}
	if !reflect.DeepEqual(changed, want) {
		t.Errorf("differing columns\n got %v\nwant %v", changed, want)
	}
}

func testBigTable(t *testing.T, p *pair) {
	p.both(t, "CREATE DATABASE big",
		"CREATE TABLE big.t (id INT PRIMARY KEY, v VARCHAR(40), n DOUBLE)",
		"INSERT INTO big.t SELECT seq, MD5(seq), seq / 7 FROM big.seq_1_to_50000")
	rep := p.run(t, Config{ChunkRows: 1000}, "big")
	mustEqual(t, rep)
	tr := onlyTable(t, rep)
	if tr.SourceRows != 50000 || tr.TargetRows != 50000 || tr.Chunks != 51 {
		t.Fatalf("rows or chunks: %+v", tr)
	}

	p.tgt.ExecT(t, "UPDATE big.t SET n = n + 1e-9 WHERE id = 31337")
	tr = onlyTable(t, p.run(t, Config{ChunkRows: 1000}, "big"))
	if tr.ChunksDiffering != 1 || len(tr.Diffs) != 1 || tr.MoreDiffs ||
		!reflect.DeepEqual(tr.Diffs[0].Key, []string{"31337"}) || tr.Diffs[0].Columns[0].Column != "n" {
		t.Fatalf("one changed row: %+v", tr)
	}

	// Many differences across chunks (and row 31337 still changed): the
	// first MaxDiffs in key order are listed, whatever order the parallel
	// chunks finish in.
	p.tgt.ExecT(t, "DELETE FROM big.t WHERE id BETWEEN 2990 AND 3010 OR id > 49990")
	tr = onlyTable(t, p.run(t, Config{ChunkRows: 1000, MaxDiffs: 5, Parallel: 3}, "big"))
	var keys []string
	for _, d := range tr.Diffs {
		if d.Kind != DiffMissing {
			t.Errorf("kind %s", d.Kind)
		}
		keys = append(keys, d.Key[0])
	}
	if !reflect.DeepEqual(keys, []string{"2990", "2991", "2992", "2993", "2994"}) || !tr.MoreDiffs || tr.ChunksDiffering != 4 {
		t.Fatalf("first diffs: %v more=%v chunks=%d", keys, tr.MoreDiffs, tr.ChunksDiffering)
	}
	if tr.SourceRows-tr.TargetRows != 31 {
		t.Errorf("row counts %d %d", tr.SourceRows, tr.TargetRows)
	}
}

type diffCase struct {
	name    string
	ddl     string   // column definitions of t, on both sides
	rows    string   // INSERT values, on both sides
	change  string   // statement on the target
	kind    DiffKind // the one expected difference
	key     []string
	columns []string
}

func testSingleDifferences(t *testing.T, p *pair) {
	cases := []diffCase{
		{"changed value", "id INT PRIMARY KEY, v INT", "(1,1),(2,2),(3,3)",
			"UPDATE t SET v = 9 WHERE id = 2", DiffValues, []string{"2"}, []string{"v"}},
		{"missing row", "id INT PRIMARY KEY, v INT", "(1,1),(2,2),(3,3)",
			"DELETE FROM t WHERE id = 2", DiffMissing, []string{"2"}, nil},
		{"extra row after the last", "id INT PRIMARY KEY, v INT", "(1,1),(2,2),(3,3)",
			"INSERT INTO t VALUES (4,4)", DiffExtra, []string{"4"}, nil},
		{"extra row before the first", "id INT PRIMARY KEY, v INT", "(1,1),(2,2),(3,3)",
			"INSERT INTO t VALUES (-4,4)", DiffExtra, []string{"-4"}, nil},
		{"case in a ci collation", "id INT PRIMARY KEY, v VARCHAR(10) COLLATE utf8mb4_general_ci", "(1,'abc'),(2,'x')",
			"UPDATE t SET v = 'ABC' WHERE id = 1", DiffValues, []string{"1"}, []string{"v"}},
		{"NULL versus empty", "id INT PRIMARY KEY, v VARCHAR(10) NULL", "(1,''),(2,'x')",
			"UPDATE t SET v = NULL WHERE id = 1", DiffValues, []string{"1"}, []string{"v"}},
		{"trailing space in PAD SPACE", "id INT PRIMARY KEY, v VARCHAR(10) COLLATE utf8mb4_unicode_ci", "(1,'a'),(2,'x')",
			"UPDATE t SET v = 'a ' WHERE id = 1", DiffValues, []string{"1"}, []string{"v"}},
		{"NULL moves to the next column", "id INT PRIMARY KEY, a VARCHAR(5) NULL, b VARCHAR(5) NULL", "(1,NULL,'x')",
			"UPDATE t SET a = 'x', b = NULL", DiffValues, []string{"1"}, []string{"a", "b"}},
		{"value boundary moves", "id INT PRIMARY KEY, a VARCHAR(5), b VARCHAR(5)", "(1,'a#','b')",
			"UPDATE t SET a = 'a', b = '#b'", DiffValues, []string{"1"}, []string{"a", "b"}},
		{"DOUBLE last bit", "id INT PRIMARY KEY, v DOUBLE", "(1,1.0000000000000002),(2,0.1)",
			"UPDATE t SET v = 1 WHERE id = 1", DiffValues, []string{"1"}, []string{"v"}},
		{"FLOAT last bit", "id INT PRIMARY KEY, v FLOAT", "(1,1.0000001),(2,16777216)",
			"UPDATE t SET v = 16777218 WHERE id = 2", DiffValues, []string{"2"}, []string{"v"}},
		{"DATETIME(6) by 1us", "id INT PRIMARY KEY, v DATETIME(6)", "(1,'2024-01-01 00:00:00.000001')",
			"UPDATE t SET v = '2024-01-01 00:00:00.000002'", DiffValues, []string{"1"}, []string{"v"}},
		{"JSON spacing", "id INT PRIMARY KEY, v JSON", `(1,'{"a": 1}')`,
			`UPDATE t SET v = '{"a":1}'`, DiffValues, []string{"1"}, []string{"v"}},
		{"composite key", "a INT, b VARCHAR(5), c DATETIME(6), v INT, PRIMARY KEY (a, b, c)",
			"(1,'x','2024-01-01 00:00:00',1),(1,'y','2024-01-01 00:00:00',2),(2,'x','2024-01-01 00:00:00.5',3)",
			"UPDATE t SET v = 0 WHERE a = 2", DiffValues, []string{"2", "'x'", "2024-01-01 00:00:00.500000"}, []string{"v"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := fmt.Sprintf("single%d", i)
			p.both(t, "CREATE DATABASE "+db, fmt.Sprintf("CREATE TABLE %s.t (%s)", db, c.ddl),
				fmt.Sprintf("INSERT INTO %s.t VALUES %s", db, c.rows))
			mustEqual(t, p.run(t, Config{ChunkRows: 1}, db))
			p.tgt.ExecT(t, "USE "+db+"; "+c.change)
			tr := onlyTable(t, p.run(t, Config{ChunkRows: 1}, db))
			if tr.Status != StatusDifferent || len(tr.Diffs) == 0 {
				t.Fatalf("not detected: %+v", tr)
			}
			d := tr.Diffs[0]
			var cols []string
			for _, cd := range d.Columns {
				cols = append(cols, cd.Column)
			}
			if d.Kind != c.kind || !reflect.DeepEqual(d.Key, c.key) || !reflect.DeepEqual(cols, c.columns) {
				t.Fatalf("got %s %v %v, want %s %v %v", d.Kind, d.Key, cols, c.kind, c.key, c.columns)
			}
			if len(tr.Diffs) != 1 || tr.ChunksDiffering != 1 {
				t.Errorf("want 1 diff in one chunk: %+v", tr)
			}
		})
	}
}
