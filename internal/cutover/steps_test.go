package cutover

import (
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/position"
)

// TestStepTable: every step is complete (a run, a description, its
// privileges, a timing, journal columns that exist in the journal's
// schema, an undo exactly when it comes before the hand-over's commit),
// the hand-over splits the table in two, and the kill points are the ones
// the crash test kills at.
func TestStepTable(t *testing.T) {
	names := map[string]bool{}
	handOver := -1
	for i, s := range cutSteps {
		if s.name == "" || names[s.name] {
			t.Errorf("step %d: name %q empty or repeated", i, s.name)
		}
		names[s.name] = true
		if s.run == nil || s.describe == nil || s.privileges == nil || s.timing == nil {
			t.Errorf("step %q: run, describe, privileges and timing are all needed", s.name)
		} else if s.timing(&Timings{}) == nil {
			t.Errorf("step %q: timing points nowhere", s.name)
		}
		if len(s.journal) == 0 {
			t.Errorf("step %q names no journal column", s.name)
		}
		for _, col := range s.journal {
			if !slices.Contains(position.CutoverColumns(), col) ||
				!regexp.MustCompile(`(?m)^\s+`+string(col)+` `).MatchString(position.CutoverDDL) {
				t.Errorf("step %q: journal column %q is not in the journal's schema", s.name, col)
			}
		}
		if s.forward == (s.undo != nil) {
			t.Errorf("step %q: forward %v but undo set %v: a step before the hand-over's commit is undone, one after is made again",
				s.name, s.forward, s.undo != nil)
		}
		if s.name == handOverStep {
			handOver = i
		}
		if s.forward != (handOver >= 0 && i > handOver) {
			t.Errorf("step %q: forward %v, but the hand-over is step %d", s.name, s.forward, handOver)
		}
	}
	if handOver < 0 {
		t.Fatalf("no step %q", handOverStep)
	}
	want := []KillPoint{{"frozen", false}, {"held", false}, {"verified", false}, {"handed over", true}, {"objects created", true}}
	if got := KillPoints(); !slices.Equal(got, want) {
		t.Errorf("KillPoints() = %v, want %v", got, want)
	}
}

// TestStepsDescribeEachStep: every step that has something to do under a
// configuration says so in the plan, in the table's order.
func TestStepsDescribeEachStep(t *testing.T) {
	f := &facts{objects: []object{{kind: kindTrigger}}, targetReadOnly: true}
	cfg := Config{Stream: "s", Freeze: FreezeReadOnly, Timeout: time.Minute, Reverse: true, ReverseStream: "s-reverse"}
	got := steps(cfg, f)
	i := 0
	for _, s := range cutSteps {
		d := s.describe(cfg, f)
		if len(d) == 0 {
			t.Errorf("step %q says nothing of a cut-over with a read-only target, a trigger and --reverse", s.name)
		}
		if i+len(d) > len(got) || !slices.Equal(got[i:i+len(d)], d) {
			t.Fatalf("the plan does not hold step %q's description in order:\n%q", s.name, got)
		}
		i += len(d)
	}
}
