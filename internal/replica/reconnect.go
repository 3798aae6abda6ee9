package replica

import (
	"context"

	"errors"
	"fmt"
	cbackoff "github.com/cenkalti/backoff/v5"
	"net"
	"time"
)

// stableSession is how long a session must have lasted for the next
// reconnect to start again from the shortest backoff: a source that accepts
// and drops us at once must not be hammered.
const stableSession = 10 * time.Second

// backoff is the bounded exponential wait between reconnect attempts, with
// ±20% jitter so that many replicas of one source do not retry in lockstep.
type backoff struct {
	exp *cbackoff.ExponentialBackOff
}

func newBackoff(cfg *Config) *backoff {
	b := &backoff{exp: &cbackoff.ExponentialBackOff{InitialInterval: cfg.MinBackoff, RandomizationFactor: 0.2,
		Multiplier: 2, MaxInterval: cfg.MaxBackoff}}
	b.exp.Reset()
	return b
}

// sessionEnded resets the wait after a session that had been stable.
func (b *backoff) sessionEnded(s *session) {
	if time.Since(s.started) >= stableSession {
		b.exp.Reset()
	}
}

// wait returns the delay before the next attempt.
func (b *backoff) wait() time.Duration { return b.exp.NextBackOff() }

// reconnect connects again from pos, retrying while the failures are
// retryable; it logs every attempt.
func (s *Stream) reconnect(ctx context.Context, pos Position, cause error, bo *backoff) (*session, error) {
	for attempt := 1; ; attempt++ {
		if s.cfg.MaxRetries > 0 && attempt > s.cfg.MaxRetries {
			return nil, fmt.Errorf("replica: giving up after %d reconnect attempts: %w", s.cfg.MaxRetries, cause)
		}
		delay := bo.wait()
		s.log.Warn("binlog stream: reconnecting", "attempt", attempt, "in", delay, "from", pos.String(), "error", cause)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		sess, err := connect(ctx, &s.cfg, pos, s.uuid)
		if err == nil {
			s.mu.Lock()
			s.source = *sess.info
			s.mu.Unlock()
			s.log.Info("binlog stream: reconnected", "attempt", attempt, "from", sess.start.String())
			return sess, nil
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if !retryable(err) {
			s.log.Error("binlog stream: reconnect failed for good", "error", err)
			return nil, fmt.Errorf("replica: reconnect to %s: %w", s.cfg.Addr, err)
		}
		cause = err
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
