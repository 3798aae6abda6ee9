package apply

// windowSizer sizes the scheduler's window (the transactions added and not
// committed) by the workers the stream keeps busy, from one worker's window
// up to the configured one. The window is lookahead for finding parallel
// work: four batches per busy worker (one applying, one rendered ahead, two
// filling). A backlog with no parallelism in it keeps one worker busy, the
// others idle, and a window of 4 workers held 4 times the transactions for
// nothing: order entry (non-durable, pinned, 4 workers) 139-145 MiB peak
// RSS against 67-70 with one worker's window (`--window 512`), the same 115.8 source
// transactions per target commit and 244 of 259 batches rendered ahead
// with either. Where batches are independent, every worker is busy and the
// window grows to the configured size within a few dozen batches.
//
// Pure: the coordinator feeds it and applies what it returns.
type windowSizer struct {
	perWorker, max int
	// avg is the moving average of the workers busy when one reports a
	// batch (1/16 per report: a few dozen batches, under a second of a
	// backlog, to follow a change of workload).
	avg float64
}

func newWindowSizer(perWorker, max int) *windowSizer {
	return &windowSizer{perWorker: perWorker, max: max, avg: 1}
}

// observe takes the workers holding a batch as one of them reports its
// batch, and returns the window.
func (w *windowSizer) observe(busy int) int {
	w.avg += (float64(busy) - w.avg) / 16
	return w.size()
}

// size is the window for the workers busy on average, rounded.
func (w *windowSizer) size() int { return min(w.max, max(1, int(w.avg+0.5))*w.perWorker) }
