package cutover

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/sqlquote"
)

// TestObjectSession: the settings read from the source are plain names
// in string literals; anything else is refused, naming the object and
// the setting.
func TestObjectSession(t *testing.T) {
	for _, c := range []struct {
		name string
		o    object
		want []string
		err  string
	}{
		{"plain", object{schema: "shop", sqlMode: "STRICT_TRANS_TABLES", charset: "utf8mb4", collation: "utf8mb4_general_ci", timeZone: "SYSTEM"},
			[]string{"USE `shop`", "SET SESSION sql_mode = 'STRICT_TRANS_TABLES', character_set_client = 'utf8mb4', " +
				"collation_connection = 'utf8mb4_general_ci', time_zone = 'SYSTEM'"}, ""},
		{"no time zone", object{schema: "a`b", charset: "latin1", collation: "latin1_swedish_ci"},
			[]string{"USE `a``b`", "SET SESSION sql_mode = '', character_set_client = 'latin1', collation_connection = 'latin1_swedish_ci'"}, ""},
		{"crafted mode", object{kind: kindTrigger, schema: "s", name: "t", sqlMode: `x', @@global.read_only = 0, sql_mode = '`,
			charset: "utf8mb4", collation: "c"}, nil, "trigger `s`.`t` was created with sql_mode"},
		{"crafted charset", object{kind: kindEvent, schema: "s", name: "e", charset: `\'; DROP TABLE t; --`, collation: "c"},
			nil, "event `s`.`e` was created with character_set_client"},
		{"crafted time zone", object{kind: kindEvent, schema: "s", name: "e", charset: "utf8mb4", collation: "c", timeZone: `+00:00'; DROP`},
			nil, "event `s`.`e` was created with time_zone"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.o.session()
			if c.err != "" {
				if !errors.Is(err, sqlquote.ErrNotPlain) || !strings.Contains(err.Error(), c.err) {
					t.Errorf("got %q, %v; want an error with %q", got, err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %q, %v\nwant %q", got, err, c.want)
			}
		})
	}
}

// TestReplaceObject: at the hand-over, an event the target holds DISABLE
// ON SLAVE is replaced by the source's definition; one already the
// source's is left alone; and when the source's cannot be created, the
// target's own is put back. It runs as the cut-over's account.
func TestReplaceObject(t *testing.T) {
	s := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := "CREATE EVENT `wl`.`purge` ON SCHEDULE EVERY 1 DAY STARTS '2030-01-01 00:00:00' ON COMPLETION PRESERVE %s DO DELETE FROM wl.t"
	s.ExecT(t, "CREATE DATABASE wl", "CREATE TABLE wl.t (id INT PRIMARY KEY)", strings.Replace(create, "%s", "DISABLE ON SLAVE", 1))
	if _, err := s.GrantCutover(ctx, "wl"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", sandbox.CutoverUser+":"+sandbox.AccountPassword+"@tcp("+s.Addr()+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	status := func() string {
		t.Helper()
		var st string
		if err := db.QueryRowContext(ctx, "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_NAME = 'purge'").Scan(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	// The source's definition as define reads it, from a scratch event.
	s.ExecT(t, strings.Replace(strings.Replace(create, "`purge`", "`model`", 1), "%s", "ENABLE", 1))
	src := object{kind: kindEvent, schema: "wl", name: "model"}
	if err := define(ctx, db, &src); err != nil {
		t.Fatal(err)
	}
	src.name, src.create = "purge", strings.Replace(src.create, "`model`", "`purge`", 1)

	broken := src
	broken.create = strings.Replace(src.create, "DELETE FROM wl.t", "DELETE FROM", 1)
	if _, err := replaceObject(ctx, db, broken); err == nil || !strings.Contains(err.Error(), "own definition is back") {
		t.Fatalf("a definition that fails: %v", err)
	}
	if st := status(); st != "SLAVESIDE_DISABLED" {
		t.Fatalf("after the failed replacement the event is %s", st)
	}
	if replaced, err := replaceObject(ctx, db, src); err != nil || !replaced || status() != "ENABLED" {
		t.Fatalf("replace: %v, %v, %s", replaced, err, status())
	}
	if replaced, err := replaceObject(ctx, db, src); err != nil || replaced {
		t.Fatalf("replace again: %v, %v", replaced, err)
	}
}

// TestScriptCrafted: names and definers from the source stay inside their
// comments and quotes in the --deferred-out script; an event is dropped
// before it is created (the copy created it on the target).
func TestScriptCrafted(t *testing.T) {
	evil := "x\nDROP DATABASE shop;;\n"
	objs := []object{
		{kind: kindTrigger, schema: "shop", name: evil, table: "t", definer: "a\r\nDROP DATABASE shop;;@%", charset: "utf8mb4",
			collation: "utf8mb4_general_ci", create: "CREATE DEFINER=`a`@`%` TRIGGER `x` BEFORE INSERT ON `t` FOR EACH ROW SET @a = 1"},
		{kind: kindEvent, schema: "shop", name: "e", definer: "root@localhost", charset: "utf8mb4", collation: "utf8mb4_general_ci",
			create: "CREATE DEFINER=`root`@`localhost` EVENT `e` ON SCHEDULE EVERY 1 DAY DO DELETE FROM t"},
	}
	kept := []position.Deferred{{GTID: "0-1-5", Reason: "trigger", Schema: "shop\nDROP DATABASE shop;;", Statement: "CREATE TRIGGER x"}}
	got, err := script("header", objs, kept)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(got, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "DROP DATABASE") {
			t.Errorf("a crafted name became a statement:\n%s", got)
		}
	}
	if !strings.Contains(got, "DROP EVENT IF EXISTS `shop`.`e`;;\nCREATE DEFINER=`root`@`localhost` EVENT `e`") {
		t.Errorf("the event is not replaced:\n%s", got)
	}
}
