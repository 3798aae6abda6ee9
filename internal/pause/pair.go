package pause

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/snapshot"
)

// Pairer pairs a source snapshot with a target snapshot that sees exactly
// the same source position, so that an online verify compares two equal
// points in time while the source keeps writing and the stream keeps
// running (the way Vitess VDiff does):
//
//  1. a consistent snapshot starts on the source session; its binlog
//     position P is known (package snapshot);
//  2. the running stream is asked to hold at P (an At request); it
//     applies up to P exactly and records the state paused;
//  3. a consistent snapshot starts on the target session, and the stream's
//     row read in it must show P (the position commits with the rows, so
//     the snapshot holds exactly the rows of P);
//  4. the request is withdrawn: the stream goes on while both snapshots
//     stay open for the comparison.
//
// A stream already past P (the binlog is written before the source's
// storage engine commits, so it can be a transaction ahead of a snapshot)
// holds where it is; the attempt is given up and made again with a new
// source snapshot.
//
// Safe for concurrent use: pairs are made one at a time.
type Pairer struct {
	Target *sql.DB // pause requests and the stream's row
	Stream string
	// Timeout bounds the wait for the stream to reach a position (its lag
	// must be smaller); default 2 minutes.
	Timeout time.Duration
	// Tries bounds the attempts when the stream is past the snapshot;
	// default 5.
	Tries  int
	Logger *slog.Logger

	mu    sync.Mutex
	cache snapshot.Cache
	pairs int
}

// Pairs returns how many pairs were made.
func (p *Pairer) Pairs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pairs
}

// Pair starts snapshots on src (a source session) and tgt (a target
// session) that see the same source position, and returns it.
func (p *Pairer) Pair(ctx context.Context, src, tgt *sql.Conn) (gtid.Set, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tries := p.Tries
	if tries <= 0 {
		tries = 5
	}
	for try := 1; ; try++ {
		pos, err := p.pairOnce(ctx, src, tgt)
		var passed *PassedError
		if errors.As(err, &passed) && try < tries {
			p.log().Info("stream past the source snapshot; taking a new one", "try", try, "error", err)
			continue
		}
		if err != nil {
			return gtid.Set{}, err
		}
		p.pairs++
		return pos, nil
	}
}

// Start is Pair in the shape verify.Config.Pair takes; it logs each pair.
func (p *Pairer) Start(ctx context.Context, src, tgt *sql.Conn) error {
	pos, err := p.Pair(ctx, src, tgt)
	if err == nil {
		p.log().Info("snapshots paired", "stream", p.Stream, "position", pos.String())
	}
	return err
}

func (p *Pairer) log() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

func (p *Pairer) pairOnce(ctx context.Context, src, tgt *sql.Conn) (pos gtid.Set, err error) {
	if pos, err = snapshot.Start(ctx, src, &p.cache); err != nil {
		return pos, fmt.Errorf("source: %w", err)
	}
	req := AtRequest(pos, position.ByVerify)
	if err := position.RequestPause(ctx, p.Target, p.Stream, req.Text(), req.By); err != nil {
		return pos, err
	}
	defer func() {
		clear, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, cerr := position.ClearPause(clear, p.Target, p.Stream, req.By); cerr != nil && err == nil {
			err = cerr
		}
	}()
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	if _, err := WaitHeld(ctx, p.Target, p.Stream, req, timeout); err != nil {
		if IsNotRunning(err) {
			err = fmt.Errorf("%w; or stop the source's writes and verify without --online", err)
		}
		return pos, err
	}
	if _, err := tgt.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
		return pos, fmt.Errorf("target: start a consistent snapshot: %w", err)
	}
	st, ok, err := position.Load(ctx, tgt, p.Stream)
	switch {
	case err != nil:
		return pos, fmt.Errorf("target, in the snapshot: %w", err)
	case !ok:
		return pos, fmt.Errorf("target: read stream %q in the snapshot: the target has no such stream", p.Stream)
	}
	if at, err := gtid.ParseSet(st.GTID); err != nil || !at.Equal(pos) {
		return pos, fmt.Errorf("target snapshot sees stream %q at %q, not %s: was it started by another process?", p.Stream, st.GTID, pos)
	}
	return pos, nil
}
