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
