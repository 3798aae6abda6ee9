// Package metrics exports a stream's counters for Prometheus: throughput,
// lag, queue depth, and per worker how busy it is, how long it waits for its
// commit turn and how often it retries — the numbers that tell how many
// workers to run — next to the Go runtime's and the process's standard
// metrics. It is the only package that imports the Prometheus client; it
// reads counters and must never change them. Serving HTTP is statuspage's.
package metrics

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/binlane/binlane/internal/streamstatus"
)

// Reading is what the collector reports at one scrape.
type Reading struct {
	Snapshot streamstatus.Snapshot // zero before the stream's first attempt
	Lag      time.Duration
	// State is the stream's state (streamstatus.State*); Restarts the
	// attempts that failed and were retried; Held whether binlane's limits
	// hold its work back now.
	State    string
	Restarts int
	Held     bool
	Copy     []CopyTable
	// Domains: MariaDB GTID domains, when the position has several.
	Domains []Domain
}

// Domain is one MariaDB GTID domain's position (the sequence number of its
// last applied GTID) and lag: each domain commits in its own order.
type Domain struct {
	Domain uint32
	Seq    uint64
	Lag    time.Duration
}

// CopyTable is one table's copy.
type CopyTable struct {
	Table          string // db.table
	Rows, Estimate int64
	Done           bool
}

// States are the values binlane_stream_state reports (1 for the current
// one, 0 for the others), so that a dashboard can show them all.
var States = []string{"starting", "copying", "running", "caught_up", "restarting", "paused", "stopped", "error"}

// Collector reports readings from a function (nil while no stream runs).
type Collector struct {
	stream string
	read   func() (Reading, bool)
	descs  map[string]*prometheus.Desc
}

// NewCollector returns a collector for one stream.
func NewCollector(stream string, read func() (Reading, bool)) *Collector {
	c := &Collector{stream: stream, read: read, descs: map[string]*prometheus.Desc{}}
	add := func(name, help string, labels ...string) {
		c.descs[name] = prometheus.NewDesc("binlane_"+name, help, append([]string{"stream"}, labels...), nil)
	}
	add("stream_state", "1 for the stream's current state, 0 for the others.", "state")
	add("restarts_total", "Attempts that failed and were retried (a lost connection, a server restart).")
	add("held", "1 while binlane's limits (--max-threads-running, --max-replica-lag) hold its work back.")
	add("copy_rows_total", "Rows copied, by table.", "table")
	add("copy_rows_estimated", "Rows the source estimated before the copy, by table.", "table")
	add("copy_tables", "Tables of the copy, by state (copying, done).", "state")
	add("committed_transactions_total", "Source transactions committed on the target.")
	add("lag_seconds", "How far the target is behind the source's commit time (0 when caught up).")
	add("domain_lag_seconds", "lag_seconds of one MariaDB GTID domain (each commits in its own order); only when the position has several domains.", "domain")
	add("domain_position", "Sequence number of the last GTID applied in one MariaDB GTID domain; only when the position has several domains.", "domain")
	add("queue_transactions", "Transactions in the scheduler, by state.", "state")
	add("window_transactions", "The bound on transactions in the scheduler (with several threads it follows those kept busy, unless --window is set).")
	add("peak_queue_transactions", "The most transactions the scheduler has held in this attempt.")
	add("lock_wait_rollbacks_total", "Later transactions rolled back to let an earlier one through (ordered-commit lock waits).")
	add("chained_batches_total", "Batches prepared while the batches they depend on applied.")
	add("rendered_ahead_batches_total", "Batches rendered while the batch before them on the same target connection committed.")
	add("round_trips_sent_ahead_total", "Round trips sent while the commit before them on the same target connection was in flight.")
	add("batches_redone_total", "Merged batches the target refused that then committed one statement at a time.")
	add("dependency_wait_seconds_total", "Time transactions spent waiting for conflicting earlier ones.")
	add("conflicts_total", "Transactions that waited for a conflicting earlier one, by table.", "table")
	add("serialized_total", "Transactions that ran alone, by reason.", "reason")
	add("worker_transactions_total", "Source transactions committed, by worker.", "worker")
	add("worker_batches_total", "Target transactions committed, by worker.", "worker")
	add("worker_rows_total", "Row changes applied, by worker.", "worker")
	add("worker_retries_total", "Batches rolled back and re-run, by worker.", "worker")
	add("worker_busy_seconds_total", "Time spent applying, by worker.", "worker")
	add("worker_commit_wait_seconds_total", "Time spent waiting for the commit turn, by worker.", "worker")
	add("worker_commit_seconds_total", "Time spent committing, by worker.", "worker")
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	r, ok := c.read()
	emit := func(name string, t prometheus.ValueType, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], t, v, append([]string{c.stream}, labels...)...)
	}
	if r.State != "" {
		for _, st := range States {
			emit("stream_state", prometheus.GaugeValue, boolValue(st == r.State), st)
		}
		emit("restarts_total", prometheus.CounterValue, float64(r.Restarts))
		emit("held", prometheus.GaugeValue, boolValue(r.Held))
	}
	if len(r.Copy) > 0 {
		done := 0
		for _, t := range r.Copy {
			emit("copy_rows_total", prometheus.CounterValue, float64(t.Rows), t.Table)
			emit("copy_rows_estimated", prometheus.GaugeValue, float64(max(t.Estimate, t.Rows)), t.Table)
			if t.Done {
				done++
			}
		}
		emit("copy_tables", prometheus.GaugeValue, float64(len(r.Copy)-done), "copying")
		emit("copy_tables", prometheus.GaugeValue, float64(done), "done")
	}
	if !ok {
		return
	}
	s := r.Snapshot
	emit("committed_transactions_total", prometheus.CounterValue, float64(s.Committed))
	emit("lag_seconds", prometheus.GaugeValue, r.Lag.Seconds())
	for _, d := range r.Domains {
		id := strconv.FormatUint(uint64(d.Domain), 10)
		emit("domain_lag_seconds", prometheus.GaugeValue, d.Lag.Seconds(), id)
		emit("domain_position", prometheus.GaugeValue, float64(d.Seq), id)
	}
	emit("queue_transactions", prometheus.GaugeValue, float64(s.InFlight-s.Pending), "dispatched")
	emit("queue_transactions", prometheus.GaugeValue, float64(s.Pending), "pending")
	if s.Window > 0 {
		emit("window_transactions", prometheus.GaugeValue, float64(s.Window))
		emit("peak_queue_transactions", prometheus.GaugeValue, float64(s.PeakInFlight))
	}
	emit("lock_wait_rollbacks_total", prometheus.CounterValue, float64(s.LockWaitKills))
	emit("chained_batches_total", prometheus.CounterValue, float64(s.Chained))
	emit("rendered_ahead_batches_total", prometheus.CounterValue, float64(s.RenderedAhead))
	emit("round_trips_sent_ahead_total", prometheus.CounterValue, float64(s.SentAhead))
	emit("batches_redone_total", prometheus.CounterValue, float64(s.RedoneOneByOne))
	emit("dependency_wait_seconds_total", prometheus.CounterValue, s.DependencyWait.Seconds())
	for table, n := range s.Conflicts {
		emit("conflicts_total", prometheus.CounterValue, float64(n), table)
	}
	for reason, n := range s.Serialized {
		emit("serialized_total", prometheus.CounterValue, float64(n), reason)
	}
	for i, w := range s.Workers {
		id := strconv.Itoa(i)
		emit("worker_transactions_total", prometheus.CounterValue, float64(w.Txns), id)
		emit("worker_batches_total", prometheus.CounterValue, float64(w.Batches), id)
		emit("worker_rows_total", prometheus.CounterValue, float64(w.Rows), id)
		emit("worker_retries_total", prometheus.CounterValue, float64(w.Retries), id)
		emit("worker_busy_seconds_total", prometheus.CounterValue, w.Busy.Seconds(), id)
		emit("worker_commit_wait_seconds_total", prometheus.CounterValue, w.CommitWait.Seconds(), id)
		emit("worker_commit_seconds_total", prometheus.CounterValue, w.Commit.Seconds(), id)
	}
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Handler serves the Prometheus text exposition of c and of the standard
// collectors: the Go runtime (go_*), the process (process_*) and the
// binary's build information (go_build_info).
func Handler(c prometheus.Collector) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	for _, col := range []prometheus.Collector{c, collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewBuildInfoCollector()} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("metrics: register collector: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}
