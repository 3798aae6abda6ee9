package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/sandbox"
)

func runAnalyzeCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := newAnalyzeCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if errOut.Len() > 0 {
		t.Logf("stderr: %s", errOut.String())
	}
	return out.String(), err
}

// TestAnalyze writes a known workload on a sandbox source and analyses it
// as binlane's least-privilege source account, by GTID range from the
// server and from the binlog files, and checks the counts, the run-alone
// reasons and the conflicts against what was written.
func TestAnalyze(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	srcDB := src.OpenT(t, "")
	srcURL := binlaneURL(t, src, "app")
	src.ExecT(t, "CREATE DATABASE app", "CREATE DATABASE other",
		"CREATE TABLE app.t (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE app.u (id INT PRIMARY KEY, email VARCHAR(50) UNIQUE) DEFAULT CHARSET utf8mb4 COLLATE utf8mb4_general_ci",
		"CREATE TABLE other.x (id INT PRIMARY KEY)",
		"INSERT INTO app.t VALUES (0, 0)", "INSERT INTO app.u VALUES (1, 'x@example.com')")
	start := sourcePos(t, srcDB)
	var stmts []string
	for i := 1; i <= 100; i++ { // independent rows
		stmts = append(stmts, fmt.Sprintf("INSERT INTO app.t VALUES (%d, %d)", i, i))
	}
	for range 20 { // one hot row: 19 transactions wait for the one before
		stmts = append(stmts, "UPDATE app.t SET v = v + 1 WHERE id = 0")
	}
	stmts = append(stmts,
		"DELETE FROM app.u WHERE id = 1", "INSERT INTO app.u VALUES (2, 'X@example.com')", // the same e-mail: a unique-key conflict
		"INSERT INTO app.t VALUES (1000, 1), (1001, 1), (1002, 1)",
		"ALTER TABLE app.t ADD COLUMN w INT",
		"INSERT INTO other.x VALUES (1)") // filtered out by --databases app
	src.ExecT(t, stmts...)
	end := sourcePos(t, srcDB)
	src.ExecT(t, "INSERT INTO app.t VALUES (5000, 0, 0)") // after the range

	const txns, rows = 124, 125
	check := func(t *testing.T, r analyze.Report, withSchema bool) {
		t.Helper()
		if r.Transactions != txns || r.Rows != rows || r.Tables != 2 || r.Filtered != 1 {
			t.Errorf("%d transactions (%d filtered), %d rows, %d tables; want %d (1), %d, 2", r.Transactions, r.Filtered,
				r.Rows, r.Tables, txns, rows)
		}
		if len(r.Alone) != 1 || r.Alone[0].Reason != analyze.AloneDDL || r.Alone[0].Count != 1 {
			t.Errorf("run alone: %+v", r.Alone)
		}
		if len(r.HotKeys) == 0 || r.HotKeys[0] != (analyze.Count{Name: "app.t PRIMARY (id=0)", Count: 19}) {
			t.Errorf("hot keys: %+v", r.HotKeys)
		}
		emailConflict := slices.ContainsFunc(r.HotKeys, func(c analyze.Count) bool { return strings.HasPrefix(c.Name, "app.u unique (email=") })
		if emailConflict != withSchema {
			t.Errorf("unique-key conflict found: %v, want %v (keys %+v)", emailConflict, withSchema, r.HotKeys)
		}
		// The hot row's chain and the DDL: at least 21 on the critical path.
		if cp := r.Graph.CriticalPath.Transactions; cp < 21 {
			t.Errorf("critical path of %d transactions", cp)
		}
		if len(r.Simulations) != len(analyze.DefaultWorkers) || r.Simulations[0].Writeset.Speedup != 1 ||
			r.Recommendation.Workers < 1 || r.Recommendation.Reason == "" {
			t.Errorf("simulations %+v, recommendation %+v", r.Simulations, r.Recommendation)
		}
	}
	parse := func(t *testing.T, out string) analyze.Report {
		t.Helper()
		var r analyze.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return r
	}

	t.Run("source", func(t *testing.T) {
		out, err := runAnalyzeCmd(t, "--source", srcURL, "--start-gtid", start, "--stop-at-gtid", end, "--databases", "app", "--json")
		if err != nil {
			t.Fatal(err)
		}
		check(t, parse(t, out), true)
		out, err = runAnalyzeCmd(t, "--source", srcURL, "--start-gtid", start, "--stop-at-gtid", end, "--databases", "app")
		if err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(`(?m)^transactions +124$`).MatchString(out) {
			t.Errorf("text report lacks the count:\n%s", out)
		}
		for _, want := range []string{"app.t PRIMARY (id=0)", "recommended: ", "commit-order trx/s", "ddl "} {
			if !strings.Contains(out, want) {
				t.Errorf("text report lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("file", func(t *testing.T) {
		src.ExecT(t, "FLUSH BINARY LOGS")
		files, _ := filepath.Glob(filepath.Join(src.Dir, "data", "binlog.[0-9]*"))
		sort.Strings(files)
		args := append([]string{"--start-gtid", start, "--stop-at-gtid", end, "--databases", "app", "--json", "--file"}, files...)
		out, err := runAnalyzeCmd(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		r := parse(t, out)
		check(t, r, false)
		if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "give --schema") }) {
			t.Errorf("no note on the missing definitions: %q", r.Notes)
		}
		// With the definitions from the server, the unique key is seen.
		out, err = runAnalyzeCmd(t, append(args, "--schema", srcURL)...)
		if err != nil {
			t.Fatal(err)
		}
		check(t, parse(t, out), true)
	})

	t.Run("errors", func(t *testing.T) {
		if _, err := runAnalyzeCmd(t); err == nil || !strings.Contains(err.Error(), "exactly one of --source and --file") {
			t.Errorf("no source: %v", err)
		}
		if _, err := runAnalyzeCmd(t, "--file", "/nonexistent/binlog.000001"); err == nil {
			t.Error("a missing file is not an error")
		}
		if code := run([]string{"analyze", "--source", srcURL, "--stop-at-gtid", "not-a-gtid"}, &bytes.Buffer{}, &bytes.Buffer{}); code != exitFailed {
			t.Errorf("bad --stop-at-gtid: exit %d", code)
		}
	})
}

// TestAnalyzeAttribution analyses a scripted web-shop binlog (the schema
// of issue 17: customers, items, orders and order lines with cascading
// foreign keys) whose row counts per table and conflicts are known: rows
// go to the tables they changed, not to each transaction's first, and a
// key a transaction holds twice (a customer row it updates and its new
// order's reference to it) is no conflict, so no conflict is on an
// unknown table.
func TestAnalyzeAttribution(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	srcDB := src.OpenT(t, "")
	srcURL := binlaneURL(t, src, "fk")
	src.ExecT(t, "CREATE DATABASE fk",
		"CREATE TABLE fk.customer (id INT PRIMARY KEY, email VARCHAR(64) NOT NULL UNIQUE, balance DECIMAL(12,2) NOT NULL, orders INT NOT NULL)",
		"CREATE TABLE fk.item (sku CHAR(8) PRIMARY KEY, price DECIMAL(10,2) NOT NULL, stock INT NOT NULL)",
		`CREATE TABLE fk.orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(10) NOT NULL,
			FOREIGN KEY (customer_id) REFERENCES fk.customer (id) ON DELETE CASCADE)`,
		`CREATE TABLE fk.order_line (order_id BIGINT NOT NULL, ln INT NOT NULL, sku CHAR(8) NOT NULL, qty INT NOT NULL,
			PRIMARY KEY (order_id, ln), FOREIGN KEY (order_id) REFERENCES fk.orders (id) ON DELETE CASCADE,
			FOREIGN KEY (sku) REFERENCES fk.item (sku) ON UPDATE CASCADE)`,
		"INSERT INTO fk.customer SELECT seq, CONCAT('c', seq, '@example.com'), 0, 0 FROM fk.seq_1_to_10",
		"INSERT INTO fk.item SELECT CONCAT('S', LPAD(seq, 3, '0')), 9.99, 100 FROM fk.seq_1_to_30")
	sku := func(n int) string { return fmt.Sprintf("'S%03d'", n) }
	start := sourcePos(t, srcDB)
	// Ten orders of ten customers, three lines each on items of their own:
	// no order waits for another on a row (whole-table accesses aside).
	for c := 1; c <= 10; c++ {
		a, b, d := sku(3*c-2), sku(3*c-1), sku(3*c)
		src.ExecT(t, fmt.Sprintf(`BEGIN;
			UPDATE fk.customer SET orders = orders + 1 WHERE id = %d;
			UPDATE fk.item SET stock = stock - 1 WHERE sku IN (%s, %s, %s);
			INSERT INTO fk.orders VALUES (%d, %d, 'new');
			INSERT INTO fk.order_line VALUES (%[5]d, 1, %[2]s, 1), (%[5]d, 2, %[3]s, 1), (%[5]d, 3, %[4]s, 1);
			COMMIT`, c, a, b, d, 100+c, c))
	}
	// The balances of customers 1-3: each waits for its customer's order.
	for c := 1; c <= 3; c++ {
		src.ExecT(t, fmt.Sprintf("UPDATE fk.customer SET balance = balance + 5 WHERE id = %d", c))
	}
	mid := sourcePos(t, srcDB)
	for o := 101; o <= 104; o++ { // ship four orders
		src.ExecT(t, fmt.Sprintf("UPDATE fk.orders SET status = 'shipped' WHERE id = %d", o))
	}
	// Delete two orders: their lines go by cascade, not in the binlog.
	src.ExecT(t, "DELETE FROM fk.orders WHERE id = 105", "DELETE FROM fk.orders WHERE id = 106")
	end := sourcePos(t, srcDB)

	analyse := func(to string) analyze.Report {
		t.Helper()
		out, err := runAnalyzeCmd(t, "--source", srcURL, "--from-gtid", start, "--to-gtid", to, "--json")
		if err != nil {
			t.Fatal(err)
		}
		var r analyze.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return r
	}
	r := analyse(end)
	want := []analyze.Count{{Name: "fk.item", Count: 30}, {Name: "fk.order_line", Count: 30},
		{Name: "fk.customer", Count: 13}, {Name: "fk.orders", Count: 16}}
	slices.SortFunc(want, func(a, b analyze.Count) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Name, b.Name))
	})
	if r.Transactions != 19 || r.Rows != 89 || r.Tables != 4 || !slices.Equal(r.TablesByRows, want) {
		t.Errorf("%d transactions, %d rows, %d tables, by rows %v; want 19, 89, 4, %v", r.Transactions, r.Rows, r.Tables,
			r.TablesByRows, want)
	}
	// binlane's source account sees the foreign keys' rules: information_
	// schema shows them to SHOW VIEW (in the documented grants since the
	// copy reads views), not to SELECT alone.
	if slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "are hidden from this account") }) {
		t.Errorf("a note on hidden foreign key rules with the documented grants: %q", r.Notes)
	}
	for _, c := range append(r.HotTables, r.HotKeys...) {
		if !strings.HasPrefix(c.Name, "fk.") {
			t.Errorf("a conflict not on one of the shop's tables: %v (hot tables %v, keys %v)", c, r.HotTables, r.HotKeys)
		}
	}
	// Up to the balances, the only row conflicts are the balances'.
	r = analyse(mid)
	wantKeys := []analyze.Count{{Name: "fk.customer PRIMARY (id=1)", Count: 1}, {Name: "fk.customer PRIMARY (id=2)", Count: 1},
		{Name: "fk.customer PRIMARY (id=3)", Count: 1}, {Name: "fk.customer unique (email=c1@example.com)", Count: 1},
		{Name: "fk.customer unique (email=c2@example.com)", Count: 1}, {Name: "fk.customer unique (email=c3@example.com)", Count: 1}}
	if !slices.Equal(r.HotKeys, wantKeys) {
		t.Errorf("hot keys %v, want %v", r.HotKeys, wantKeys)
	}
	if !slices.Contains(r.HotTables, analyze.Count{Name: "fk.customer", Count: 3}) {
		t.Errorf("hot tables %v lack fk.customer with 3", r.HotTables)
	}
}
