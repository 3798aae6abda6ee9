package provision

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/schema"
)

func TestOrReplace(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE SEQUENCE `s` start with 1", "CREATE OR REPLACE SEQUENCE `s` start with 1"},
		{"CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `d`.`v` AS select 1",
			"CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `d`.`v` AS select 1"},
		{"CREATE OR REPLACE VIEW v AS select 1", "CREATE OR REPLACE VIEW v AS select 1"},
		{"create  definer=`a`@`%` procedure p() select 1", "CREATE OR REPLACE definer=`a`@`%` procedure p() select 1"},
	} {
		if got := OrReplace(c.in); got != c.want {
			t.Errorf("OrReplace(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCurrentDefiner(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=`root`@`localhost` SQL SECURITY DEFINER VIEW `v` AS select 'DEFINER=`x`@`y`'",
			"CREATE OR REPLACE ALGORITHM=UNDEFINED DEFINER=CURRENT_USER SQL SECURITY DEFINER VIEW `v` AS select 'DEFINER=`x`@`y`'"},
		{"CREATE OR REPLACE DEFINER=`we``ird`@`%` PROCEDURE `p`() select 1", "CREATE OR REPLACE DEFINER=CURRENT_USER PROCEDURE `p`() select 1"},
		{"CREATE DEFINER=`app`@`10.0.%` EVENT `e` ON SCHEDULE EVERY 1 HOUR DO select 1",
			"CREATE DEFINER=CURRENT_USER EVENT `e` ON SCHEDULE EVERY 1 HOUR DO select 1"},
		{"CREATE DEFINER=`r`@`localhost` FUNCTION `f`() RETURNS int RETURN 1", "CREATE DEFINER=CURRENT_USER FUNCTION `f`() RETURNS int RETURN 1"},
		// none, or only inside the body: unchanged
		{"CREATE OR REPLACE SEQUENCE `s` start with 1", "CREATE OR REPLACE SEQUENCE `s` start with 1"},
		{"CREATE PROCEDURE p() select 'DEFINER=`x`@`y`'", "CREATE PROCEDURE p() select 'DEFINER=`x`@`y`'"},
	} {
		if got := CurrentDefiner(c.in); got != c.want {
			t.Errorf("CurrentDefiner(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestDisabledOnReplica(t *testing.T) {
	head := "CREATE DEFINER=`root`@`localhost` EVENT `e` ON SCHEDULE EVERY 1 HOUR STARTS '2026-11-28 06:07:27' "
	for _, c := range []struct{ in, want string }{
		{head + "ON COMPLETION NOT PRESERVE ENABLE DO insert into t values (1)",
			head + "ON COMPLETION NOT PRESERVE DISABLE ON SLAVE DO insert into t values (1)"},
		{head + "ON COMPLETION PRESERVE ENABLE COMMENT 'ENABLE' DO select 1",
			head + "ON COMPLETION PRESERVE DISABLE ON SLAVE COMMENT 'ENABLE' DO select 1"},
		// disabled on the source: disabled on the replica too
		{head + "ON COMPLETION PRESERVE DISABLE COMMENT 'ENABLE' DO select 1", head + "ON COMPLETION PRESERVE DISABLE COMMENT 'ENABLE' DO select 1"},
		{head + "ON COMPLETION NOT PRESERVE DISABLE ON SLAVE DO select 1", head + "ON COMPLETION NOT PRESERVE DISABLE ON SLAVE DO select 1"},
		{head + "ON COMPLETION NOT PRESERVE ENABLE DO update t set s = 'ON COMPLETION PRESERVE ENABLE'",
			head + "ON COMPLETION NOT PRESERVE DISABLE ON SLAVE DO update t set s = 'ON COMPLETION PRESERVE ENABLE'"},
	} {
		if got := DisabledOnReplica(c.in); got != c.want {
			t.Errorf("DisabledOnReplica(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestObjectSession(t *testing.T) {
	o := &schema.ObjectDef{Kind: schema.KindEvent, Schema: "sh`op", Name: "e", SQLMode: "STRICT_TRANS_TABLES,NO_ZERO_DATE",
		Charset: "utf8mb4", Collation: "utf8mb4_general_ci", TimeZone: "+01:00"}
	got, err := ObjectSession(o)
	if err != nil {
		t.Fatal(err)
	}
	want := "USE `sh``op`\nSET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ZERO_DATE', character_set_client = 'utf8mb4', " +
		"collation_connection = 'utf8mb4_general_ci', time_zone = '+01:00'"
	if strings.Join(got, "\n") != want {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
	}
	seq := &schema.ObjectDef{Kind: schema.KindSequence, Schema: "s", Name: "q"}
	if got, _ := ObjectSession(seq); got[1] != "SET SESSION sql_mode = '"+schema.DefinitionMode+"'" {
		t.Errorf("a sequence's session: %q", got)
	}
	for _, bad := range []*schema.ObjectDef{
		{Kind: schema.KindView, SQLMode: "x', @@global.read_only = '1"},
		{Kind: schema.KindView, Charset: `utf8\`, Collation: "x"},
		{Kind: schema.KindEvent, TimeZone: "Europe/Berlin'"},
	} {
		if _, err := ObjectSession(bad); err == nil {
			t.Errorf("ObjectSession took %+v", bad)
		}
	}
}
