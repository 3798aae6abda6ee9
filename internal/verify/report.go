package verify

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"
)

// Status is the outcome for one table.
type Status string

const (
	StatusEqual         Status = "equal"
	StatusDifferent     Status = "different"         // rows differ
	StatusMissing       Status = "missing-on-target" // table only on the source
	StatusOnlyOnTarget  Status = "only-on-target"    // table only on the target
	StatusSchemaDiffers Status = "schema-differs"    // columns differ; rows not compared
	StatusError         Status = "error"             // could not be compared
)

// DiffKind is the kind of a row difference.
type DiffKind string

const (
	DiffMissing DiffKind = "missing-on-target" // row only on the source
	DiffExtra   DiffKind = "extra-on-target"   // row only on the target
	DiffValues  DiffKind = "values-differ"     // same key, different values
)

// Report is the result of a run.
type Report struct {
	Tables []TableReport `json:"tables"`
	// Objects are the definitions compared, by schema, kind and name:
	// tables (those on both sides), views, sequences, triggers, routines
	// and events.
	Objects []ObjectReport `json:"objects,omitempty"`
	Elapsed time.Duration  `json:"elapsed_ns"`
}

// TableReport is the result for one table.
type TableReport struct {
	Schema string `json:"schema"`
	Table  string `json:"table"`
	Status Status `json:"status"`
	// Key is the index the table was chunked by; empty when the table has
	// no usable unique key and was compared whole, as a multiset of rows.
	Key string `json:"key,omitempty"`
	// KeyColumns names the values of RowDiff.Key: the key's columns, or
	// every column for a table compared as a multiset.
	KeyColumns      []string `json:"key_columns,omitempty"`
	SourceRows      int64    `json:"source_rows"`
	TargetRows      int64    `json:"target_rows"`
	Chunks          int      `json:"chunks"`
	ChunksDiffering int      `json:"chunks_differing"`
	// SchemaDiffs lists column differences (StatusSchemaDiffers).
	SchemaDiffs []string `json:"schema_diffs,omitempty"`
	// Diffs lists the first differing rows in key order, at most
	// Config.MaxDiffs; MoreDiffs says whether there are more.
	Diffs     []RowDiff `json:"diffs,omitempty"`
	MoreDiffs bool      `json:"more_diffs,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// RowDiff is one differing row.
type RowDiff struct {
	Kind DiffKind `json:"kind"`
	// Key holds the row's key values as shown in reports: NULL, numbers
	// and temporals as the server prints them, text in single quotes, other
	// bytes as 0x-hex, in the
	// order of TableReport.KeyColumns.
	Key []string `json:"key"`
	// Columns lists the differing columns (DiffValues only).
	Columns []ColumnDiff `json:"columns,omitempty"`
}

// ColumnDiff is one differing column of a row.
type ColumnDiff struct {
	Column string `json:"column"`
	Source string `json:"source"`
	Target string `json:"target"`
}

// Name returns schema.table.
func (t TableReport) Name() string { return t.Schema + "." + t.Table }

// Equal reports whether the table is the same on both sides.
func (t TableReport) Equal() bool { return t.Status == StatusEqual }

// Equal reports whether every table and every object is the same on both
// sides (a trigger or event deferred to the cut-over counts as the same).
func (r *Report) Equal() bool {
	return len(r.Differing()) == 0 && len(r.DifferingObjects()) == 0
}

// DifferingObjects returns the objects that are not equal.
func (r *Report) DifferingObjects() []ObjectReport {
	var out []ObjectReport
	for _, o := range r.Objects {
		if !o.Equal() {
			out = append(out, o)
		}
	}
	return out
}

// Object returns the report of an object, or nil.
func (r *Report) Object(kind ObjectKind, schema, name string) *ObjectReport {
	for i := range r.Objects {
		if o := &r.Objects[i]; o.Kind == kind && o.Schema == schema && o.Name == name {
			return o
		}
	}
	return nil
}

// Differing returns the tables that are not equal.
func (r *Report) Differing() []TableReport {
	var out []TableReport
	for _, t := range r.Tables {
		if !t.Equal() {
			out = append(out, t)
		}
	}
	return out
}

// Table returns the report of schema.table, or nil.
func (r *Report) Table(schema, table string) *TableReport {
	for i := range r.Tables {
		if r.Tables[i].Schema == schema && r.Tables[i].Table == table {
			return &r.Tables[i]
		}
	}
	return nil
}

// Format writes a per-table summary, the differences of each table and a
// closing count.
func (r *Report) Format(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if len(r.Tables) > 0 || len(r.Objects) == 0 { // none with ScopeObjects
		fmt.Fprintln(tw, "TABLE\tSTATUS\tSOURCE ROWS\tTARGET ROWS\tCHUNKS\tDIFFERING\tKEY")
	}
	for _, t := range r.Tables {
		key := "(whole table)"
		if t.Key != "" {
			key = t.Key + " (" + strings.Join(t.KeyColumns, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", t.Name(), t.Status, t.SourceRows, t.TargetRows,
			t.Chunks, t.ChunksDiffering, key)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, t := range r.Differing() {
		fmt.Fprintf(w, "\n%s: %s\n", t.Name(), t.Status)
		if t.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", t.Error)
		}
		for _, s := range t.SchemaDiffs {
			fmt.Fprintf(w, "  %s\n", s)
		}
		for _, d := range t.Diffs {
			fmt.Fprintf(w, "  %s\n", d.format(t.KeyColumns))
		}
		if t.MoreDiffs {
			fmt.Fprintf(w, "  ... more differing rows not listed\n")
		}
	}
	if err := r.formatObjects(w); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", r.Summary())
	return err
}

// formatObjects lists the objects other than equal tables (those are in
// the table list), then the differences of each differing object.
func (r *Report) formatObjects(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	n := 0
	for _, o := range r.Objects {
		if o.Kind == KindTable && o.Equal() {
			continue
		}
		if n == 0 {
			fmt.Fprintln(tw, "\nOBJECT\tSTATUS")
		}
		n++
		fmt.Fprintf(tw, "%s\t%s\n", o.Label(), o.Status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, o := range r.DifferingObjects() {
		fmt.Fprintf(w, "\n%s: %s\n", o.Label(), o.Status)
		if o.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", o.Error)
		}
		if o.Line > 0 {
			fmt.Fprintf(w, "  line %d of the definition\n  source: %s\n  target: %s\n", o.Line, o.Source, o.Target)
		}
	}
	return nil
}

// Summary is a one-line count of the outcome.
func (r *Report) Summary() string {
	n := len(r.Differing())
	s := fmt.Sprintf("%d tables, %d equal, %d differing", len(r.Tables), len(r.Tables)-n, n)
	if len(r.Objects) > 0 {
		deferred := 0
		for _, o := range r.Objects {
			if o.Status == ObjectDeferred {
				deferred++
			}
		}
		d := len(r.DifferingObjects())
		s += fmt.Sprintf("; %d objects, %d equal, %d differing", len(r.Objects), len(r.Objects)-d-deferred, d)
		if deferred > 0 {
			s += fmt.Sprintf(", %d deferred to the cut-over", deferred)
		}
	}
	if r.Elapsed > 0 {
		s += fmt.Sprintf(" (%s)", r.Elapsed.Round(time.Millisecond))
	}
	return s
}

// String returns the formatted report.
func (r *Report) String() string {
	var b strings.Builder
	_ = r.Format(&b)
	return b.String()
}

func (d RowDiff) format(keyCols []string) string {
	parts := make([]string, len(d.Key))
	for i, v := range d.Key {
		name := "?"
		if i < len(keyCols) {
			name = keyCols[i]
		}
		parts[i] = name + "=" + v
	}
	s := fmt.Sprintf("%-18s (%s)", d.Kind, strings.Join(parts, ", "))
	for _, c := range d.Columns {
		s += fmt.Sprintf(" %s: %s -> %s;", c.Column, c.Source, c.Target)
	}
	return strings.TrimSuffix(s, ";")
}

// maxValueRunes bounds how much of a value a report shows.
const maxValueRunes = 64

// formatValue shows a value for a report: NULL, a number or temporal as
// the server prints it, text in quotes, bytes that are not printable text
// as 0x-hex; long values are cut. ENUM and SET values show as their stored
// number, BIT as an integer, FLOAT widened to DOUBLE: the forms compared.
func formatValue(c column, canon []byte) string {
	if canon == nil {
		return "NULL"
	}
	if c.encoding() != encHex {
		return string(canon)
	}
	b, err := hex.DecodeString(string(canon))
	if err != nil {
		return string(canon)
	}
	return quoteBytes(toUTF8(c.Charset, b))
}

// cp1252 maps bytes 0x80-0x9F of MySQL's latin1, which is Windows-1252
// with the five undefined bytes kept as C1 controls.
var cp1252 = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// toUTF8 converts a value's bytes from its column charset for display.
// HEX gives the bytes as stored; utf8 needs nothing, latin1 is mapped, and
// any other charset is left as bytes (shown as hex unless they happen to
// be printable UTF-8).
func toUTF8(charset string, b []byte) []byte {
	if charset != "latin1" {
		return b
	}
	out := make([]byte, 0, len(b)*2)
	for _, c := range b {
		r := rune(c)
		if c >= 0x80 && c < 0xA0 {
			r = cp1252[c-0x80]
		}
		out = utf8.AppendRune(out, r)
	}
	return out
}

func quoteBytes(b []byte) string {
	if !utf8.Valid(b) || strings.IndexFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		if len(b) > maxValueRunes/2 {
			return fmt.Sprintf("0x%X...(%d bytes)", b[:maxValueRunes/2], len(b))
		}
		return fmt.Sprintf("0x%X", b)
	}
	s, more := string(b), ""
	if n := utf8.RuneCountInString(s); n > maxValueRunes {
		s, more = string([]rune(s)[:maxValueRunes]), fmt.Sprintf("...(%d chars)", n)
	}
	return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" + more
}
