package txn

import (
	"context"

	"golang.org/x/sync/semaphore"
)

// Pipe carries parts from the assembler to the applier. It is bounded in
// bytes, not parts: a hundred 60 MiB transactions must not queue up in
// front of the applier's window any more than a million small ones.
type Pipe struct {
	c   chan Part
	sem *semaphore.Weighted
	max int64
}

// NewPipe returns a pipe that holds parts of up to maxBytes in total (a
// single part larger than that passes alone).
func NewPipe(maxBytes int) *Pipe {
	if maxBytes <= 0 {
		maxBytes = 32 << 20
	}
	return &Pipe{c: make(chan Part, 256), sem: semaphore.NewWeighted(int64(maxBytes)), max: int64(maxBytes)}
}

// C is where the receiver reads parts; it must call Taken for each.
func (p *Pipe) C() <-chan Part { return p.c }

func (p *Pipe) weight(part *Part) int64 { return min(int64(part.Bytes)+256, p.max) }

// Send waits for room, then hands the part over.
func (p *Pipe) Send(ctx context.Context, part Part) error {
	w := p.weight(&part)
	if err := p.sem.Acquire(ctx, w); err != nil {
		return err
	}
	select {
	case p.c <- part:
		return nil
	case <-ctx.Done():
		p.sem.Release(w)
		return ctx.Err()
	}
}

// Taken tells the pipe the receiver owns the part now (and counts it in
// its own bounds).
func (p *Pipe) Taken(part *Part) { p.sem.Release(p.weight(part)) }

// Close ends the pipe; the receiver sees the channel closed once it has
// read what is in it. Only the sender may close.
func (p *Pipe) Close() { close(p.c) }
