package position

import (
	"regexp"
	"testing"
)

// TestCutoverColumnsInDDL: every journal column the cut-over's steps can
// name is a column of CutoverDDL, and every column UpdateCutover writes is
// one of them.
func TestCutoverColumnsInDDL(t *testing.T) {
	for _, col := range CutoverColumns() {
		if !regexp.MustCompile(`(?m)^\s+` + string(col) + ` `).MatchString(CutoverDDL) {
			t.Errorf("journal column %q is not in CutoverDDL", col)
		}
	}
	known := map[CutoverColumn]bool{}
	for _, col := range CutoverColumns() {
		known[col] = true
	}
	for _, col := range updatableCutover {
		if !known[col] {
			t.Errorf("UpdateCutover writes %q, which is not in CutoverColumns", col)
		}
	}
}
