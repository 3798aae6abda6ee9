package verify

import (
	"context"
	"database/sql/driver"
	"reflect"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestNormalizeDefinition(t *testing.T) {
	for _, c := range []struct {
		name string
		def  objectDef
		want string
	}{
		{"auto_increment counter", objectDef{Kind: KindTable, Def: "CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT\n) ENGINE=InnoDB AUTO_INCREMENT=42 DEFAULT CHARSET=utf8mb4"},
			"CREATE TABLE `t` (\n  `id` int(11) NOT NULL AUTO_INCREMENT\n) DEFAULT CHARSET=utf8mb4"},
		{"engine", objectDef{Kind: KindTable, Def: "CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) ENGINE=MyISAM DEFAULT CHARSET=latin1"},
			"CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) DEFAULT CHARSET=latin1"},
		{"partitions' engines", objectDef{Kind: KindTable, Def: "CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) ENGINE=Aria PAGE_CHECKSUM=1\n" +
			" PARTITION BY RANGE (`id`)\n(PARTITION `p0` VALUES LESS THAN (10) ENGINE = Aria,\n PARTITION `p1` VALUES LESS THAN MAXVALUE ENGINE = Aria)"},
			"CREATE TABLE `t` (\n  `id` int(11) NOT NULL\n) PAGE_CHECKSUM=1\n PARTITION BY RANGE (`id`)\n(PARTITION `p0` VALUES LESS THAN (10),\n" +
				" PARTITION `p1` VALUES LESS THAN MAXVALUE)"},
		{"a column's text mentioning an engine", objectDef{Kind: KindTable, Def: "CREATE TABLE `t` (\n  `c` int(11) DEFAULT 0 COMMENT ') ENGINE=x'\n) ENGINE=InnoDB"},
			"CREATE TABLE `t` (\n  `c` int(11) DEFAULT 0 COMMENT ') ENGINE=x'\n)"},
		{"auto_increment kept outside tables", objectDef{Kind: KindView, Def: "select ' AUTO_INCREMENT=3' AS `a`"},
			"select ' AUTO_INCREMENT=3' AS `a`"},
		{"definer in backticks", objectDef{Kind: KindView, Def: "CREATE ALGORITHM=UNDEFINED DEFINER=`app`@`LocalHost` SQL SECURITY DEFINER VIEW `v` AS select 1"},
			"CREATE ALGORITHM=UNDEFINED DEFINER=`app`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 1"},
		{"definer in single quotes", objectDef{Kind: KindProcedure, Def: "CREATE DEFINER='app'@'%' PROCEDURE `p`() SELECT 1"},
			"CREATE DEFINER=`app`@`%` PROCEDURE `p`() SELECT 1"},
		{"definer bare", objectDef{Kind: KindTrigger, Def: "CREATE DEFINER=app@10.0.0.% TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a = 1"},
			"CREATE DEFINER=`app`@`10.0.0.%` TRIGGER t BEFORE INSERT ON x FOR EACH ROW SET @a = 1"},
		{"definer with quotes inside", objectDef{Kind: KindFunction, Def: "CREATE DEFINER=`o``brien`@`h` FUNCTION f() RETURNS int RETURN 1"},
			"CREATE DEFINER=`o``brien`@`h` FUNCTION f() RETURNS int RETURN 1"},
		{"definer single-quoted with quote", objectDef{Kind: KindFunction, Def: "CREATE DEFINER='o''brien'@'h' FUNCTION f() RETURNS int RETURN 1"},
			"CREATE DEFINER=`o'brien`@`h` FUNCTION f() RETURNS int RETURN 1"},
		{"user case kept", objectDef{Kind: KindEvent, Def: "CREATE DEFINER=`App`@`H` EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1"},
			"CREATE DEFINER=`App`@`h` EVENT `e` ON SCHEDULE EVERY 1 DAY DO SELECT 1"},
		{"no definer", objectDef{Kind: KindSequence, Def: "next_not_cached_value=1001"}, "next_not_cached_value=1001"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := normalizeDefinition(c.def); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestReplicaEventStatus(t *testing.T) {
	ev := func(name, status string) string {
		return "CREATE DEFINER=`root`@`localhost` EVENT `" + name + "` ON SCHEDULE EVERY 1 DAY STARTS '2026-01-01 00:00:00' " +
			"ON COMPLETION NOT PRESERVE " + status + " COMMENT 'x' DO DELETE FROM t"
	}
	for _, c := range []struct {
		name, src, tgt, want string
	}{
		{"replica's disabled on slave equals enable", ev("e", "ENABLE"), ev("e", "DISABLE ON SLAVE"), ev("e", "ENABLE")},
		{"disable stays", ev("e", "ENABLE"), ev("e", "DISABLE"), ev("e", "DISABLE")},
		{"source disabled", ev("e", "DISABLE"), ev("e", "DISABLE ON SLAVE"), ev("e", "DISABLE ON SLAVE")},
		{"MySQL's replica", ev("e", "ENABLE"), ev("e", "DISABLE ON REPLICA"), ev("e", "ENABLE")},
		{"same", ev("e", "ENABLE"), ev("e", "ENABLE"), ev("e", "ENABLE")},
		{"a name cannot fake the status", ev("x ON COMPLETION PRESERVE ENABLE", "ENABLE"), ev("x ON COMPLETION PRESERVE ENABLE", "DISABLE ON SLAVE"),
			ev("x ON COMPLETION PRESERVE ENABLE", "ENABLE")},
		{"preserve", strings.Replace(ev("e", "ENABLE"), "NOT PRESERVE", "PRESERVE", 1),
			strings.Replace(ev("e", "DISABLE ON SLAVE"), "NOT PRESERVE", "PRESERVE", 1), strings.Replace(ev("e", "ENABLE"), "NOT PRESERVE", "PRESERVE", 1)},
		{"unparsable left alone", "CREATE EVENT", "CREATE EVENT `e` DISABLE ON SLAVE", "CREATE EVENT `e` DISABLE ON SLAVE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := replicaEventStatus(c.src, c.tgt); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestCompareObjects(t *testing.T) {
	def := func(kind ObjectKind, name, text string) objectDef {
		return objectDef{Kind: kind, Schema: "shop", Name: name, Def: text}
	}
	event := func(status string) string {
		return "CREATE DEFINER=`root`@`localhost` EVENT `e` ON SCHEDULE EVERY 1 HOUR STARTS '2026-01-01 00:00:00' ON COMPLETION NOT PRESERVE " +
			status + " DO DELETE FROM t\n-- sql_mode: STRICT_TRANS_TABLES"
	}
	type result struct {
		Label  string
		Status ObjectStatus
		Line   int
	}
	for _, c := range []struct {
		name       string
		src, tgt   []objectDef
		handedOver bool
		want       []result
	}{
		{"equal after normalizing", []objectDef{def(KindTable, "t", "CREATE TABLE `t` (a int) AUTO_INCREMENT=5"), def(KindView, "v", "CREATE DEFINER=`a`@`H` VIEW v")},
			[]objectDef{def(KindView, "v", "CREATE DEFINER='a'@'h' VIEW v"), def(KindTable, "t", "CREATE TABLE `t` (a int) AUTO_INCREMENT=9")}, false,
			[]result{{"table shop.t", ObjectEqual, 0}, {"view shop.v", ObjectEqual, 0}}},
		{"a table on one side is the row comparison's", []objectDef{def(KindTable, "t", "x")}, []objectDef{def(KindTable, "u", "y")}, false, nil},
		{"missing and extra", []objectDef{def(KindProcedure, "p", "x"), def(KindFunction, "f", "y")},
			[]objectDef{def(KindFunction, "f", "y"), def(KindView, "w", "z")}, false,
			[]result{{"view shop.w", ObjectOnlyOnTarget, 0}, {"function shop.f", ObjectEqual, 0}, {"procedure shop.p", ObjectMissing, 0}}},
		{"procedure body differs", []objectDef{def(KindProcedure, "p", "CREATE PROCEDURE p()\nBEGIN\n  SELECT 1;\nEND")},
			[]objectDef{def(KindProcedure, "p", "CREATE PROCEDURE p()\nBEGIN\n  SELECT 2;\nEND")}, false,
			[]result{{"procedure shop.p", ObjectDifferent, 3}}},
		{"sequence state differs", []objectDef{def(KindSequence, "s", "next_not_cached_value=1001\nminimum_value=1")},
			[]objectDef{def(KindSequence, "s", "next_not_cached_value=1\nminimum_value=1")}, false,
			[]result{{"sequence shop.s", ObjectDifferent, 1}}},
		{"deferred before the hand-over", []objectDef{def(KindTrigger, "tr", "x"), def(KindEvent, "e", event("ENABLE"))}, nil, false,
			[]result{{"trigger shop.tr", ObjectDeferred, 0}, {"event shop.e", ObjectDeferred, 0}}},
		{"missing after the hand-over", []objectDef{def(KindTrigger, "tr", "x"), def(KindEvent, "e", event("ENABLE"))}, nil, true,
			[]result{{"trigger shop.tr", ObjectMissing, 0}, {"event shop.e", ObjectMissing, 0}}},
		{"a trigger on the replica only", nil, []objectDef{def(KindTrigger, "tr", "x")}, false,
			[]result{{"trigger shop.tr", ObjectOnlyOnTarget, 0}}},
		{"replica's event status", []objectDef{def(KindEvent, "e", event("ENABLE"))}, []objectDef{def(KindEvent, "e", event("DISABLE ON SLAVE"))}, false,
			[]result{{"event shop.e", ObjectEqual, 0}}},
		{"replica's event status after the hand-over", []objectDef{def(KindEvent, "e", event("ENABLE"))},
			[]objectDef{def(KindEvent, "e", event("DISABLE ON SLAVE"))}, true, []result{{"event shop.e", ObjectDifferent, 1}}},
		{"an event's sql_mode", []objectDef{def(KindEvent, "e", event("ENABLE"))},
			[]objectDef{def(KindEvent, "e", strings.Replace(event("DISABLE ON SLAVE"), "STRICT_TRANS_TABLES", "", 1))}, false,
			[]result{{"event shop.e", ObjectDifferent, 2}}},
		{"unreadable", []objectDef{{Kind: KindView, Schema: "shop", Name: "v", Err: "denied"}}, []objectDef{def(KindView, "v", "x")}, false,
			[]result{{"view shop.v", ObjectError, 0}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []result
			for _, o := range compareObjects(c.src, c.tgt, c.handedOver, false) {
				got = append(got, result{o.Label(), o.Status, o.Line})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestFirstDifference(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, c := range []struct {
		name, a, b string
		line       int
		src, tgt   string
	}{
		{"same", "x\ny", "x\ny", 0, "", ""},
		{"second line", "x\ny", "x\nz", 2, "y", "z"},
		{"line missing", "x\ny", "x", 2, "y", ""},
		{"cut around the difference", long + "X" + long, long + "Y" + long, 1,
			"..." + strings.Repeat("a", 40) + "X" + strings.Repeat("a", 39) + "...",
			"..." + strings.Repeat("a", 40) + "Y" + strings.Repeat("a", 39) + "..."},
		{"multibyte", "é" + "x", "é" + "y", 1, "éx", "éy"},
		{"same first byte of a rune", "é", "è", 1, "é", "è"},
	} {
		t.Run(c.name, func(t *testing.T) {
			line, src, tgt := firstDifference(c.a, c.b)
			if line != c.line || src != c.src || tgt != c.tgt {
				t.Errorf("got %d %q %q, want %d %q %q", line, src, tgt, c.line, c.src, c.tgt)
			}
		})
	}
}

func TestObjectError(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"denied", &mysql.MySQLError{Number: 1142, Message: "SHOW VIEW command denied"}, true},
		{"dropped meanwhile", &mysql.MySQLError{Number: 1305, Message: "PROCEDURE p does not exist"}, true},
		{"hidden body", &hiddenError{"no definition"}, true},
		{"killed", &mysql.MySQLError{Number: 1927, Message: "Connection was killed"}, false},
		{"interrupted", &mysql.MySQLError{Number: 1317, Message: "Query execution was interrupted"}, false},
		{"connection", driver.ErrBadConn, false},
		{"context", context.Canceled, false},
	} {
		if got := objectError(c.err); got != c.want {
			t.Errorf("%s: objectError = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCompareObjectsAnyDefiner(t *testing.T) {
	src := []objectDef{{Kind: KindView, Schema: "shop", Name: "v", Def: "CREATE ALGORITHM=UNDEFINED DEFINER=`app`@`%` SQL SECURITY DEFINER VIEW `v` AS select 1"}}
	tgt := []objectDef{{Kind: KindView, Schema: "shop", Name: "v", Def: "CREATE ALGORITHM=UNDEFINED DEFINER=`binlane`@`%` SQL SECURITY DEFINER VIEW `v` AS select 1"}}
	if got := compareObjects(src, tgt, false, false)[0].Status; got != ObjectDifferent {
		t.Errorf("definers compared: %s, want %s", got, ObjectDifferent)
	}
	if got := compareObjects(src, tgt, false, true)[0].Status; got != ObjectEqual {
		t.Errorf("definers not compared: %s, want %s", got, ObjectEqual)
	}
	tgt[0].Def = strings.Replace(tgt[0].Def, "select 1", "select 2", 1)
	if got := compareObjects(src, tgt, false, true)[0].Status; got != ObjectDifferent {
		t.Errorf("another body, definers not compared: %s, want %s", got, ObjectDifferent)
	}
}
