package txn

import (
	"fmt"
	"strings"
	"testing"
)

func TestDMLRefs(t *testing.T) {
	cases := []struct {
		q             string
		writes, reads string
		unknown       bool
	}{
		{q: "INSERT INTO t VALUES (1)", writes: "d.t"},
		{q: "INSERT t (a, b) VALUES (1, 2)", writes: "d.t"},
		{q: "INSERT IGNORE INTO o.t SET a = 1", writes: "o.t"},
		{q: "REPLACE INTO t SELECT * FROM u WHERE a IN (SELECT a FROM o.v)", writes: "d.t", reads: "d.u,o.v"},
		{q: "INSERT INTO t (a) SELECT a FROM u JOIN v ON u.a = v.a ON DUPLICATE KEY UPDATE a = VALUES(a)", writes: "d.t", reads: "d.u,d.v"},
		{q: "UPDATE t SET a = a + 1 WHERE b = 2 ORDER BY a LIMIT 3", writes: "d.t"},
		{q: "UPDATE LOW_PRIORITY t AS x JOIN o.u y ON x.a = y.a SET x.b = y.b", writes: "d.t,o.u"},
		{q: "UPDATE t, u SET t.a = u.a WHERE t.b = (SELECT MAX(b) FROM v)", writes: "d.t,d.u", reads: "d.v"},
		{q: "DELETE FROM t WHERE a < 3 LIMIT 1", writes: "d.t"},
		{q: "DELETE a, b FROM t AS a JOIN u b ON a.x = b.x", writes: "d.t,d.u", reads: "d.t,d.u"},
		{q: "DELETE t.* FROM t, u WHERE t.x = u.x", writes: "d.t", reads: "d.t,d.u"},
		{q: "DELETE FROM t USING t JOIN u ON t.x = u.x", writes: "d.t", reads: "d.t,d.u"},
		{q: "DELETE FROM t WHERE EXTRACT(DAY FROM d) = 1 AND TRIM(LEADING 'x' FROM s) = ''", writes: "d.t"},
		{q: "INSERT INTO t SELECT * FROM (SELECT a FROM u) AS x, v", writes: "d.t", reads: "d.u,d.v"},
		{q: "INSERT INTO t SELECT * FROM (u JOIN v ON u.a = v.a) LEFT JOIN w USING (a)", writes: "d.t", reads: "d.u,d.v,d.w"},
		{q: "INSERT INTO t WITH c AS (SELECT a FROM u), c2 AS (SELECT a FROM v) SELECT * FROM c JOIN c2", writes: "d.t", reads: "d.u,d.v"},
		{q: "INSERT INTO t SELECT * FROM DUAL", writes: "d.t"},
		{q: "INSERT INTO t TABLE o.u", writes: "d.t", reads: "o.u"},
		{q: "INSERT INTO t SELECT (SELECT MAX(x) FROM b) FROM a LEFT JOIN (c, e) ON a.x = c.x WHERE EXISTS (SELECT 1 FROM f)",
			writes: "d.t", reads: "d.b,d.a,d.c,d.e,d.f"},
		{q: "INSERT INTO t SELECT * FROM ((SELECT x FROM b) UNION (SELECT x FROM c)) AS u, e", writes: "d.t", reads: "d.b,d.c,d.e"},
		{q: "INSERT INTO t VALUES ((SELECT x FROM b LIMIT 1), 'FROM z')", writes: "d.t", reads: "d.b"},
		{q: "INSERT INTO t SELECT a FROM b PARTITION (p1) USE INDEX (i) NATURAL JOIN c FOR UPDATE", writes: "d.t", reads: "d.b,d.c"},
		{q: "LOAD DATA INFILE '/tmp/x' REPLACE INTO TABLE `o`.`t` FIELDS TERMINATED BY ',' (a, b)", writes: "o.t"},
		{q: "SET STATEMENT max_statement_time=10 FOR UPDATE t SET a = 1", writes: "d.t"},
		{q: "INSERT INTO t SELECT * FROM JSON_TABLE('[]', '$[*]' COLUMNS (a INT PATH '$')) AS j", unknown: true},
		{q: "CALL p()", unknown: true},
		{q: "SELECT f()", unknown: true},
		{q: "DO f()", unknown: true},
		{q: "INSERT INTO \"t\" VALUES (1)", unknown: true},
		{q: "DELETE x FROM (SELECT 1) AS x", unknown: true},
	}
	for _, c := range cases {
		r := dmlRefs(c.q, 0, "d", nil)
		got := fmt.Sprintf("%s | %s | %v", names(r.writes), names(r.reads), r.unknown)
		want := fmt.Sprintf("%s | %s | %v", c.writes, c.reads, c.unknown)
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", c.q, got, want)
		}
	}
}

func TestDMLRefsCalls(t *testing.T) {
	r := dmlRefs("INSERT INTO t VALUES (o.f(1), g(2), NOW())", 0, "d", nil)
	if got := names(r.calls); !strings.Contains(got, "o.f") || !strings.Contains(got, "d.g") {
		t.Fatalf("calls %s", got)
	}
}

func names(ns []TableName) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Schema+"."+n.Table)
	}
	return strings.Join(out, ",")
}

// The forms pt-table-checksum and simple sessions write: the target table
// first among the writes.
func TestDMLRefsWrites(t *testing.T) {
	cases := []struct{ q, writes string }{
		{"REPLACE INTO `percona`.`checksums` (db, tbl, chunk) SELECT 'shop', 't', 1 FROM `shop`.`t`", "percona.checksums"},
		{"insert low_priority t (a) values (1)", "db.t"},
		{"UPDATE `percona`.`checksums` SET master_crc = 'x' WHERE db = 'shop'", "percona.checksums"},
		{"DELETE FROM s.t WHERE id = 1", "s.t"},
		{"LOAD DATA INFILE '/tmp/x' INTO TABLE s.t", "s.t"},
	}
	for _, c := range cases {
		if got := names(dmlRefs(c.q, 0, "db", nil).writes); got != c.writes {
			t.Errorf("%s: writes %s, want %s", c.q, got, c.writes)
		}
	}
}

// FuzzDMLRefs: any text is read without a panic, and a statement whose
// tables are known names at least one it writes.
func FuzzDMLRefs(f *testing.F) {
	for _, q := range []string{"INSERT INTO t SELECT * FROM (a JOIN b", "DELETE a.", "UPDATE ) SET", "INSERT INTO t WITH",
		"DELETE t.* FROM", "LOAD DATA INFILE 'x' INTO TABLE", "INSERT INTO t TABLE", "UPDATE t, (SELECT 1) x SET",
		"REPLACE t PARTITION (p", "DELETE FROM t USING t JOIN (u, v) ON"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		r := dmlRefs(q, 0, "d", nil)
		if !r.unknown && len(r.writes) == 0 && len(r.reads) > 0 {
			t.Errorf("%q: reads %v but writes nothing", q, r.reads)
		}
	})
}
