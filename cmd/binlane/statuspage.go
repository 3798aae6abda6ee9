package main

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/analyze"
	"github.com/binlane/binlane/internal/metrics"
	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/statuspage"
	"github.com/binlane/binlane/internal/streamstatus"
)

// startStatusPage serves /metrics, /status, /healthz, /readyz, /history
// and the HTML page on addr while ctx lasts, and samples the history, in
// goroutines of g (the caller waits for them, after ending ctx). The page
// recommends a worker count from the last interval's worker times
// (analyze.RecommendLive). It returns the address it listens on.
func startStatusPage(ctx context.Context, g *errgroup.Group, addr, stream string, obs *replicate.Observer, readyMaxLag time.Duration,
	log *slog.Logger) (string, error) {
	mh, err := metrics.Handler(metrics.NewCollector(stream, obs.Read))
	if err != nil {
		return "", err
	}
	var page *statuspage.Page
	recommend := func() (int, string) {
		iv := page.Interval()
		if iv.Elapsed <= 0 {
			return 0, ""
		}
		r := recommend(iv)
		return r.Workers, r.Reason
	}
	page, err = statuspage.New(statuspage.Config{Stream: stream, Read: obs.Status, Metrics: mh, Recommend: recommend, ReadyMaxLag: readyMaxLag})
	if err != nil {
		return "", err
	}
	ln, err := statuspage.Listen(addr)
	if err != nil {
		return "", err
	}
	g.Go(func() error {
		page.Run(ctx)
		return nil
	})
	g.Go(func() error {
		// A failed status page does not stop the stream: it is logged.
		if err := statuspage.Serve(ctx, ln, page, log); err != nil {
			log.Error("status page stopped", "error", err)
		}
		return nil
	})
	return ln.Addr().String(), nil
}

// recommend judges a worker count from what the workers did over an
// interval: the status page (last 10 s), binlane status and the demo
// (the attempt so far).
func recommend(iv streamstatus.Interval) analyze.Recommendation {
	return analyze.RecommendLive(iv.Workers, iv.Busy, iv.DependencyWait, iv.CommitWait, iv.Commit, iv.Elapsed)
}
