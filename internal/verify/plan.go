package verify

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/sqlquote"
)

// plan is how one table, present on both sides with the same columns, is
// compared.
type plan struct {
	ID   tableID
	Cols []column
	// Key is the chunking index; nil compares the table whole as a
	// multiset of rows.
	Key     *index
	KeyCols []column
	KeyPos  []int // positions of KeyCols in Cols
	// hints are the index hints per side (source, target): FORCE INDEX on
	// the source, and on the target when it has the same index.
	hints [2]string
}

const (
	onSource = 0
	onTarget = 1
)

func newPlan(src, tgt *tableDef) *plan {
	p := &plan{ID: src.ID, Cols: src.Columns, Key: src.key}
	if p.Key == nil {
		return p
	}
	for _, name := range p.Key.Columns {
		c, pos := src.column(name)
		p.KeyCols = append(p.KeyCols, c)
		p.KeyPos = append(p.KeyPos, pos)
	}
	// FORCE INDEX keeps the optimizer from choosing a full scan for a
	// range it misjudges; the range itself is correct with any plan.
	hint := "FORCE INDEX (" + sqlquote.Name(p.Key.Name) + ")"
	p.hints[onSource] = hint
	if tgt.hasIndex(p.Key) {
		p.hints[onTarget] = hint
	}
	return p
}

// keyNames returns the names of the columns RowDiff.Key shows.
func (p *plan) keyNames() []string {
	cols := p.KeyCols
	if p.Key == nil {
		cols = p.Cols
	}
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.Name
	}
	return out
}

func (p *plan) from(side int) string {
	s := "FROM " + p.ID.quoted()
	if p.hints[side] != "" {
		s += " " + p.hints[side]
	}
	return s
}

func where(cond string) string {
	if cond == "" {
		return ""
	}
	return " WHERE " + cond
}

// boundaryQuery finds the upper bound of the chunk after lower: the key of
// the step-th source row past it, read from the index in order.
func (p *plan) boundaryQuery(lower keyBound, step int) (string, []any) {
	cond, args := rangeWhere(p.KeyCols, lower, nil)
	return fmt.Sprintf("SELECT %s %s%s ORDER BY %s LIMIT 1 OFFSET %d",
		names(p.KeyCols), p.from(onSource), where(cond), names(p.KeyCols), step-1), args
}

// checksumQuery returns the row count and the sum of row hashes over a
// chunk (or the whole table when p.Key is nil). COALESCE turns the NULL sum
// of an empty chunk into 0.
func (p *plan) checksumQuery(side int, lower, upper keyBound) (string, []any) {
	cond, args := rangeWhere(p.KeyCols, lower, upper)
	return fmt.Sprintf("SELECT COUNT(*), COALESCE(SUM(%s), 0) %s%s",
		rowHash(p.Cols), p.from(side), where(cond)), args
}

// rowsQuery returns the canonical values of every row of a chunk, in key
// order.
func (p *plan) rowsQuery(side int, lower, upper keyBound) (string, []any) {
	cond, args := rangeWhere(p.KeyCols, lower, upper)
	return fmt.Sprintf("SELECT %s %s%s ORDER BY %s",
		canonicals(p.Cols), p.from(side), where(cond), names(p.KeyCols)), args
}

// multisetQuery returns every row of a table without a key, led by the
// MD5 of its canonical text and sorted by it as bytes, so two sides can be
// merged in one pass with bytes.Compare.
func (p *plan) multisetQuery() string {
	return fmt.Sprintf("SELECT CAST(MD5(%s) AS BINARY) AS h, %s FROM %s ORDER BY h",
		rowString(p.Cols), canonicals(p.Cols), p.ID.quoted())
}

func canonicals(cols []column) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = c.canonical()
	}
	return strings.Join(q, ", ")
}

// keyString identifies a row of a chunk by its canonical key values, which
// are plain ASCII and so never contain the NUL separator.
func (p *plan) keyString(row [][]byte) string {
	var b strings.Builder
	for _, pos := range p.KeyPos {
		b.Write(row[pos])
		b.WriteByte(0)
	}
	return b.String()
}

// keyDisplay returns the row's key values for a report.
func (p *plan) keyDisplay(row [][]byte) []string {
	out := make([]string, len(p.KeyPos))
	for i, pos := range p.KeyPos {
		out[i] = formatValue(p.Cols[pos], row[pos])
	}
	return out
}

// rowDisplay returns all values of a row for a report.
func (p *plan) rowDisplay(row [][]byte) []string {
	out := make([]string, len(p.Cols))
	for i, c := range p.Cols {
		out[i] = formatValue(c, row[i])
	}
	return out
}

// differingColumns compares two rows of canonical values; nil (NULL) and
// empty (the empty string) differ.
func (p *plan) differingColumns(src, tgt [][]byte) []ColumnDiff {
	var out []ColumnDiff
	for i, c := range p.Cols {
		if (src[i] == nil) != (tgt[i] == nil) || string(src[i]) != string(tgt[i]) {
			out = append(out, ColumnDiff{Column: c.Name, Source: formatValue(c, src[i]), Target: formatValue(c, tgt[i])})
		}
	}
	return out
}
