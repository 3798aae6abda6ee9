package dsn

import (
	"slices"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlerr"
)

// TestSessions: each role's session as Set runs it, and the variables a
// pool's connections get as the driver's parameters, in place of the
// address's of the same name.
func TestSessions(t *testing.T) {
	for _, c := range []struct {
		s    Session
		want []string
	}{
		{ApplySession(true, 20), []string{"SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION', " +
			"time_zone = '+00:00', foreign_key_checks = 1, unique_checks = 1, check_constraint_checks = 0, innodb_lock_wait_timeout = 20, " +
			"autocommit = 1, character_set_client = binary, character_set_connection = utf8mb4, character_set_results = utf8mb4, " +
			"collation_connection = utf8mb4_general_ci", "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"}},
		{VerifySession(), []string{"SET SESSION time_zone = '+00:00', sql_mode = ''", "SET NAMES utf8mb4", "SET SESSION TRANSACTION READ ONLY"}},
		{CopyReadSession(), []string{"SET SESSION character_set_results = binary, time_zone = '+00:00'"}},
		{CutoverSession(), nil},
		{ThrottleSession(), nil},
	} {
		if got := c.s.Statements(); !slices.Equal(got, c.want) {
			t.Errorf("%s session:\n got %q\nwant %q", c.s.Role, got, c.want)
		}
	}
	// A statement from the binlog sets its own character sets: the restore
	// puts the apply session's back, the client's binary.
	if got := ApplySession(true, 20).Restore(true); !strings.Contains(got, "character_set_client = binary, character_set_connection = utf8mb4, ") ||
		!strings.Contains(got, "collation_connection = utf8mb4_general_ci") {
		t.Errorf("apply session's restore: %s", got)
	}
	if got := ApplySession(false, 5).Statements()[0]; !strings.HasSuffix(got, ", sql_log_bin = 0") || !strings.Contains(got, "innodb_lock_wait_timeout = 5,") {
		t.Errorf("apply session without the binlog: %s", got)
	}

	d, err := Parse("mysql://u@h/?time_zone=%27%2B05%3A00%27&wait_timeout=60")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SessionConnector(CopyReadSession(), "", nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := d.DriverConfig("")
	if err != nil {
		t.Fatal(err)
	}
	CopyReadSession().setParams(cfg)
	if params := cfg.Params; params["time_zone"] != "'+00:00'" || params["wait_timeout"] != "60" || params["character_set_results"] != "binary" {
		t.Errorf("parameters: %v", params)
	}
	if d.Params["time_zone"] != "'+05:00'" {
		t.Errorf("the address's own parameters changed: %v", d.Params)
	}
}

func TestServerOf(t *testing.T) {
	for version, want := range map[string]sqlerr.Flavor{
		"10.11.6-MariaDB-log":    sqlerr.MariaDB,
		"11.4.2-MariaDB-ubu2404": sqlerr.MariaDB,
		"5.5.5-10.6.12-MariaDB":  sqlerr.MariaDB,
		"8.0.36":                 sqlerr.MySQL,
		"8.4.0-commercial":       sqlerr.MySQL,
	} {
		if s := ServerOf(version); s.Flavor != want || s.Version != version || s.MariaDB() != (want == sqlerr.MariaDB) {
			t.Errorf("ServerOf(%q) = %+v", version, s)
		}
	}
}
