package replica

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/wire"
)

// Stream is one replication stream. Next must be called from one goroutine
// at a time; Close and Source may be called from any.
type Stream struct {
	cfg    Config
	log    *slog.Logger
	q      *queue
	cancel context.CancelCauseFunc
	group  *errgroup.Group
	uuid   string // MySQL replica UUID, stable across reconnects

	closeOnce sync.Once
	// startOnce starts the reader at the first Next, or keeps it from
	// starting at Close; first is the session Open connected, which only
	// the function startOnce runs touches.
	startOnce sync.Once
	first     *session
	runCtx    context.Context

	mu       sync.Mutex
	source   SourceInfo // guarded by mu; of the current connection
	consumer *Tracker   // guarded by mu; follows what Next returned
}

// Open connects to the source, checks it and asks for the binlog from
// cfg.Start. Errors about the configuration, the credentials or the source's
// settings are returned here; errors that happen once events flow
// (including error 1236 for a position the source no longer has) come from
// Next. ctx bounds the whole life of the stream, not just Open: cancelling
// it stops the stream as Close does.
//
// The events are read and decoded from the first Next on, not before:
// the reader decodes as fast as the queue takes, and on a core binlane
// shares it would otherwise delay every round trip of what its consumer
// still sets up (each waits for a time slice: a pinned start, one worker,
// reached its first transaction about 40 ms later). Meanwhile the source's
// events wait in the socket.
func Open(ctx context.Context, cfg Config) (*Stream, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Stream{cfg: cfg, log: cfg.Logger, q: newQueue(cfg.QueueBytes), uuid: newUUID()}
	sess, err := connect(ctx, &s.cfg, cfg.Start, s.uuid)
	if err != nil {
		return nil, fmt.Errorf("replica: connect to %s: %w", cfg.Addr, err)
	}
	s.source = *sess.info
	s.consumer = NewTracker(sess.start)
	s.log.Info("binlog stream started", "source", cfg.Addr, "version", sess.info.Version,
		"server_id", sess.info.ServerID, "start", sess.start.String())
	if n := RowImageNotice(sess.info.RowImage); n != "" {
		s.log.Info(n) // once per stream, not at every reconnect
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	s.cancel = cancel
	s.group, s.runCtx = errgroup.WithContext(runCtx)
	s.first = sess
	return s, nil
}

// begin starts the reader, once.
func (s *Stream) begin() {
	s.startOnce.Do(func() {
		sess := s.first
		s.first = nil
		s.group.Go(func() error { return s.run(s.runCtx, sess) })
	})
}

// Next returns the next message: binlog events in stream order (heartbeats
// included: they carry the source's current file and offset), and a
// binlog.Restart after a reconnect. It returns io.EOF at the end of a
// non-blocking stream, ErrClosed after Close, and otherwise the error that
// ended the stream (a *PositionError, a *PreflightError, a decode error...).
// Events stay valid after later calls: each has its own buffer.
func (s *Stream) Next(ctx context.Context) (binlog.Message, error) {
	s.begin()
	m, err := s.q.pop(ctx)
	if err != nil {
		return binlog.Message{}, err
	}
	if m.Restart == nil && inBody(m.Event) {
		return m, nil // the consumer's tracker ignores it
	}
	s.mu.Lock()
	if m.Restart != nil {
		s.consumer.Discard()
	} else {
		s.consumer.Observe(m.Event)
	}
	s.mu.Unlock()
	return m, nil
}

// Position returns the position after the last complete transaction Next
// has returned: where a consumer that applied everything so far resumes.
func (s *Stream) Position() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consumer.Position()
}

// Source returns what the stream learned about the source on its latest
// connection.
func (s *Stream) Source() SourceInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	info := s.source
	info.GTIDs = info.GTIDs.Clone()
	return info
}

// Close stops the stream and waits for its goroutine. Next returns
// ErrClosed afterwards. Safe to call more than once.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() {
		s.startOnce.Do(func() {
			// Never read: the session is ended here, as the reader would.
			s.first.conn.Close()
			s.endDump(s.first)
			s.first = nil
		})
		s.cancel(ErrClosed)
		s.group.Wait()
		s.q.close(ErrClosed)
	})
	return nil
}

// run is the reader goroutine: it pumps one session after another until
// the stream ends, and closes the queue with the reason.
func (s *Stream) run(ctx context.Context, sess *session) error {
	dec := binlog.NewDecoder()
	reader := NewTracker(sess.start)
	bo := newBackoff(&s.cfg)
	for {
		err := s.pump(ctx, sess, dec, reader)
		sess.conn.Close()
		switch {
		case ctx.Err() != nil:
			s.endDump(sess)
			s.q.close(context.Cause(ctx))
			return nil
		case errors.Is(err, io.EOF) && s.cfg.NonBlocking:
			s.q.close(io.EOF)
			return nil
		case !retryable(err):
			s.log.Error("binlog stream failed", "error", err)
			s.q.close(err)
			return nil
		}
		bo.sessionEnded(sess)
		reason := fmt.Sprintf("connection lost: %v", err)
		if sess, err = s.reconnect(ctx, reader.Position(), err, bo); err != nil {
			s.q.close(err)
			return nil
		}
		dec.Reset()
		reader = NewTracker(sess.start)
		if err := s.q.push(ctx, binlog.Message{Restart: &binlog.Restart{Reason: reason}}, 0); err != nil {
			s.q.close(err)
			return nil
		}
	}
}

// endDumpTimeout bounds endDump: a stream that stops must not wait long
// for a source it no longer needs.
const endDumpTimeout = 2 * time.Second

// endDump ends the source's dump thread of a session the stream closed.
// The thread does not read from its connection while it waits for new
// binlog events, so it outlives the closed connection until a write to it
// fails; a replica that then registers with the same server_id (binlane
// started again, with the same stream name) waits about 100 ms for the
// source to kill it (measured on MariaDB 10.11: the first transaction
// applied 105 ms later than with another server_id). An account may kill
// its own connections. Only a dump thread of the same server (its
// server_id) under the same connection id is killed: behind a proxy the
// new connection may reach another server, where the id names another
// connection. Best effort: the source ends the thread anyway.
func (s *Stream) endDump(sess *session) {
	if sess.info == nil || sess.info.ConnectionID == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), endDumpTimeout)
	defer cancel()
	err := s.killDump(ctx, sess.info)
	if err != nil && !wire.IsServerError(err, wire.ErrCodeNoSuchThread) {
		s.log.Debug("could not end the source's dump thread of the closed stream", "connection", sess.info.ConnectionID, "error", err)
	}
}

func (s *Stream) killDump(ctx context.Context, info *SourceInfo) error {
	c, err := dial(ctx, &s.cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Query(ctx, fmt.Sprintf("SELECT @@server_id, COUNT(*) FROM information_schema.PROCESSLIST "+
		"WHERE ID = %d AND COMMAND LIKE 'Binlog Dump%%'", info.ConnectionID))
	if err != nil {
		return err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 2 || res.Rows[0][0] == nil || res.Rows[0][1] == nil ||
		*res.Rows[0][0] != strconv.FormatUint(uint64(info.ServerID), 10) || *res.Rows[0][1] != "1" {
		return nil // another server, or the thread is gone
	}
	return c.Exec(ctx, fmt.Sprintf("KILL CONNECTION %d", info.ConnectionID))
}

// pump reads, decodes and queues events until the session fails.
func (s *Stream) pump(ctx context.Context, sess *session, dec *binlog.Decoder, t *Tracker) error {
	stop := context.AfterFunc(ctx, func() { sess.conn.Close() })
	defer stop()
	if !sess.start.GTIDMode {
		dec.SetPosition(sess.start.File, sess.start.Pos)
	}
	timeout := s.cfg.readTimeout()
	// A watchdog, not a read deadline per event (which costs a clock read
	// and a timer update per event): it closes the connection when no
	// event arrived for the timeout while the pump waited for one. Time
	// the pump spends handing an event to a full queue (an applier behind,
	// a transaction sent in parts) is not the source's silence: it sent
	// what it had, and its next bytes wait in the socket.
	var progress atomic.Uint64
	var timedOut atomic.Bool
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go watchdog(watchCtx, timeout, &progress, &s.q.blocked, func() {
		timedOut.Store(true)
		sess.conn.Close()
	})
	for {
		raw, err := sess.conn.ReadEvent()
		if err != nil {
			if timedOut.Load() || isTimeout(err) {
				return fmt.Errorf("nothing from the source for %s (heartbeat period %s): connection presumed dead: %w",
					timeout, s.cfg.HeartbeatPeriod, err)
			}
			if errors.Is(err, io.EOF) && !s.cfg.NonBlocking {
				// MariaDB ends a blocking dump this way when it shuts down.
				return fmt.Errorf("the source ended the dump (shutting down?): %w", err)
			}
			return s.positionError(err, sess.start)
		}
		progress.Add(1)
		ev, err := dec.Decode(raw)
		if err != nil {
			return err
		}
		if err := refuseTagged(ev); err != nil {
			return err
		}
		t.Observe(ev)
		if err := s.q.push(ctx, binlog.Message{Event: ev}, len(raw)); err != nil {
			return err
		}
	}
}

// watchdog calls dead when progress has not moved for timeout, counting
// only the time the pump was not blocked at the queue's bound (blocked).
func watchdog(ctx context.Context, timeout time.Duration, progress *atomic.Uint64, blocked *atomic.Bool, dead func()) {
	tick := time.NewTicker(max(timeout/4, 10*time.Millisecond))
	defer tick.Stop()
	last, since := progress.Load(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if p := progress.Load(); p != last || blocked.Load() {
				last, since = p, now
			} else if now.Sub(since) >= timeout {
				dead()
				return
			}
		}
	}
}

// positionError turns error 1236 into a PositionError naming what was asked.
func (s *Stream) positionError(err error, start Position) error {
	var se *wire.ServerError
	if errors.As(err, &se) && se.Code == wire.ErrCodeMasterFatal {
		return &PositionError{Requested: start, Err: se}
	}
	return err
}
