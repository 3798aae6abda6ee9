package statuspage

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/streamstatus"
)

// sampler keeps the snapshots of the last window, taken when the status is
// read (at most one a second), so that rates are over the last window
// whoever asks and however often: the oldest snapshot kept is the last one
// taken at or before the window's start.
type sampler struct {
	window time.Duration

	mu      sync.Mutex
	samples []streamstatus.Snapshot
	last    streamstatus.Interval // the interval of the last reading
}

// sampleEvery bounds how many snapshots a window holds.
const sampleEvery = time.Second

// next records cur and returns the interval from the window's start to it.
func (s *sampler) next(cur streamstatus.Snapshot) streamstatus.Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur.At.IsZero() {
		return streamstatus.Interval{}
	}
	if len(s.samples) > 0 && !s.samples[0].Started.Equal(cur.Started) {
		s.samples = s.samples[:0] // a new attempt: its counters start at 0
	}
	from := cur.At.Add(-s.window)
	for len(s.samples) > 1 && !s.samples[1].At.After(from) {
		s.samples = s.samples[1:]
	}
	var base streamstatus.Snapshot
	if len(s.samples) > 0 {
		base = s.samples[0]
	}
	if n := len(s.samples); n == 0 || cur.At.Sub(s.samples[n-1].At) >= sampleEvery {
		s.samples = append(s.samples, cur)
	}
	s.last = streamstatus.Between(base, cur)
	return s.last
}

// lastInterval returns the interval of the last reading.
func (s *sampler) lastInterval() streamstatus.Interval {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Point is one sample of the history: the lag and the throughput since
// the sample before.
type Point struct {
	At                    time.Time `json:"at"`
	State                 string    `json:"state"`
	LagSeconds            *float64  `json:"lag_seconds"`
	TransactionsPerSecond float64   `json:"transactions_per_second"`
	RowsPerSecond         float64   `json:"rows_per_second"`
}

// history is a ring of the last points: its size bounds its memory.
type history struct {
	mu     sync.Mutex
	points []Point
	next   int
	full   bool
	prev   streamstatus.Snapshot
}

func newHistory(size int) *history { return &history{points: make([]Point, max(size, 1))} }

// add records a point made from st's snapshot.
func (h *history) add(at time.Time, state string, lag *float64, snap streamstatus.Snapshot) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pt := Point{At: at.UTC(), State: state, LagSeconds: lag}
	if !snap.At.IsZero() {
		iv := streamstatus.Between(h.prev, snap)
		if !h.prev.At.IsZero() && h.prev.Started.Equal(snap.Started) {
			if d := iv.Elapsed.Seconds(); d > 0 {
				pt.TransactionsPerSecond, pt.RowsPerSecond = float64(iv.Transactions)/d, float64(iv.Rows)/d
			}
		}
		h.prev = snap
	}
	h.points[h.next] = pt
	h.next = (h.next + 1) % len(h.points)
	h.full = h.full || h.next == 0
}

// list returns the points, oldest first.
func (h *history) list() []Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.full {
		return append([]Point{}, h.points[:h.next]...)
	}
	return append(append([]Point{}, h.points[h.next:]...), h.points[:h.next]...)
}

// Run samples the history every HistoryEvery until ctx ends, so that a
// page opened later shows the last hour.
func (p *Page) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.HistoryEvery)
	defer t.Stop()
	for {
		p.sample(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (p *Page) sample(now time.Time) {
	st := p.cfg.Read()
	d := streamstatus.FromProcess(p.cfg.Stream, st, streamstatus.Interval{}, now)
	p.history.add(now, d.State, d.LagSeconds, st.Snapshot)
}

// History returns the sampled points, oldest first.
func (p *Page) History() []Point { return p.history.list() }

func (p *Page) serveHistory(w http.ResponseWriter, _ *http.Request) {
	serveJSON(w, struct {
		IntervalSeconds float64 `json:"interval_seconds"`
		Points          []Point `json:"points"`
	}{p.cfg.HistoryEvery.Seconds(), p.History()})
}
