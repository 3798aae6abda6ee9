package main

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/binlane/binlane/internal/replicate"
	"github.com/binlane/binlane/internal/streamstatus"
)

// copyBars draws the copy's progress as bars on a terminal: one per table
// and one overall, with rows, rows/s and time left. Without a terminal the
// stream logs its progress every few seconds instead (text or JSON, like
// every other log line). It reads the observer and owns nothing else.
type copyBars struct {
	obs     *replicate.Observer
	out     io.Writer
	sink    *logSink
	p       *mpb.Progress
	tables  map[string]*mpb.Bar
	overall *mpb.Bar
	// throttled is why the copy waits, for the overall bar's decorator
	// (mpb draws from a goroutine of its own).
	throttled atomic.Pointer[string]
}

// onTerminal reports whether f is a terminal (bars make sense there).
func onTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// logSink is the logger's output: the terminal, or while bars are drawn
// the bars' writer, which prints each line above them instead of through
// them.
type logSink struct {
	mu   sync.Mutex
	w    io.Writer
	bars *mpb.Progress
}

func (s *logSink) Write(b []byte) (int, error) {
	s.mu.Lock()
	bars := s.bars
	s.mu.Unlock()
	if bars != nil {
		if n, err := bars.Write(b); !errors.Is(err, mpb.ErrDone) {
			return n, err
		}
	}
	return s.w.Write(b)
}

// attach sends log lines to p (nil: to the terminal again).
func (s *logSink) attach(p *mpb.Progress) {
	s.mu.Lock()
	s.bars = p
	s.mu.Unlock()
}

// showCopyBars draws bars until ctx ends or the copy is done; meanwhile
// sink's log lines go through them.
func showCopyBars(ctx context.Context, obs *replicate.Observer, out io.Writer, sink *logSink) {
	b := &copyBars{obs: obs, out: out, sink: sink, tables: map[string]*mpb.Bar{}}
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
	sum := streamstatus.SumCopy(tables)
	b.throttled.Store(&sum.Throttled)
	if b.p == nil {
		b.p = mpb.New(mpb.WithOutput(b.out), mpb.WithWidth(40), mpb.WithRefreshRate(250*time.Millisecond))
		b.sink.attach(b.p)
		b.overall = b.addBar("all tables", sum.Estimate, decor.Any(func(decor.Statistics) string {
			if why := *b.throttled.Load(); why != "" {
				return "waiting: " + why
			}
			return ""
		}, decor.WCSyncSpace))
	}
	for _, t := range tables {
		bar := b.tables[t.Table]
		if bar == nil {
			bar = b.addBar(t.Table, max(t.Estimate, t.Rows))
			b.tables[t.Table] = bar
		}
		move(bar, t.Rows, max(t.Estimate, t.Rows), t.Done) // estimates are the source's guesses
	}
	done := sum.Done == sum.Tables
	move(b.overall, sum.Rows, sum.Estimate, done)
	return done
}

// addBar adds a bar with its name, rows, rows/s and time left, and extra
// decorators after them.
func (b *copyBars) addBar(name string, total int64, extra ...decor.Decorator) *mpb.Bar {
	return b.p.AddBar(max(total, 1), mpb.PrependDecorators(decor.Name(name, decor.WCSyncSpaceR),
		decor.CountersNoUnit("%d / %d rows", decor.WCSyncSpace)),
		mpb.AppendDecorators(append([]decor.Decorator{decor.EwmaSpeed(0, "%.0f rows/s", 30, decor.WCSyncSpace),
			decor.OnComplete(decor.EwmaETA(decor.ET_STYLE_GO, 30, decor.WCSyncSpace), "done")}, extra...)...))
}

// move sets a bar to rows of total, completing it when done.
func move(bar *mpb.Bar, rows, total int64, done bool) {
	bar.SetTotal(max(total, 1), false)
	bar.EwmaSetCurrent(rows, 250*time.Millisecond)
	if done {
		bar.SetTotal(max(rows, 1), true)
	}
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
	b.sink.attach(nil)
}
