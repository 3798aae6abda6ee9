package position

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Owner identifies the process that runs a stream.
type Owner struct {
	Token string // host/pid/random, unique per run
	Host  string
	PID   int
	Since time.Time
}

// NewOwnerToken returns the token of a new run of this process.
func NewOwnerToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	host, _ := os.Hostname()
	if len(host) > 80 {
		host = host[:80]
	}
	return fmt.Sprintf("%s/%d/%x", host, os.Getpid(), b)
}

// ParseOwner reads a token written by NewOwnerToken.
func ParseOwner(token string) Owner {
	o := Owner{Token: token}
	parts := strings.Split(token, "/")
	if len(parts) == 3 {
		o.Host = parts[0]
		o.PID, _ = strconv.Atoi(parts[1])
	}
	return o
}

func (o Owner) String() string {
	if o.Token == "" {
		return "nobody"
	}
	s := fmt.Sprintf("host %s, pid %d", o.Host, o.PID)
	if !o.Since.IsZero() {
		s += ", since " + o.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// ErrNotOwner is matched (errors.Is) by a TakenOverError.
var ErrNotOwner = errors.New("another binlane process owns this stream")

// TakenOverError says another process runs the stream now.
type TakenOverError struct {
	Stream string
	By     Owner
}

func (e *TakenOverError) Error() string {
	return fmt.Sprintf("stream %q was taken over by another binlane process (%s); this process stopped without writing anything more",
		e.Stream, e.By)
}

func (e *TakenOverError) Is(target error) bool { return target == ErrNotOwner }

// BusyError says another live process runs the stream.
type BusyError struct {
	Stream string
	By     Owner
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("stream %q is run by another binlane process (%s): stop it first (two processes on one stream would apply transactions twice)",
		e.Stream, e.By)
}

// TakeOver makes owner the stream's owner. The caller must hold the
// stream's Lock. It waits for any transaction of a previous owner that still
// holds the stream's row (a process killed during its commit: the server
// finishes that commit), so the position read after it includes everything
// the previous owner committed, and whatever that owner still tries to
// commit afterwards fails.
func TakeOver(ctx context.Context, db *sql.DB, name, owner string) error {
	res, err := db.ExecContext(ctx, "UPDATE "+Table+" SET owner = ?, owner_since = NOW(6) WHERE name = ?", owner, name)
	if err != nil {
		return fmt.Errorf("take over stream %q: %w", name, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("take over stream %q: no such stream", name)
	}
	return nil
}

// Lock is the server-side lock that only one live process per stream can
// hold: a named lock (GET_LOCK) on a connection of its own, which the
// server releases the moment that process dies or its connection drops.
// It needs no privilege.
type Lock struct {
	conn *sql.Conn
	name string
}

// lockName fits MySQL's 64-character limit on lock names.
func lockName(stream string) string {
	n := "binlane/" + stream
	if len(n) <= 64 {
		return n
	}
	sum := sha256.Sum256([]byte(stream))
	return "binlane/" + hex.EncodeToString(sum[:16])
}

// Acquire takes the stream's lock, or returns a *BusyError naming the
// process that holds it.
func Acquire(ctx context.Context, db *sql.DB, stream string) (*Lock, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	l := &Lock{conn: conn, name: lockName(stream)}
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", l.name).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("lock stream %q: %w", stream, err)
	}
	if got.Int64 == 1 {
		return l, nil
	}
	conn.Close()
	st, ok, err := Load(ctx, db, stream)
	if err != nil {
		return nil, err
	}
	if !ok {
		st.Owner = Owner{Token: "?"}
	}
	return nil, &BusyError{Stream: stream, By: st.Owner}
}

// Check reports an error when the lock was lost (its connection broke).
func (l *Lock) Check(ctx context.Context) error {
	var mine sql.NullInt64
	err := l.conn.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) = CONNECTION_ID()", l.name).Scan(&mine)
	if err != nil {
		return fmt.Errorf("stream lock: %w", err)
	}
	if mine.Int64 != 1 {
		return errors.New("stream lock lost")
	}
	return nil
}

// Release gives the lock up.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = l.conn.ExecContext(ctx, "DO RELEASE_LOCK(?)", l.name)
	l.conn.Close()
}

// Held reports whether a live process holds the stream's lock: a stream
// whose row says running but whose lock nobody holds was left by a process
// that died.
func Held(ctx context.Context, db *sql.DB, stream string) (bool, error) {
	var held bool
	if err := db.QueryRowContext(ctx, "SELECT IS_USED_LOCK(?) IS NOT NULL", lockName(stream)).Scan(&held); err != nil {
		return false, fmt.Errorf("stream %q lock: %w", stream, err)
	}
	return held, nil
}
