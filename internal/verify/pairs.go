package verify

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// pairs keeps the session pairs of an online run: a source and a target
// session whose snapshots see the same source position. A pair serves many
// chunks (its snapshots stay open until the run ends); one whose use failed
// is closed, and the next task makes a new pair.
type pairs struct {
	mu   sync.Mutex
	idle [][2]*sql.Conn
	all  map[*sql.Conn]*sql.Conn // source session → its target session
}

func (p *pairs) get(ctx context.Context, r *run) (*sql.Conn, *sql.Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		pr := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return pr[0], pr[1], nil
	}
	p.mu.Unlock()
	src, err := r.src.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	tgt, err := r.tgt.get(ctx)
	if err != nil {
		r.src.put(src, err)
		return nil, nil, err
	}
	// Taken out of the sides: a pair's sessions hold snapshots, and only
	// pairs hand them out again.
	r.src.forget(src)
	r.tgt.forget(tgt)
	if err := r.cfg.Pair(ctx, src, tgt); err != nil {
		discard(src)
		discard(tgt)
		return nil, nil, fmt.Errorf("pair snapshots: %w", err)
	}
	p.mu.Lock()
	if p.all == nil {
		p.all = map[*sql.Conn]*sql.Conn{}
	}
	p.all[src] = tgt
	p.mu.Unlock()
	return src, tgt, nil
}

func (p *pairs) put(src, tgt *sql.Conn, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil {
		p.idle = append(p.idle, [2]*sql.Conn{src, tgt})
		return
	}
	delete(p.all, src)
	discard(src)
	discard(tgt)
}

func (p *pairs) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s, t := range p.all {
		discard(s)
		discard(t)
	}
	p.all, p.idle = nil, nil
}

// release gives sessions back after a task.
func (r *run) release(src, tgt *sql.Conn, err error) {
	if r.cfg.Pair != nil {
		r.pairs.put(src, tgt, err)
		return
	}
	r.src.put(src, err)
	r.tgt.put(tgt, err)
}
