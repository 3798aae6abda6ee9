// Package statuspage serves a running stream over HTTP: /metrics (the
// Prometheus exposition it is given), /status (JSON: state, position, lag,
// throughput and worker shares over the last interval, copy progress, last
// error, a recommended worker count), /healthz (for load balancers and
// orchestrators) and / (a self-contained HTML page that polls /status).
// It owns the rates over the last interval and the health rule; it reads
// the stream through a function and must never change it, nor hold any
// state beyond the last interval's snapshots.
package statuspage

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/binlane/binlane/internal/replicate"
)

// Config says what the page shows and where it reads it.
type Config struct {
	Stream string
	// Read returns the stream's current status (required).
	Read func() replicate.Status
	// Metrics serves /metrics (nil: 404).
	Metrics http.Handler
	// Recommend returns a worker count and why (nil, or 0 and "": none;
	// the page shows "—"). It is called for each /status request, after
	// the interval was computed: Page.Interval returns it.
	Recommend func() (workers int, reason string)
	// HealthMaxLag is the lag from which /healthz fails (default 30 s).
	HealthMaxLag time.Duration
	// Window is how far back rates and shares are computed (default 10 s).
	Window time.Duration
}

// Page is the HTTP handler of one stream's status.
type Page struct {
	cfg     Config
	mux     *http.ServeMux
	sampler *sampler
}

//go:embed index.html
var assets embed.FS

// New returns the handler.
func New(cfg Config) (*Page, error) {
	if cfg.Read == nil {
		return nil, fmt.Errorf("statuspage: no Read function")
	}
	if cfg.HealthMaxLag <= 0 {
		cfg.HealthMaxLag = 30 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Second
	}
	index, err := assets.ReadFile("index.html")
	if err != nil {
		return nil, fmt.Errorf("statuspage: %w", err)
	}
	p := &Page{cfg: cfg, mux: http.NewServeMux(), sampler: &sampler{window: cfg.Window}}
	if cfg.Metrics != nil {
		p.mux.Handle("GET /metrics", cfg.Metrics)
	}
	p.mux.HandleFunc("GET /status", p.serveStatus)
	p.mux.HandleFunc("GET /healthz", p.serveHealth)
	p.mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'")
		w.Write(index)
	})
	return p, nil
}

// ServeHTTP implements http.Handler.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) { p.mux.ServeHTTP(w, r) }

// Interval returns the interval the last /status reading covered (for a
// Recommend function).
func (p *Page) Interval() Interval { return p.sampler.lastInterval() }

// Status is the JSON document of /status. Shares are parts of the
// interval (0.25: a quarter of it).
type Status struct {
	Stream  string    `json:"stream"`
	State   string    `json:"state"`
	Running bool      `json:"running"`
	At      time.Time `json:"at"`
	// Started is when the current attempt started (null before the first).
	Started    *time.Time `json:"started"`
	Position   string     `json:"position"`
	LagSeconds float64    `json:"lag_seconds"`
	Committed  uint64     `json:"committed"`
	InFlight   int64      `json:"in_flight"`
	Pending    int64      `json:"pending"`
	// IntervalSeconds is how far back the rates and shares go.
	IntervalSeconds float64    `json:"interval_seconds"`
	Throughput      Throughput `json:"throughput"`
	// DependencyWait is the transactions' waits for earlier conflicting
	// ones per worker and second of the interval (it may exceed 1).
	DependencyWait float64                  `json:"dependency_wait"`
	Workers        []Worker                 `json:"workers"`
	Copy           []replicate.CopyProgress `json:"copy"`
	LastError      *LastError               `json:"last_error"`
	Recommendation *Recommendation          `json:"recommendation"`
	Health         Health                   `json:"health"`
}

// Throughput is per second over the interval.
type Throughput struct {
	Transactions float64 `json:"transactions_per_second"`
	Rows         float64 `json:"rows_per_second"`
}

// Worker is one worker's shares of the interval and its totals. Busy,
// CommitWait, Commit and Idle add up to 1; DependencyWait sums the waits
// of the transactions the worker took and may exceed 1.
type Worker struct {
	Worker         int     `json:"worker"`
	Busy           float64 `json:"busy"`
	DependencyWait float64 `json:"dependency_wait"`
	CommitWait     float64 `json:"commit_wait"`
	Commit         float64 `json:"commit"`
	Idle           float64 `json:"idle"`
	Transactions   uint64  `json:"transactions"`
	Rows           uint64  `json:"rows"`
	Retries        uint64  `json:"retries"`
}

// LastError is the last error that failed an attempt or ended the stream.
type LastError struct {
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// Recommendation is a worker count and the reason for it.
type Recommendation struct {
	Workers int    `json:"workers"`
	Reason  string `json:"reason"`
}

// Health is what /healthz answers.
type Health struct {
	OK            bool    `json:"ok"`
	Reason        string  `json:"reason"`
	MaxLagSeconds float64 `json:"max_lag_seconds"`
}

// Read computes the status document.
func (p *Page) Read() Status {
	st := p.cfg.Read()
	now := time.Now()
	out := Status{Stream: p.cfg.Stream, State: st.State, Running: st.Running(), At: now, Position: st.Position,
		LagSeconds: st.Lag.Seconds(), Copy: st.Copy, Workers: []Worker{}}
	if out.Copy == nil {
		out.Copy = []replicate.CopyProgress{}
	}
	snap := st.Snapshot
	if !snap.At.IsZero() {
		out.At = snap.At
		started := snap.Started
		out.Started = &started
		out.Committed, out.InFlight, out.Pending = snap.Committed, snap.InFlight, snap.Pending
	}
	iv := p.sampler.next(snap)
	out.IntervalSeconds = iv.Elapsed.Seconds()
	out.Throughput = Throughput{Transactions: iv.rate(iv.Transactions), Rows: iv.rate(iv.Rows)}
	if iv.Workers > 0 {
		out.DependencyWait = iv.share(iv.DependencyWait) / float64(iv.Workers)
	}
	for i, w := range iv.PerWorker {
		ws := snap.Workers[i]
		o := Worker{Worker: i, Busy: iv.share(w.Busy), DependencyWait: iv.share(w.DependencyWait), CommitWait: iv.share(w.CommitWait),
			Commit: iv.share(w.Commit), Transactions: ws.Txns, Rows: ws.Rows, Retries: ws.Retries}
		o.Idle = max(0, 1-o.Busy-o.CommitWait-o.Commit)
		out.Workers = append(out.Workers, o)
	}
	if st.LastError != "" {
		out.LastError = &LastError{Message: st.LastError, At: st.LastErrorAt}
	}
	if p.cfg.Recommend != nil {
		if n, reason := p.cfg.Recommend(); n > 0 || reason != "" {
			out.Recommendation = &Recommendation{Workers: n, Reason: reason}
		}
	}
	out.Health = p.health(st)
	return out
}

// health is the /healthz rule: the stream runs (copying included) and its
// lag is under the bound.
func (p *Page) health(st replicate.Status) Health {
	h := Health{OK: true, Reason: "ok", MaxLagSeconds: p.cfg.HealthMaxLag.Seconds()}
	switch {
	case !st.Running():
		h.OK, h.Reason = false, fmt.Sprintf("stream %q is %s", p.cfg.Stream, st.State)
		if st.LastError != "" && (st.State == replicate.StateError || st.State == replicate.StateRestarting) {
			h.Reason += ": " + st.LastError
		}
	case st.Lag >= p.cfg.HealthMaxLag:
		h.OK, h.Reason = false, fmt.Sprintf("stream %q lags %s behind the source (limit %s)", p.cfg.Stream,
			st.Lag.Round(time.Millisecond), p.cfg.HealthMaxLag)
	}
	return h
}

func (p *Page) serveStatus(w http.ResponseWriter, _ *http.Request) {
	b, err := json.MarshalIndent(p.Read(), "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

func (p *Page) serveHealth(w http.ResponseWriter, _ *http.Request) {
	h := p.health(p.cfg.Read())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !h.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, h.Reason)
}
