package main

import (
	"strings"
	"testing"
	"time"
)

func TestCPUSummary(t *testing.T) {
	sc := scenarioResult{Spec: scenarioSpec{name: "shop"}, Backlog: 1000, Runs: []runResult{
		{Name: "binlane workers=1", Kind: "binlane", TrxPerS: 900, Elapsed: time.Second,
			CPU: cpuUse{Binlane: 20 * time.Millisecond, Target: 90 * time.Millisecond}},
		{Name: "binlane workers=4", Kind: "binlane", TrxPerS: 1000, Elapsed: time.Second,
			CPU: cpuUse{Binlane: 25 * time.Millisecond, Target: 80 * time.Millisecond, Source: 5 * time.Millisecond}},
		{Name: "mariadb serial", Kind: "mariadb", TrxPerS: 800, Elapsed: 2 * time.Second, CPU: cpuUse{Target: 100 * time.Millisecond}},
	}}
	var b strings.Builder
	cpuSummary(&b, []scenarioResult{sc})
	if want := "| shop | 100.0 | binlane workers=4 | 0.80x | 1.05x | 0.25x |"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
	b.Reset()
	cpuTable(&b, sc)
	for _, want := range []string{"| binlane workers=4 | 25.0 | 80.0 | 5.0 | 105.0 | 8% |", "| mariadb serial | 0.0 | 100.0 | 0.0 | 100.0 | 5% |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
