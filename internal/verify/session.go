package verify

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"

	"github.com/binlane/binlane/internal/dsn"
)

// side hands out connections to one server, each in the verify session
// (dsn.VerifySession: both servers render values the same way, and refuse
// writes). They are taken from the caller's pool, which other roles share
// (the cut-over's), so the session is set by statements, not by the pool's
// parameters; when the run ends they are closed rather than returned to
// it, so the caller's pool never sees the session.
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
	if err := dsn.VerifySession().Set(ctx, c); err != nil {
		discard(c)
		return nil, fmt.Errorf("%s: %w", s.name, err)
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
