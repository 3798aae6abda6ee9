package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/streamstatus"
)

// TestSummarizeStats: a drain's notes give each worker's shares, the
// merged commit's size, and the lock-wait rollbacks when there were any
// (a slow run of several threads is often one that waited for them), and
// the batches the target applied twice when there were any.
func TestSummarizeStats(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC)
	base := streamstatus.Snapshot{Started: t0, At: t0.Add(2 * time.Second), RenderedAhead: 3,
		Workers: []streamstatus.WorkerSnapshot{
			{Txns: 300, Batches: 2, Busy: time.Second, Commit: 500 * time.Millisecond},
			{Txns: 100, Batches: 2, CommitWait: time.Second},
		}}
	cases := []struct {
		name                  string
		kills, blind          uint64
		retries, back, redone uint64
		want, absent          string
	}{
		{"no rollbacks", 0, 0, 0, 0, 0, "busy 50/0%; commit 25/0%; commit wait 0/50%; 100.0 trx per target commit; 3 of 4 batches rendered ahead", "lock-wait"},
		{"no work twice", 0, 0, 0, 0, 0, "rendered ahead", "retried"},
		{"precise and blind rollbacks", 4, 2, 0, 0, 0, "; 6 lock-wait rollbacks (2 blind)", ""},
		{"work twice", 0, 0, 5, 2, 1, "; 5 batches retried, 2 handed back, 1 redone one by one", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := base
			s.LockWaitKills, s.BlindKills = c.kills, c.blind
			s.AheadGaveWay, s.RedoneOneByOne = c.back, c.redone
			s.Workers = []streamstatus.WorkerSnapshot{base.Workers[0], base.Workers[1]}
			s.Workers[1].Retries = c.retries
			b, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			got := summarizeStats(string(b))
			if !strings.Contains(got, c.want) || c.absent != "" && strings.Contains(got, c.absent) {
				t.Fatalf("summarizeStats = %q, want %q without %q", got, c.want, c.absent)
			}
		})
	}
}
