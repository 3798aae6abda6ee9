package verify

import (
	"encoding/json"
	"strings"
	"testing"
)

func sampleReport() *Report {
	return &Report{Tables: []TableReport{
		{Schema: "app", Table: "users", Status: StatusEqual, Key: "PRIMARY", KeyColumns: []string{"id"},
			SourceRows: 50000, TargetRows: 50000, Chunks: 5},
		{Schema: "app", Table: "orders", Status: StatusDifferent, Key: "PRIMARY", KeyColumns: []string{"shop", "id"},
			SourceRows: 3, TargetRows: 3, Chunks: 1, ChunksDiffering: 1, MoreDiffs: true,
			Diffs: []RowDiff{
				{Kind: DiffValues, Key: []string{"'eu'", "2"}, Columns: []ColumnDiff{{Column: "name", Source: "'abc'", Target: "'ABC'"}}},
				{Kind: DiffMissing, Key: []string{"'eu'", "3"}},
			}},
		{Schema: "app", Table: "gone", Status: StatusMissing, SourceRows: 7},
		{Schema: "app", Table: "t", Status: StatusSchemaDiffers,
			SchemaDiffs: []string{"column 1: source `id` int(11), target `id` bigint(20)"}},
	}}
}

func TestFormat(t *testing.T) {
	r := sampleReport()
	if r.Equal() {
		t.Fatal("report with differences is Equal")
	}
	out := r.String()
	for _, want := range []string{
		"TABLE", "app.users", "equal", "50000", "PRIMARY (id)",
		"app.orders: different",
		"values-differ      (shop='eu', id=2) name: 'abc' -> 'ABC'",
		"missing-on-target  (shop='eu', id=3)",
		"... more differing rows not listed",
		"app.gone: missing-on-target",
		"column 1: source `id` int(11), target `id` bigint(20)",
		"4 tables, 1 equal, 3 differing",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "app.users: equal") {
		t.Error("equal tables get no detail section")
	}
	if got := r.Table("app", "gone"); got == nil || got.SourceRows != 7 {
		t.Errorf("Table lookup: %+v", got)
	}
	if (&Report{Tables: []TableReport{{Status: StatusEqual}}}).Equal() != true {
		t.Error("all-equal report is not Equal")
	}
}

func TestJSON(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	d := back.Tables[1].Diffs[0]
	if back.Tables[1].Status != StatusDifferent || d.Kind != DiffValues || d.Columns[0].Column != "name" {
		t.Errorf("round trip: %s", b)
	}
	for _, want := range []string{`"status":"missing-on-target"`, `"kind":"values-differ"`, `"chunks_differing":1`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}

func TestFormatObjects(t *testing.T) {
	equalTable := TableReport{Schema: "app", Table: "users", Status: StatusEqual}
	for _, c := range []struct {
		name    string
		rep     Report
		equal   bool
		has     []string
		hasNot  []string
		summary string
	}{
		{"deferred is equal", Report{Tables: []TableReport{equalTable}, Objects: []ObjectReport{
			{Kind: KindTable, Schema: "app", Name: "users", Status: ObjectEqual},
			{Kind: KindTrigger, Schema: "app", Name: "users_ai", Status: ObjectDeferred}}},
			true, []string{"trigger app.users_ai  deferred-to-cutover"}, []string{"table app.users  equal"},
			"1 tables, 1 equal, 0 differing; 2 objects, 1 equal, 0 differing, 1 deferred to the cut-over"},
		{"a view differs", Report{Tables: []TableReport{equalTable}, Objects: []ObjectReport{
			{Kind: KindView, Schema: "app", Name: "v", Status: ObjectDifferent, Line: 1, Source: "select 1", Target: "select 2"}}},
			false, []string{"view app.v: different\n  line 1 of the definition\n  source: select 1\n  target: select 2\n"}, nil,
			"1 tables, 1 equal, 0 differing; 1 objects, 0 equal, 1 differing"},
		{"objects only", Report{Objects: []ObjectReport{
			{Kind: KindProcedure, Schema: "app", Name: "p", Status: ObjectError, Error: "source: denied"}}},
			false, []string{"procedure app.p: error\n  error: source: denied"}, []string{"TABLE"},
			"0 tables, 0 equal, 0 differing; 1 objects, 0 equal, 1 differing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := c.rep.String()
			if c.rep.Equal() != c.equal {
				t.Errorf("Equal() = %v", c.rep.Equal())
			}
			for _, h := range c.has {
				if !strings.Contains(out, h) {
					t.Errorf("lacks %q:\n%s", h, out)
				}
			}
			for _, h := range c.hasNot {
				if strings.Contains(out, h) {
					t.Errorf("has %q:\n%s", h, out)
				}
			}
			if got := c.rep.Summary(); got != c.summary {
				t.Errorf("summary %q, want %q", got, c.summary)
			}
		})
	}
}
