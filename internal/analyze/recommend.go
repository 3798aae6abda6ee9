package analyze

import (
	"fmt"
	"math"
	"time"
)

// Near is how close to the best simulated rate a worker count must come to
// be recommended: the smallest count within 10% of the best. Workers cost
// target connections, memory and commit-turn waits; a gain under 10% is
// within the model's error.
const Near = 0.9

// Recommend picks the smallest simulated worker count (writeset mode)
// whose rate is within 10% of the best, and says what limits the next
// count up.
func Recommend(rows []SimRow, g Graph) Recommendation {
	if len(rows) == 0 {
		return Recommendation{Workers: 1, Reason: "nothing was simulated"}
	}
	best := 0
	for i, r := range rows {
		if r.Writeset.TxnPerSec > rows[best].Writeset.TxnPerSec {
			best = i
		}
	}
	pick := best
	for i, r := range rows {
		if r.Writeset.TxnPerSec >= Near*rows[best].Writeset.TxnPerSec {
			pick = i
			break
		}
	}
	p, b := rows[pick], rows[best]
	// What stops the next count from paying: its own limit.
	limit := b.Writeset
	if pick+1 < len(rows) {
		limit = rows[pick+1].Writeset
	}
	if pick == len(rows)-1 && limit.Bottleneck == "workers" {
		return Recommendation{Workers: p.Workers, Reason: fmt.Sprintf(
			"%s simulate fastest (%.2fx one worker) and are still all busy: more may help", Workers(p.Workers), p.Writeset.Speedup)}
	}
	lead := fmt.Sprintf("%d workers reach %.0f%% of the best simulated rate (%d workers, %.2fx one worker)",
		p.Workers, 100*p.Writeset.TxnPerSec/b.Writeset.TxnPerSec, b.Workers, b.Writeset.Speedup)
	if pick == best {
		lead = fmt.Sprintf("%s simulate fastest (%.2fx one worker)", Workers(p.Workers), p.Writeset.Speedup)
	}
	return Recommendation{Workers: p.Workers, Reason: lead + "; beyond that " + limitText(limit.Bottleneck, g) + "."}
}

// limitText explains a bottleneck in a few words.
func limitText(b string, g Graph) string {
	switch b {
	case "commit":
		return "the target's commits, one at a time in source order, are the limit"
	case "cpu":
		return "the cores are the limit"
	case "intake":
		return "reading and decoding the binlog is the limit"
	case "workers":
		return "every worker is busy, and the gain per worker is small"
	}
	return fmt.Sprintf("transactions wait for earlier ones they conflict with (at most %.1f run at once on average)", g.Parallelism)
}

// RecommendLive recommends a worker count from a running applier's
// figures over elapsed wall time: busy, commitWait and commit summed over
// all workers (apply.WorkerStats Busy, CommitWait, Commit), and
// dependencyWait summed over transactions (apply.Stats.DependencyWait: time
// from entering the scheduler to being handed to a worker).
//
//   - Workers waiting for their commit turn 30% of the time or more: the
//     ordered commits are the limit, fewer workers suffice.
//   - Workers idle 30% or more while transactions waited on conflicts
//     longer than the workers were busy, with two or more transactions per
//     worker waiting on average (the wait summed over transactions,
//     divided by the time: Little's law): the workload is serial. A stream
//     that keeps up with its source has few transactions waiting at any
//     moment, however long each waits for the one before it to commit (the
//     demo at 300 trx/s, idle 88%, was called serial under the old
//     threshold of 0.3 per worker).
//   - Workers idle half the time: the source's rate (or the intake) is the
//     limit, fewer suffice.
//   - Busy and committing 85% of the time or more: more may help, if the
//     target has spare cores.
func RecommendLive(workers int, busy, dependencyWait, commitWait, commit, elapsed time.Duration) Recommendation {
	if workers <= 0 || elapsed <= 0 {
		return Recommendation{Workers: max(workers, 1), Reason: "no figures yet"}
	}
	capacity := float64(workers) * float64(elapsed)
	b, cw, c := float64(busy)/capacity, float64(commitWait)/capacity, float64(commit)/capacity
	idle := max(0, 1-b-cw-c)
	need := func(share float64) int { return max(1, int(math.Ceil(float64(workers)*share-1e-9))) }
	switch {
	case cw >= 0.3:
		n := min(workers, need(1-cw))
		return Recommendation{Workers: n, Reason: fmt.Sprintf(
			"workers wait for their commit turn %.0f%% of the time: the ordered commits are the limit, %d would do the same work", 100*cw, n)}
	case idle >= 0.3 && dependencyWait >= busy && float64(dependencyWait)/float64(elapsed) >= 2*float64(workers):
		n := min(workers, need(1-idle))
		return Recommendation{Workers: n, Reason: fmt.Sprintf(
			"workers are idle %.0f%% of the time while transactions wait for earlier ones they conflict with: the workload is serial, more workers will not help", 100*idle)}
	case idle >= 0.5:
		n := min(workers, need(1-idle))
		return Recommendation{Workers: n, Reason: fmt.Sprintf(
			"workers are idle %.0f%% of the time: the source's rate is the limit, %d would keep up", 100*idle, n)}
	case b+c >= 0.85:
		return Recommendation{Workers: workers * 2, Reason: fmt.Sprintf(
			"workers are busy %.0f%% of the time: more may help if the target has spare cores", 100*(b+c))}
	}
	return Recommendation{Workers: workers, Reason: fmt.Sprintf(
		"workers are busy %.0f%%, wait for their commit turn %.0f%%: the count fits", 100*(b+c), 100*cw)}
}

// Workers spells a worker count: "1 worker", "4 workers".
func Workers(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return fmt.Sprintf("%d workers", n)
}
