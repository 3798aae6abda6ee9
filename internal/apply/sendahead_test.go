package apply

import (
	"testing"

	"github.com/binlane/binlane/internal/scheduler"
)

// TestSentAheadBehindFailedCommit: with one worker, the first round trip
// of the next batch goes to the target behind the round trip that commits
// the batch before it (sendAhead). Here commits fail on the way: rows the
// target already holds in their last image make the merged REPLACE count
// short, the position update refuses, the batch is applied again
// statement by statement. Whatever was sent ahead of a failed commit must
// not apply (its guard stops it, the connection undoes it) and the batch
// it belongs to applies in its turn: the stream ends equal, with round
// trips sent ahead and batches redone.
func TestSentAheadBehindFailedCommit(t *testing.T) {
	p, start := driftPair(t, "CREATE DATABASE app", "CREATE TABLE app.h (id INT PRIMARY KEY, v INT)",
		"INSERT INTO app.h SELECT seq, 0 FROM app.seq_1_to_400")
	for i := 1; i <= 400; i++ {
		p.src.ExecT(t, "UPDATE app.h SET v = v + 1 WHERE id = "+itoa(i))
	}
	// Drift every 50 rows: each such row is already in its last image.
	// The first batch's shares a round trip with its commit (it was not
	// rendered ahead), so the second batch's first round trip is sent
	// behind a commit that fails; the others fail when their rows answer,
	// before their commit is sent.
	p.dst.ExecT(t, "UPDATE app.h SET v = 1 WHERE id % 50 = 25 OR id = 3")
	stats, err := p.replay(t, runOpts{workers: 1, maxBatch: 8, mode: scheduler.ModeWriteset, start: start})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if n := stats.SentAhead.Load(); n == 0 {
		t.Error("no round trip was sent ahead")
	}
	if n := stats.RedoneOneByOne.Load(); n < 9 {
		t.Errorf("%d batches redone one by one, want the 9 with a row in its last image", n)
	}
	t.Logf("sent ahead %d, rendered ahead %d, handed back %d, redone %d", stats.SentAhead.Load(),
		stats.RenderedAhead.Load(), stats.AheadGaveWay.Load(), stats.RedoneOneByOne.Load())
}

// TestNothingSentBehindALoad: a round trip that commits with a LOAD DATA
// LOCAL INFILE in it (a 1,500-row insert, not rendered ahead: it follows
// DDL) takes no round trip sent ahead behind it. The server reads what
// follows the statement as the file, so the next batch's rows, rendered
// ahead meanwhile, wait for the answer (it failed the stream with "the
// server asked for LOCAL INFILE ... with 1 more commands already sent").
func TestNothingSentBehindALoad(t *testing.T) {
	p := newPair(t)
	loadTable(t, p)
	for i := 1; i <= 200; i++ {
		p.src.ExecT(t, "UPDATE app.bulk SET i = i + 1 WHERE id = "+itoa(i))
	}
	loads := comLoad(t, p)
	stats, err := p.replay(t, runOpts{workers: 1, maxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	p.compare(t, "app")
	if got := comLoad(t, p) - loads; got < 1 {
		t.Errorf("%d loads on the target, want the bulk insert's", got)
	}
	if n := stats.SentAhead.Load(); n == 0 {
		t.Error("no round trip was sent ahead")
	}
}
