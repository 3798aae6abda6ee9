package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/binlane/binlane/internal/replicate"
)

// copyBars draws the copy's progress as bars on a terminal: one per table
// and one overall, with rows, rows/s and time left. Without a terminal the
// stream logs its progress every few seconds instead (text or JSON, like
// every other log line). It reads the observer and owns nothing else.
type copyBars struct {
	obs     *replicate.Observer
	out     io.Writer
	p       *mpb.Progress
	tables  map[string]*mpb.Bar
	overall *mpb.Bar
}

// onTerminal reports whether f is a terminal (bars make sense there).
func onTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// showCopyBars draws bars until ctx ends or the copy is done.
func showCopyBars(ctx context.Context, obs *replicate.Observer, out io.Writer) {
	b := &copyBars{obs: obs, out: out, tables: map[string]*mpb.Bar{}}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	defer b.stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if b.update() {
			return
		}
	}
}

// update moves the bars; true once every table is copied.
func (b *copyBars) update() bool {
	tables := b.obs.Copy()
	if len(tables) == 0 {
		return false
	}
	if b.p == nil {
		b.p = mpb.New(mpb.WithOutput(b.out), mpb.WithWidth(40), mpb.WithRefreshRate(250*time.Millisecond))
		var est int64
		for _, t := range tables {
			est += max(t.Estimate, 1)
		}
		b.overall = b.p.AddBar(est, mpb.PrependDecorators(decor.Name("all tables", decor.WCSyncSpaceR),
			decor.CountersNoUnit("%d / %d rows", decor.WCSyncSpace)),
			mpb.AppendDecorators(decor.EwmaSpeed(0, "%.0f rows/s", 30, decor.WCSyncSpace),
				decor.OnComplete(decor.EwmaETA(decor.ET_STYLE_GO, 30, decor.WCSyncSpace), "done")))
	}
	var rows, est int64
	done := true
	for _, t := range tables {
		bar := b.tables[t.Table]
		if bar == nil {
			bar = b.p.AddBar(max(t.Estimate, 1), mpb.PrependDecorators(decor.Name(t.Table, decor.WCSyncSpaceR),
				decor.CountersNoUnit("%d / %d", decor.WCSyncSpace)),
				mpb.AppendDecorators(decor.EwmaSpeed(0, "%.0f rows/s", 30, decor.WCSyncSpace),
					decor.OnComplete(decor.EwmaETA(decor.ET_STYLE_GO, 30, decor.WCSyncSpace), "done")))
			b.tables[t.Table] = bar
		}
		total := max(t.Estimate, t.Rows, 1) // estimates are the source's guesses
		bar.SetTotal(total, false)
		bar.EwmaSetCurrent(t.Rows, 250*time.Millisecond)
		if t.Done {
			bar.SetTotal(max(t.Rows, 1), true)
		}
		rows, est = rows+t.Rows, est+total
		done = done && t.Done
	}
	b.overall.SetTotal(est, false)
	b.overall.EwmaSetCurrent(rows, 250*time.Millisecond)
	if done {
		b.overall.SetTotal(max(rows, 1), true)
	}
	return done
}

func (b *copyBars) stop() {
	if b.p == nil {
		return
	}
	for _, bar := range b.tables {
		bar.Abort(false)
	}
	b.overall.Abort(false)
	b.p.Wait()
}
