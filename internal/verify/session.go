package verify

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
)

// sessionSetup makes both servers render values the same way:
//   - time_zone UTC: TIMESTAMP values print in UTC, where no two instants
//     share a text (a local zone repeats an hour when DST ends);
//   - utf8mb4: key values come back, and go back as bounds, without loss;
//   - an empty sql_mode: no PAD_CHAR_TO_FULL_LENGTH (which changes CHAR
//     values), no ANSI_QUOTES, no Oracle-mode CONCAT;
//   - a read-only transaction mode: the server refuses any write, a second
//     guard behind the fact that verify only sends SELECTs.
var sessionSetup = []string{
	"SET SESSION time_zone = '+00:00', SESSION sql_mode = '', NAMES utf8mb4",
	"SET SESSION TRANSACTION READ ONLY",
}

// side hands out connections to one server, each set up with sessionSetup.
// They are taken from the caller's pool and, when the run ends, closed
// rather than returned to it, so the caller's pool never sees our session
// settings.
type side struct {
	name string // "source" or "target", for errors
	db   *sql.DB

	mu   sync.Mutex
	idle []*sql.Conn
	busy map[*sql.Conn]bool
}

func newSide(name string, db *sql.DB) *side {
	return &side{name: name, db: db, busy: map[*sql.Conn]bool{}}
}

// get returns an idle session or opens a new one.
func (s *side) get(ctx context.Context) (*sql.Conn, error) {
	s.mu.Lock()
	if n := len(s.idle); n > 0 {
		c := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.busy[c] = true
		s.mu.Unlock()
		return c, nil
	}
	s.mu.Unlock()
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: connect: %w", s.name, err)
	}
	for _, q := range sessionSetup {
		if _, err := c.ExecContext(ctx, q); err != nil {
			discard(c)
			return nil, fmt.Errorf("%s: %s: %w", s.name, q, err)
		}
	}
	s.mu.Lock()
	s.busy[c] = true
	s.mu.Unlock()
	return c, nil
}

// put returns a session after use. A session whose last use failed may be
// broken or mid-result, so it is closed instead.
func (s *side) put(c *sql.Conn, err error) {
	s.mu.Lock()
	delete(s.busy, c)
	if err == nil {
		s.idle = append(s.idle, c)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	discard(c)
}

// close closes every session, idle or not.
func (s *side) close() {
	s.mu.Lock()
	conns := s.idle
	for c := range s.busy {
		conns = append(conns, c)
	}
	s.idle, s.busy = nil, map[*sql.Conn]bool{}
	s.mu.Unlock()
	for _, c := range conns {
		discard(c)
	}
}

// discard closes the connection for good: returning driver.ErrBadConn from
// Raw makes database/sql drop it instead of putting it back in the pool.
func discard(c *sql.Conn) {
	_ = c.Raw(func(any) error { return driver.ErrBadConn })
	_ = c.Close()
}

// withSession runs fn on a session of s.
func (s *side) withSession(ctx context.Context, fn func(*sql.Conn) error) error {
	c, err := s.get(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	s.put(c, err)
	return err
}

// forget hands a busy session over to the caller (a pair), which closes it.
func (s *side) forget(c *sql.Conn) {
	s.mu.Lock()
	delete(s.busy, c)
	s.mu.Unlock()
}
