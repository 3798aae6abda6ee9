package schema

import "testing"

func TestDefinerAt(t *testing.T) {
	for _, c := range []struct {
		in, clause, user, host string
	}{
		{"CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 'DEFINER=`x`@`y`'",
			"DEFINER=`root`@`localhost`", "root", "localhost"},
		{"CREATE OR REPLACE DEFINER=`we``ird`@`%` PROCEDURE `p`() select 1", "DEFINER=`we``ird`@`%`", "we`ird", "%"},
		{"CREATE DEFINER='app'@'10.0.%' EVENT e ON SCHEDULE EVERY 1 HOUR DO select 1", "DEFINER='app'@'10.0.%'", "app", "10.0.%"},
		{"CREATE DEFINER=app@localhost TRIGGER t BEFORE INSERT ON t FOR EACH ROW SET @a = 1", "DEFINER=app@localhost", "app", "localhost"},
		{"create definer = 'o\\'k' @ `h` function f() returns int return 1", "definer = 'o\\'k' @ `h`", "o'k", "h"},
		{"CREATE SEQUENCE `s` start with 1", "", "", ""},
		{"CREATE PROCEDURE p() select 'DEFINER=`x`@`y`'", "", "", ""},
	} {
		start, end, user, host, ok := DefinerAt(c.in)
		if ok != (c.clause != "") || ok && (c.in[start:end] != c.clause || user != c.user || host != c.host) {
			t.Errorf("DefinerAt(%q) = %q, %q, %q, %v; want %q, %q, %q", c.in, c.in[start:end], user, host, ok, c.clause, c.user, c.host)
		}
	}
}

func TestEventStatusAt(t *testing.T) {
	head := "CREATE DEFINER=`root`@`localhost` EVENT `e` ON SCHEDULE EVERY 1 HOUR STARTS '2026-11-28 06:07:27' "
	for _, c := range []struct{ in, status string }{
		{head + "ON COMPLETION NOT PRESERVE ENABLE DO insert into t values (1)", "ENABLE"},
		{head + "ON COMPLETION PRESERVE DISABLE COMMENT 'ENABLE' DO select 1", "DISABLE"},
		{head + "ON COMPLETION NOT PRESERVE DISABLE ON SLAVE DO select 1", "DISABLE ON SLAVE"},
		{head + "ON COMPLETION PRESERVE DISABLE ON REPLICA DO select 1", "DISABLE ON REPLICA"},
		// a name holding the words: the status is after it
		{"CREATE EVENT `x ON COMPLETION PRESERVE ENABLE` ON SCHEDULE AT '2030-01-01 00:00:00' ON COMPLETION NOT PRESERVE DISABLE DO select 1",
			"DISABLE"},
		{"CREATE TABLE t (a int)", ""},
	} {
		start, end, ok := EventStatusAt(c.in)
		if ok != (c.status != "") || ok && c.in[start:end] != c.status {
			t.Errorf("EventStatusAt(%q) = %q, %v; want %q", c.in, c.in[start:end], ok, c.status)
		}
	}
}
