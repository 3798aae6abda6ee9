package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

func runBinlogCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := newBinlogCmd()
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

func TestBinlogDump(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d",
		"CREATE TABLE d.t (id INT PRIMARY KEY, name VARCHAR(20), e ENUM('a','b'), s SET('x','y','z'), "+
			"amount DECIMAL(10,2), at DATETIME(3), raw VARBINARY(8), flags BIT(5))",
		"INSERT INTO d.t VALUES (1, 'it''s', 'b', 'x,z', -12.50, '2024-02-29 13:14:15.123', X'00FF', b'10110')",
		"INSERT INTO d.t (id) VALUES (2)",
		"UPDATE d.t SET name = 'two' WHERE id = 2",
		"DELETE FROM d.t WHERE id = 2",
		"FLUSH BINARY LOGS")
	source := "mysql://root@" + srv.Addr() + "/"

	out, err := runBinlogCmd(t, "dump", "--source", source, "--from-gtid=", "--non-blocking", "--server-id", "77")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Format_desc: binlog v4, server v10.",
		": GTID 0-1-3 trans",
		"Table_map: `d`.`t` mapped to number",
		"### INSERT INTO `d`.`t`\n### SET\n###   @1 id=1 /* INT meta=0 nullable=0 is_null=0 */\n###   @2 name='it\\'s' /* VARCHAR(80) meta=80 nullable=1 is_null=0 */",
		"###   @3 e='b' /* ENUM",
		"###   @4 s='x,z' /* SET",
		"###   @5 amount=-12.50 /* DECIMAL(10,2) meta=2562",
		"###   @6 at='2024-02-29 13:14:15.123' /* DATETIME(3) meta=3",
		"###   @7 raw='\\x00\\xff' /* VARCHAR",
		"###   @8 flags=b'10110' /* BIT(5) meta=5",
		"###   @2 name=NULL /* VARCHAR(80) meta=80 nullable=1 is_null=1 */",
		"### UPDATE `d`.`t`\n### WHERE\n###   @1 id=2",
		"### SET\n###   @1 id=2 /* INT meta=0 nullable=0 is_null=0 */\n###   @2 name='two'",
		"### DELETE FROM `d`.`t`\n### WHERE\n###   @1 id=2",
		"Xid = ",
		"Rotate: to binlog.000002 pos 4\n",
		"# INSERT INTO d.t (id) VALUES (2)", // annotate rows
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}

	out, err = runBinlogCmd(t, "dump", "--source", source, "--from-gtid=", "--non-blocking", "--json")
	if err != nil {
		t.Fatal(err)
	}
	checkJSON(t, out)

	file := filepath.Join(srv.Dir, "data", "binlog.000001")
	out, err = runBinlogCmd(t, "dump", "--file", file)
	if err != nil || !strings.Contains(out, "###   @5 amount=-12.50 /* DECIMAL") || !strings.Contains(out, "# at 4 in binlog.000001") {
		t.Fatalf("file dump: %v\n%s", err, out)
	}

	if _, err := runBinlogCmd(t, "dump"); err == nil || !strings.Contains(err.Error(), "exactly one of --source and --file") {
		t.Errorf("no source: %v", err)
	}
}

func checkJSON(t *testing.T, out string) {
	t.Helper()
	var inserted map[string]any
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, line := range lines {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %v: %s", err, line)
		}
		if ev["kind"] == "insert" && inserted == nil {
			inserted = ev["rows"].([]any)[0].(map[string]any)["after"].(map[string]any)
		}
	}
	want := map[string]any{"id": 1.0, "name": "it's", "e": "b", "s": "x,z", "amount": "-12.50",
		"at": "2024-02-29 13:14:15.123", "raw": map[string]any{"hex": "00ff"}, "flags": 22.0}
	for k, v := range want {
		got, _ := json.Marshal(inserted[k])
		exp, _ := json.Marshal(v)
		if !bytes.Equal(got, exp) {
			t.Errorf("JSON %s = %s, want %s", k, got, exp)
		}
	}
}

// TestBinlogDumpHidesPasswords: a password in a replicated account
// statement is hidden from `binlog dump` (text and JSON, from a server and
// from a file) unless --raw-statements is given.
func TestBinlogDumpHidesPasswords(t *testing.T) {
	const canary = "PlainTextPw111-canary"
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE USER 'app'@'%' IDENTIFIED BY '"+canary+"'",
		"SET PASSWORD FOR 'app'@'%' = PASSWORD('"+canary+"2')",
		"FLUSH BINARY LOGS")
	source := "mysql://root@" + srv.Addr() + "/"
	file := filepath.Join(srv.Dir, "data", "binlog.000001")
	cases := []struct {
		name string
		args []string
		raw  bool
	}{
		{"server text", []string{"--source", source, "--from-gtid=", "--non-blocking"}, false},
		{"server json", []string{"--source", source, "--from-gtid=", "--non-blocking", "--json"}, false},
		{"file text", []string{"--file", file}, false},
		{"server text raw", []string{"--source", source, "--from-gtid=", "--non-blocking", "--raw-statements"}, true},
		{"file json raw", []string{"--file", file, "--json", "--raw-statements"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := runBinlogCmd(t, append([]string{"dump"}, c.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "CREATE USER 'app'@'%' IDENTIFIED BY ") {
				t.Fatalf("the statement is not in the dump:\n%s", out)
			}
			if got := strings.Contains(out, canary); got != c.raw {
				t.Errorf("canary in the output: %v, want %v:\n%s", got, c.raw, grepLines(out, "app"))
			}
			if !c.raw && !strings.Contains(out, "'<redacted>'") && !strings.Contains(out, `'\u003credacted\u003e'`) {
				t.Errorf("no marker where the password was:\n%s", grepLines(out, "app"))
			}
		})
	}
}
