// Package statuspage serves a running stream over HTTP: /metrics (the
// Prometheus exposition it is given), /status (the stream's status
// document, package streamstatus: the schema `binlane status --json`
// prints), /healthz (alive and not in error, for supervisors), /readyz
// (caught up and not copying, for load balancers), /history (lag and
// throughput over the last hour) and / (a self-contained HTML page that
// draws them). It owns the rates over the last interval and the history
// it samples in the process; it reads the stream through a function and
// must never change it, and it keeps no state beyond the last interval's
// snapshots and the bounded history.
package statuspage

import (
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/binlane/binlane/internal/streamstatus"
)

// Config says what the page shows and where it reads it.
type Config struct {
	Stream string
	// Read returns the stream's current status (required).
	Read func() streamstatus.Status
	// Metrics serves /metrics (nil: 404).
	Metrics http.Handler
	// Recommend returns a thread count and why (nil, or 0 and "": none;
	// the page shows "—"). It is called for each /status request, after
	// the interval was computed: Page.Interval returns it.
	Recommend func() (threads int, reason string)
	// ReadyMaxLag is the lag from which /readyz fails (default 30 s).
	ReadyMaxLag time.Duration
	// Window is how far back rates and shares are computed (default 10 s).
	Window time.Duration
	// History is how far back /history goes (default 1 h), sampled every
	// HistoryEvery (default 5 s).
	History, HistoryEvery time.Duration
}

// Page is the HTTP handler of one stream's status.
type Page struct {
	cfg     Config
	mux     *http.ServeMux
	sampler *sampler
	history *history
}

//go:embed index.html
var assets embed.FS

// New returns the handler. Run samples the history.
func New(cfg Config) (*Page, error) {
	if cfg.Read == nil {
		return nil, fmt.Errorf("statuspage: no Read function")
	}
	if cfg.ReadyMaxLag <= 0 {
		cfg.ReadyMaxLag = 30 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Second
	}
	if cfg.History <= 0 {
		cfg.History = time.Hour
	}
	if cfg.HistoryEvery <= 0 {
		cfg.HistoryEvery = 5 * time.Second
	}
	index, err := assets.ReadFile("index.html")
	if err != nil {
		return nil, fmt.Errorf("statuspage: %w", err)
	}
	p := &Page{cfg: cfg, mux: http.NewServeMux(), sampler: &sampler{window: cfg.Window},
		history: newHistory(int(cfg.History / cfg.HistoryEvery))}
	if cfg.Metrics != nil {
		p.mux.Handle("GET /metrics", cfg.Metrics)
	}
	p.mux.HandleFunc("GET /status", p.serveStatus)
	p.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, streamstatus.Live(p.doc(p.cfg.Read(), streamstatus.Interval{}, time.Now())))
	})
	p.mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		probe(w, streamstatus.Ready(p.doc(p.cfg.Read(), streamstatus.Interval{}, time.Now()), p.cfg.ReadyMaxLag))
	})
	p.mux.HandleFunc("GET /history", p.serveHistory)
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
func (p *Page) Interval() streamstatus.Interval { return p.sampler.lastInterval() }

// Read computes the status document.
func (p *Page) Read() streamstatus.Stream {
	st := p.cfg.Read()
	iv := p.sampler.next(st.Snapshot)
	d := p.doc(st, iv, time.Now())
	if p.cfg.Recommend != nil {
		if n, reason := p.cfg.Recommend(); n > 0 || reason != "" {
			d.Recommendation = &streamstatus.Recommendation{Threads: n, Reason: reason}
		}
	}
	return d
}

// doc is the document of st over iv, with its health.
func (p *Page) doc(st streamstatus.Status, iv streamstatus.Interval, now time.Time) streamstatus.Stream {
	d := streamstatus.FromProcess(p.cfg.Stream, st, iv, now)
	d.Health = &streamstatus.Health{Live: streamstatus.Live(d), Ready: streamstatus.Ready(d, p.cfg.ReadyMaxLag),
		ReadyMaxLagSeconds: p.cfg.ReadyMaxLag.Seconds()}
	return d
}

func (p *Page) serveStatus(w http.ResponseWriter, _ *http.Request) {
	serveJSON(w, p.Read())
}

func serveJSON(w http.ResponseWriter, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(append(b, '\n'))
}

// probe answers a health probe: 200 and "ok", or 503 and why.
func probe(w http.ResponseWriter, pr streamstatus.Probe) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if !pr.OK {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	fmt.Fprintln(w, pr.Reason)
}
