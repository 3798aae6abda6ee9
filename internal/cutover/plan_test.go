package cutover

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/position"
)

func TestReverseName(t *testing.T) {
	for in, want := range map[string]string{
		"shop":                 "shop-reverse",
		"shop-reverse":         "shop",
		"-reverse":             "-reverse-reverse",
		"default":              "default-reverse",
		"shop-reverse-reverse": "shop-reverse",
	} {
		if got := ReverseName(in); got != want {
			t.Errorf("ReverseName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReverseCommand: the roles swap, the selection and TLS settings
// follow their server, and no password is printed.
func TestReverseCommand(t *testing.T) {
	src, err := dsn.Parse("mysql://repl:s3cret@db1:3307/?ssl-mode=VERIFY_CA&ssl-ca=/etc/ca.pem")
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := dsn.Parse("app:p4ss@tcp(db2:3306)/")
	if err != nil {
		t.Fatal(err)
	}
	rules, _ := filter.New([]string{"shop", "crm"}, nil, []string{"shop.audit log"})
	got := ReverseCommand(src, tgt, "move-reverse", rules)
	want := "binlane replicate --source mysql://app@db2:3306/ --target mysql://repl@db1:3307/ --stream move-reverse " +
		"--target-ssl-mode verify-ca --target-ssl-ca /etc/ca.pem --databases shop,crm --exclude 'shop.audit log' --copy=never"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if strings.Contains(got, "s3cret") || strings.Contains(got, "p4ss") {
		t.Error("a password is in the command")
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"plain":       "plain",
		"a b":         "'a b'",
		"it's":        `'it'\''s'`,
		"":            "''",
		"mysql://u@h": "mysql://u@h",
		"$HOME":       "'$HOME'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestGrantPatterns(t *testing.T) {
	for _, c := range []struct {
		pattern, schema string
		want            bool
	}{
		{"shop", "shop", true},
		{"shop", "shops", false},
		{"shop%", "shop_eu", true},
		{"sh_p", "ship", true},
		{`shop\_eu`, "shop_eu", true},
		{`shop\_eu`, "shopXeu", false},
		{"%", "anything", true},
		{"", "", true},
	} {
		if got := likeMatch(c.pattern, c.schema); got != c.want {
			t.Errorf("likeMatch(%q, %q) = %v", c.pattern, c.schema, got)
		}
	}
	a := &account{global: map[string]bool{"PROCESS": true}, schemas: []schemaGrant{
		{pattern: "shop%", privs: map[string]bool{"TRIGGER": true}},
	}}
	if !a.has("PROCESS", "x") || !a.has("TRIGGER", "shop_eu") || a.has("TRIGGER", "crm") || a.has("EVENT", "shop") {
		t.Error("account.has")
	}
	if m := a.missing("shop", "TRIGGER", "EVENT"); len(m) != 1 || m[0] != "EVENT" {
		t.Errorf("missing: %v", m)
	}
	if !sameAccount("`root`@`localhost`", "root@localhost") || sameAccount("app@%", "binlane@%") {
		t.Error("sameAccount")
	}
}

// TestSteps: the plan says what will happen, for each mode.
func TestSteps(t *testing.T) {
	f := &facts{stream: position.State{GTID: "0-1-9", LagMillis: 1200}, objects: []object{{kind: kindTrigger}, {kind: kindEvent}},
		targetReadOnly: true}
	cfg := Config{Stream: "s", Freeze: FreezeReadOnly, Timeout: time.Minute, Reverse: true, ReverseStream: "s-reverse"}
	got := strings.Join(steps(cfg, f), "\n")
	for _, want := range []string{"SET GLOBAL read_only = ON on the source", "up to 1m0s", "now at 0-1-9, 1.2s behind",
		"compare the selected tables", "create the source's 1 triggers and 1 events", "make the target writable",
		"drop the 1 triggers and 1 events on the source", `prepare stream "s-reverse"`, "stays read-only"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	cfg = Config{Stream: "s", Freeze: FreezeNone, Quiet: 2 * time.Second, Timeout: time.Minute, NoVerify: true, DeferredOut: "x.sql"}
	f = &facts{}
	got = strings.Join(steps(cfg, f), "\n")
	for _, want := range []string{"unchanged for 2s", "skipped (--no-verify)", "to x.sql"} {
		if !strings.Contains(got, want) {
			t.Errorf("plan lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "read_only") || strings.Contains(got, "reverse") {
		t.Errorf("plan of a cut-over without freeze or reverse:\n%s", got)
	}
}

func TestTimingsJSON(t *testing.T) {
	b, err := json.Marshal(Timings{Freeze: 1500 * time.Microsecond, Frozen: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal(b, &m); err != nil || m["freeze_ms"] != 1.5 || m["frozen_ms"] != 1000 || len(m) != 6 {
		t.Errorf("%s", b)
	}
}

// TestScript: a file the mysql client runs: the definitions with their
// session, between DELIMITER lines; the kept statements as comments, with
// passwords hidden.
func TestScript(t *testing.T) {
	objs := []object{{kind: kindTrigger, schema: "shop", name: "t1", definer: "app@%", create: "CREATE TRIGGER t1 BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
		sqlMode: "STRICT_TRANS_TABLES", charset: "utf8mb4", collation: "utf8mb4_general_ci"}}
	kept := []position.Deferred{{GTID: "0-1-5", Schema: "shop", Reason: "trigger", Statement: "CREATE TRIGGER t1 ...\nEND"},
		{GTID: "0-1-6", Schema: "shop", Reason: "event", Statement: "CREATE USER x IDENTIFIED BY 'hunter2'"}}
	s, err := script("header line", objs, kept)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-- header line\n", "DELIMITER ;;\n", "USE `shop`;;\n",
		"SET SESSION sql_mode = 'STRICT_TRANS_TABLES', character_set_client = 'utf8mb4', collation_connection = 'utf8mb4_general_ci';;\n",
		"FOR EACH ROW SET NEW.a = 1;;\n", "DELIMITER ;\n", "-- 0-1-5 (trigger, in shop): CREATE TRIGGER t1 ...\n--   END"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "hunter2") {
		t.Errorf("a password in the script:\n%s", s)
	}
}
