package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/statuspage"
)

// liveRecommender turns an interval's totals (times summed over the
// workers) into a worker count and its reason: the shape of
// analyze.RecommendLive.
type liveRecommender func(workers int, busy, dependencyWait, commitWait, commit, elapsed time.Duration) (int, string)

// startStatusPage serves /metrics, /status, /healthz and the HTML page on
// addr while ctx lasts. A nil rec shows no recommendation ("—").
func startStatusPage(ctx context.Context, addr, stream string, obs *replicate.Observer, maxLag time.Duration, rec liveRecommender,
	log *slog.Logger) error {
	mh, err := metrics.Handler(metrics.NewCollector(stream, obs.Read))
	if err != nil {
		return err
	}
	var page *statuspage.Page
	var recommend func() (int, string)
	if rec != nil {
		recommend = func() (int, string) {
			iv := page.Interval()
			if iv.Elapsed <= 0 {
				return 0, ""
			}
			return rec(iv.Workers, iv.Busy, iv.DependencyWait, iv.CommitWait, iv.Commit, iv.Elapsed)
		}
	}
	page, err = statuspage.New(statuspage.Config{Stream: stream, Read: obs.Status, Metrics: mh, Recommend: recommend, HealthMaxLag: maxLag})
	if err != nil {
		return err
	}
	ln, err := statuspage.Listen(addr)
	if err != nil {
		return err
	}
	go func() {
		if err := statuspage.Serve(ctx, ln, page, log); err != nil {
			log.Error("status page stopped", "error", err)
		}
	}()
	return nil
}
