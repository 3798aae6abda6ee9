package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardMetrics: the Grafana dashboard (docs/ops) is valid JSON and
// every binlane metric it queries is one the collector exports.
func TestDashboardMetrics(t *testing.T) {
	b, err := os.ReadFile("../../docs/ops/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	exported := map[string]bool{}
	ch := make(chan *prometheus.Desc, 100)
	NewCollector("s", nil).Describe(ch)
	close(ch)
	for d := range ch {
		name := regexp.MustCompile(`fqName: "([^"]+)"`).FindStringSubmatch(d.String())[1]
		exported[name] = true
	}
	used := 0
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, name := range regexp.MustCompile(`binlane_[a-z_]+`).FindAllString(tg.Expr, -1) {
				used++
				if !exported[name] {
					t.Errorf("panel %q queries %s, which binlane does not export", p.Title, name)
				}
			}
		}
	}
	for _, want := range []string{"binlane_copy_rows_total", "binlane_stream_state", "binlane_restarts_total"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	if used < 10 {
		t.Errorf("only %d metric references", used)
	}
}
