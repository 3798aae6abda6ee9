package replicate

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
)

// TestMissingOnSource compares start positions with a source's
// gtid_binlog_state: a GTID the source has (or passed) is not missing;
// one beyond the source's last of that server and domain is, from the
// source's next one; a server or domain the source never logged is
// missing whole.
func TestMissingOnSource(t *testing.T) {
	for _, c := range []struct{ state, start, want string }{
		{"0-1-10", "0-1-10", ""},
		{"0-1-10,0-3-15", "0-3-12", ""},
		{"0-1-10,0-3-15", "0-1-9", ""},
		{"0-1-10", "0-1-14", "0-1-11 to 0-1-14"},
		{"0-1-10", "0-1-11", "0-1-11"},
		{"0-1-10,0-3-12", "0-1-11", "0-1-11"}, // the new source logged 0-3-11 and 0-3-12 of its own
		{"0-3-5", "0-1-4", "domain 0 up to 0-1-4 (the source has none of server 1's)"},
		{"0-1-10", "0-1-10,1-1-3", "domain 1 up to 1-1-3 (the source has none of server 1's)"},
		{"", "0-1-0", ""},
	} {
		start, err := gtid.ParseSet(c.start)
		if err != nil {
			t.Fatal(err)
		}
		missing, err := missingOnSource(c.state, start)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range missing {
			got = append(got, m.String())
		}
		if strings.Join(got, ", ") != c.want {
			t.Errorf("state %q, start %q: missing %q, want %q", c.state, c.start, got, c.want)
		}
	}
	if _, err := missingOnSource("0-1-x", gtid.Set{}); err == nil {
		t.Error("a bad state was accepted")
	}
}
