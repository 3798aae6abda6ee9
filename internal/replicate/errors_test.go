package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/verify"
)

// TestStopsOnErrors makes a stream meet a transaction it cannot apply, in
// its own database each time: one transaction that applies (T1), the bad
// one (T2), one more (T3). The stream must stop with an error naming T2's
// GTID, the table and the column; its saved position must be right after
// T1 (nothing of T2 or T3 applied); its state row must say "error" with the
// message. Where the target can be fixed, a restart from the saved position
// then applies T2 and T3 and the database must equal the source's row by
// row.
func TestStopsOnErrors(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		name string
		// Schema of table b (table a is the same on both sides); the source's
		// is created without binlogging it, as if it had been copied.
		srcB, dstB string
		bad        []string // T2, on one source session
		want       []string // in the error, besides T2's GTID
		fix        string   // on the target, to resume after ("" when nothing can fix it)
		// noTable: the error quotes the statement instead of naming the
		// database (the source logged the statement text, unqualified).
		noTable bool
	}{
		{name: "table missing on the target",
			srcB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))",
			bad:  []string{"INSERT INTO b VALUES (1, 'x')"},
			want: []string{"`b`", "does not exist on the target"},
			fix:  "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))"},
		{name: "column missing on the target",
			srcB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10), extra INT)",
			dstB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))",
			bad:  []string{"INSERT INTO b VALUES (1, 'x', 2)"},
			want: []string{"`b`", "`extra`", "missing on the target"},
			fix:  "ALTER TABLE b ADD COLUMN extra INT"},
		{name: "value the target rejects",
			srcB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(40))",
			dstB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))",
			bad:  []string{"INSERT INTO b VALUES (1, 'much too long for ten')"},
			want: []string{"`b`", "Data too long for column 'v'", "id=1"},
			fix:  "ALTER TABLE b MODIFY v VARCHAR(40)"},
		{name: "statement-based DML",
			srcB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))",
			dstB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10))",
			bad:  []string{"SET SESSION binlog_format = STATEMENT", "INSERT INTO b VALUES (1, 'x')"},
			want: []string{"statement-based DML", "binlog_format must be ROW", "INSERT INTO b VALUES (1, 'x')"}, noTable: true},
		{name: "MINIMAL row image",
			srcB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO b VALUES (1, 'x')",
			dstB: "CREATE TABLE b (id INT PRIMARY KEY, v VARCHAR(10)); INSERT INTO b VALUES (1, 'x')",
			bad:  []string{"SET SESSION binlog_row_image = MINIMAL", "UPDATE b SET v = 'y' WHERE id = 1"},
			want: []string{"`b`", "row image is not FULL", "binlog_row_image must be FULL"}},
	}
	src, dst := e.src.OpenT(t, ""), e.dst.OpenT(t, "")
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db := fmt.Sprintf("err%d", i)
			use := "USE " + db
			tableA := "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10), pad MEDIUMTEXT)"
			e.grant(t, db)
			e.src.ExecT(t, "SET SESSION sql_log_bin = 0", "CREATE DATABASE "+db, use, tableA, c.srcB)
			e.dst.ExecT(t, "CREATE DATABASE "+db, use, tableA)
			if c.dstB != "" {
				e.dst.ExecT(t, use, c.dstB)
			}
			start := gtidPos(t, e.src)
			// T1 is large enough (5 MB) to take several round trips on the
			// target: it must still commit although T2 fails meanwhile.
			e.src.ExecT(t, use, "INSERT INTO a SELECT seq, 'one', REPEAT(CHAR(64 + seq % 26), 50000) FROM seq_1_to_100") // T1
			afterT1 := gtidPos(t, e.src)
			wantA := tableRows(t, src, db+".a")
			e.src.ExecT(t, append([]string{use}, c.bad...)...) // T2
			badGTID := gtidPos(t, e.src)
			e.src.ExecT(t, use, "INSERT INTO a VALUES (1000, 'three', '')") // T3
			end := gtidPos(t, e.src)

			// First one transaction per batch from before T1, then, from the
			// saved position, merged batches (T2 with T3): the error must
			// name T2 alone each time.
			for _, maxBatch := range []int{1, 16} {
				cfg := e.config(t, 4)
				cfg.Stream, cfg.Rules, cfg.StopAtGTID = db, mustRules(t, db), end
				cfg.Apply.MaxBatch = maxBatch
				if maxBatch == 1 {
					cfg.StartGTID = start
				} else {
					cfg.StartGTID = "" // from the saved position
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				err := Run(ctx, cfg)
				cancel()
				if err == nil {
					t.Fatalf("max batch %d: the stream did not stop", maxBatch)
				}
				t.Logf("max batch %d: %v", maxBatch, err)
				want := append([]string{"transaction " + badGTID}, c.want...)
				if !c.noTable {
					want = append(want, "`"+db+"`")
				}
				for _, w := range want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("max batch %d: error lacks %q", maxBatch, w)
					}
				}
				st, ok, lerr := position.Load(context.Background(), dst, db)
				if lerr != nil || !ok {
					t.Fatalf("stream state: %v %v", ok, lerr)
				}
				if st.State != position.StateError || st.Message != err.Error() {
					t.Errorf("max batch %d: state %q message %q; want %q with the error", maxBatch, st.State, st.Message, position.StateError)
				}
				if samePos(t, st.GTID) != samePos(t, afterT1) {
					t.Errorf("max batch %d: saved position %s; want %s (after T1)", maxBatch, st.GTID, afterT1)
				}
				if got := tableRows(t, dst, db+".a"); strings.Join(got, "\n") != strings.Join(wantA, "\n") {
					t.Errorf("max batch %d: table a holds %q; want T1's rows %q", maxBatch, got, wantA)
				}
			}
			if c.fix == "" {
				return
			}
			e.dst.ExecT(t, use, c.fix)
			cfg := e.config(t, 4)
			cfg.Stream, cfg.Rules, cfg.StartGTID, cfg.StopAtGTID = db, mustRules(t, db), "", end
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if err := Run(ctx, cfg); err != nil {
				t.Fatalf("after the fix: %v", err)
			}
			st, _, _ := position.Load(ctx, dst, db)
			if st.State != position.StateStopped || st.Message != "" || samePos(t, st.GTID) != samePos(t, end) {
				t.Errorf("after the fix: state %q message %q at %s; want stopped, no message, at %s", st.State, st.Message, st.GTID, end)
			}
			verifyDB(t, src, dst, db)
		})
	}
}

func samePos(t *testing.T, s string) string {
	t.Helper()
	set, err := gtid.ParseSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set.String()
}

// tableRows returns a table's rows as text, sorted.
func tableRows(t *testing.T, db *sql.DB, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT CONCAT_WS('|', id, HEX(v), MD5(pad)) FROM " + table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// verifyDB compares the databases on both sides row by row.
func verifyDB(t *testing.T, src, dst *sql.DB, dbs ...string) {
	t.Helper()
	verifyScope(t, src, dst, verify.ScopeAll, dbs...)
}

// verifyRows is verifyDB for the rows alone, where a test made the
// target's definitions differ on purpose.
func verifyRows(t *testing.T, src, dst *sql.DB, dbs ...string) {
	t.Helper()
	verifyScope(t, src, dst, verify.ScopeRows, dbs...)
}

func verifyScope(t *testing.T, src, dst *sql.DB, scope verify.Scope, dbs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := verify.Run(ctx, verify.Config{Source: src, Target: dst, Rules: mustRules(t, dbs...), Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal() || len(rep.Tables) == 0 {
		var b strings.Builder
		rep.Format(&b)
		t.Fatalf("source and target differ:\n%s", b.String())
	}
}
