package replica

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/wire"
	"github.com/binlane/binlane/internal/wire/wiretest"
)

// TestRowImagePreflight: FULL, MINIMAL and NOBLOB sources are accepted, the
// partial ones with a notice saying what serializes and what stops; a
// MySQL source's partial JSON updates stay refused.
func TestRowImagePreflight(t *testing.T) {
	cases := []struct {
		image, jsonOpts string
		refused, notice string // "" none
	}{
		{"FULL", "", "", ""},
		{"MINIMAL", "", "", "takes that table whole"},
		{"noblob", "", "", "binlog_row_image is NOBLOB"},
		{"MINIMAL", "PARTIAL_JSON", "partial JSON updates are not supported", "takes that table whole"},
		{"SOMETHING", "", "@@binlog_row_image is SOMETHING, need FULL, MINIMAL or NOBLOB", ""},
	}
	for _, c := range cases {
		t.Run(c.image+"/"+c.jsonOpts, func(t *testing.T) {
			vars := maps.Clone(mysqlVars)
			vars["binlog_row_image"], vars["binlog_row_value_options"] = c.image, c.jsonOpts
			srv := wiretest.Start(t, wiretest.Config{User: "repl", Password: "pw", Query: mysqlQueries(vars)})
			info, err := Inspect(context.Background(), Config{Config: wire.Config{Addr: srv.Addr(), User: "repl", Password: "pw"}, ServerID: 5})
			var pfe *PreflightError
			switch {
			case c.refused != "":
				if !errors.As(err, &pfe) || !strings.Contains(err.Error(), c.refused) {
					t.Fatalf("got %v, want a refusal with %q", err, c.refused)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			n := RowImageNotice(info.RowImage)
			if c.notice == "" && n != "" || c.notice != "" && !strings.Contains(n, c.notice) {
				t.Errorf("notice %q, want %q", n, c.notice)
			}
		})
	}
}
