package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the demo end to end in short form: seed, copy into an empty
// target under load, live status, analyze, online verify, summary.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := runDemo(ctx, &out, demoFlags{live: 6 * time.Second, orders: 5000, workers: 4, copyWorkers: 2, sessions: 2, rate: 100,
		statusAddr: "127.0.0.1:0"})
	text := out.String()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, text)
	}
	for _, re := range []string{
		`seeded \d+ rows`,
		`status page: http://127\.0\.0\.1:\d+/`,
		`binlane analyze --start-gtid \S+ --stop-at-gtid \S+`,
		`(?m)^\s+16\s`, // the analysis' worker table goes up to 16
		`copied +(1[5-9]|[2-9]\d)\d{3} rows in \d+ tables`,
		`applied +\d+ source transactions`,
		`recommended +\d+ workers?: \S`,
		`and the objects a copy must not leave behind`,
		`objects +1 sequence, 1 view, 1 function, 1 procedure, 1 event copied .*[1-9]\d* invoices numbered during the load, the sequence's next value \d+ on both sides`,
		`verify +equal \(online, 5 tables, 10 objects\)`, // objects: the tables and the five others
		`(?m)^\s*procedure shop\.invoice_order\s+equal$`,
		`(?m)^\s*sequence shop\.invoice_no\s+equal$`,
		`source and target are equal`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("demo output lacks %s", re)
		}
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("demo output:\n%s", text)
	}
	if strings.Contains(text, "last error") {
		t.Errorf("the stream failed during the demo:\n%s", text)
	}
}
