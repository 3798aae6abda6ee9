// Package snapshot starts consistent snapshots on source sessions and
// reads the binlog position each one sees, as a GTID position or a binlog
// coordinate: the copy places chunks read in a snapshot at that position
// of the stream, and an online verify pairs a source snapshot with a
// target held at that (GTID) position. It owns that one query sequence (and
// its cost); it must never write.
package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/gtid"
)

// Cache remembers the GTID position of the last binlog coordinate seen.
// The server computes BINLOG_GTID_POS by reading the binlog file from its
// start up to the coordinate, which cost the source about half a second of
// CPU per call with a 500 MB binlog (the copy benchmark's source used 26.7
// CPU-s for 2M rows without the cache, 4.2 s with it); snapshots taken
// while the source writes nothing share one coordinate and so one such
// read. Safe for concurrent use; the zero value is ready.
type Cache struct {
	mu    sync.Mutex
	coord string
	pos   gtid.Set
}

func (c *Cache) get(coord string) (gtid.Set, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.coord == "" || c.coord != coord {
		return gtid.Set{}, false
	}
	return c.pos.Clone(), true
}

func (c *Cache) put(coord string, pos gtid.Set) {
	c.mu.Lock()
	c.coord, c.pos = coord, pos.Clone()
	c.mu.Unlock()
}

// Position is where a snapshot stands in the source's binlog: its GTID
// state when that was read cheaply (HasGTIDs), else only its binlog
// coordinate, which a reader of the same binlog can place just as well
// (the copy's merger does: package copier).
type Position struct {
	GTIDs    gtid.Set
	HasGTIDs bool
	File     string // binlog_snapshot_file
	Offset   uint64 // binlog_snapshot_position: a transaction boundary
}

func (p Position) String() string {
	if p.HasGTIDs {
		return p.GTIDs.String()
	}
	return fmt.Sprintf("%s:%d", p.File, p.Offset)
}

// Start begins a new consistent snapshot on conn (ending its current
// transaction) and returns the source position it sees as a GTID
// position. cache may be nil.
//
// The cheap way first (see Query.Read), up to three snapshots; then (or when
// the account lacks BINLOG MONITOR for SHOW MASTER STATUS) the server
// computes it from the coordinate, which costs a read of the binlog file
// up to it — 77.9 CPU-s of the source during a 2M-row copy under a 300
// trx/s load, before the cheap way was added. The copy uses Query, which
// never asks for that.
func Start(ctx context.Context, conn *sql.Conn, cache *Cache) (gtid.Set, error) {
	q, err := NewQuery(ctx, conn, cache, false)
	if err != nil {
		return gtid.Set{}, err
	}
	var p Position
	for try := 0; try < 3 && !p.HasGTIDs; try++ {
		if p, err = q.Begin(ctx, conn); err != nil {
			return gtid.Set{}, err
		}
	}
	if p.HasGTIDs {
		return p.GTIDs, nil
	}
	return gtidPos(ctx, conn, p.File, p.Offset, cache)
}

// Query starts snapshots in batches: the statements that start a snapshot
// and read its position go to the server in one round trip with the
// statements that read in it (Batch), and the position is read from their
// first results (Read). It costs the source no binlog read.
type Query struct {
	cache *Cache
	// coordinateOnly: the position is not looked for as a GTID state
	// (tests: the position a busy source gives).
	coordinateOnly bool
	// masterStatus: the session may read SHOW MASTER STATUS (BINLOG
	// MONITOR), which tells whether the snapshot sits at the binlog's end.
	masterStatus bool
}

// NewQuery returns the way conn starts snapshots; cache may be nil.
func NewQuery(ctx context.Context, conn *sql.Conn, cache *Cache, coordinateOnly bool) (Query, error) {
	q := Query{cache: cache, coordinateOnly: coordinateOnly}
	if !coordinateOnly {
		rows, err := conn.QueryContext(ctx, "SHOW MASTER STATUS")
		if err == nil {
			q.masterStatus = true
			rows.Close()
		}
	}
	return q, nil
}

// snapshotStatements start a snapshot and read its coordinate and the
// binlog's GTID state around it (see begin).
const (
	beforeStatement = "SELECT @@gtid_binlog_pos"
	startStatement  = "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
	coordStatement  = `SELECT f.VARIABLE_VALUE, p.VARIABLE_VALUE, @@gtid_binlog_pos
	FROM information_schema.SESSION_STATUS f, information_schema.SESSION_STATUS p
	WHERE f.VARIABLE_NAME = 'BINLOG_SNAPSHOT_FILE' AND p.VARIABLE_NAME = 'BINLOG_SNAPSHOT_POSITION'`
	endStatement = "SHOW MASTER STATUS"
)

// Batch returns the statements that begin a new snapshot (ending the
// session's current transaction) and read its position, followed by
// extra, which run in the snapshot (their results follow in order; those
// of statements that return no rows are skipped). Send it as one
// multi-statement query and hand its rows to Read.
func (q Query) Batch(extra ...string) string {
	stmts := make([]string, 0, 4+len(extra))
	if !q.coordinateOnly {
		stmts = append(stmts, beforeStatement)
	}
	stmts = append(stmts, startStatement, coordStatement)
	if q.masterStatus {
		stmts = append(stmts, endStatement)
	}
	return strings.Join(append(stmts, extra...), ";\n")
}

// Read reads a batch's snapshot position from its first result sets and
// leaves rows at the result of the first extra statement. The position is
// the GTID state when the binlog stood still around the snapshot (the GTID
// state read before it and after it is the same, and the snapshot's
// coordinate is the binlog's end) or when the cache knows the coordinate;
// else the coordinate alone (HasGTIDs unset).
func (q Query) Read(rows *sql.Rows) (Position, error) {
	p, err := q.walk(&batchSteps{res: rows, first: true})
	if err != nil {
		return Position{}, err
	}
	if !rows.NextResultSet() {
		return Position{}, fmt.Errorf("read in the snapshot: %w", resultErr(rows))
	}
	return p, nil
}

// GTIDPos asks the server for the GTID state at a binlog coordinate
// (BINLOG_GTID_POS: a read of the binlog file up to it, the cost Query
// avoids; for a rare check, not per snapshot).
func GTIDPos(ctx context.Context, conn *sql.Conn, file string, offset uint64) (gtid.Set, error) {
	return gtidPos(ctx, conn, file, offset, nil)
}

func gtidPos(ctx context.Context, conn *sql.Conn, file string, offset uint64, cache *Cache) (gtid.Set, error) {
	var t sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT BINLOG_GTID_POS(?, ?)", file, offset).Scan(&t); err != nil {
		return gtid.Set{}, fmt.Errorf("%s: %w", needBinlog, err)
	} else if !t.Valid {
		return gtid.Set{}, fmt.Errorf("%s: BINLOG_GTID_POS(%q, %d) is NULL", needBinlog, file, offset)
	}
	return parse(t.String, file+":"+strconv.FormatUint(offset, 10), cache)
}

// Begin starts a snapshot on conn and reads its position as Read does, a
// statement at a time (for connections that do not take batches). The
// snapshot stays open for the caller to read in (end it with ROLLBACK).
func (q Query) Begin(ctx context.Context, conn *sql.Conn) (Position, error) {
	return q.walk(connSteps{ctx: ctx, conn: conn})
}

// steps are the results of the statements Batch lists, in order: one
// batch's result sets (Read) or one statement at a time (Begin).
type steps interface {
	row(stmt string, dest ...any) error                 // a statement's one row
	exec(stmt string) error                             // a statement without rows
	rows(stmt string, read func(*sql.Rows) error) error // a statement's rows
}

// walk reads a snapshot's position through its statements.
func (q Query) walk(s steps) (Position, error) {
	var before string
	if !q.coordinateOnly {
		if err := s.row(beforeStatement, &before); err != nil {
			return Position{}, fmt.Errorf("read the source's binlog state: %w", err)
		}
	}
	if err := s.exec(startStatement); err != nil {
		return Position{}, fmt.Errorf("start a consistent snapshot: %w", err)
	}
	var f, o, after sql.NullString
	if err := s.row(coordStatement, &f, &o, &after); err != nil {
		// %w: a stop (context canceled) must stay recognizable as one,
		// or it hides the error that caused it.
		return Position{}, fmt.Errorf("%s: %w", needBinlog, err)
	}
	p, err := coordinate(f, o)
	if err != nil {
		return Position{}, err
	}
	end := ""
	if q.masterStatus {
		err := s.rows(endStatement, func(rows *sql.Rows) (err error) {
			end, err = binlogEnd(rows)
			return err
		})
		if err != nil {
			return Position{}, fmt.Errorf("read the binlog's end: %w", err)
		}
	}
	return q.place(p, before, after.String, end)
}

// batchSteps walks a batch's result sets (a statement without rows has
// none).
type batchSteps struct {
	res   *sql.Rows
	first bool // res stands at the first result set
}

func (b *batchSteps) row(_ string, dest ...any) error {
	err := scanOne(b.res, b.first, dest...)
	b.first = false
	return err
}

func (b *batchSteps) exec(string) error { return nil }

func (b *batchSteps) rows(_ string, read func(*sql.Rows) error) error {
	if !b.first && !b.res.NextResultSet() {
		return resultErr(b.res)
	}
	b.first = false
	return read(b.res)
}

// connSteps runs each statement on its own.
type connSteps struct {
	ctx  context.Context
	conn *sql.Conn
}

func (c connSteps) row(stmt string, dest ...any) error {
	return c.conn.QueryRowContext(c.ctx, stmt).Scan(dest...)
}

func (c connSteps) exec(stmt string) error {
	_, err := c.conn.ExecContext(c.ctx, stmt)
	return err
}

func (c connSteps) rows(stmt string, read func(*sql.Rows) error) error {
	rows, err := c.conn.QueryContext(c.ctx, stmt)
	if err != nil {
		return err
	}
	defer rows.Close()
	return read(rows)
}

// coordinate is the snapshot's binlog coordinate, from coordStatement.
func coordinate(file, offset sql.NullString) (Position, error) {
	if !file.Valid || file.String == "" {
		return Position{}, errors.New(needBinlog)
	}
	off, err := strconv.ParseUint(offset.String, 10, 64)
	if err != nil {
		return Position{}, fmt.Errorf("%s: binlog_snapshot_position %q: %v", needBinlog, offset.String, err)
	}
	return Position{File: file.String, Offset: off}, nil
}

// binlogEnd reads SHOW MASTER STATUS: the binlog's end as file:offset.
func binlogEnd(rows *sql.Rows) (string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	end := ""
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		if len(vals) >= 2 {
			end = string(vals[0]) + ":" + string(vals[1])
		}
	}
	return end, rows.Err()
}

// place gives a snapshot at coordinate p its GTID state where that is
// known cheaply: from the cache, or when the binlog stood still around the
// snapshot — the GTID state read before it and after it the same, and its
// coordinate the binlog's end, mean that no transaction was binlogged
// meanwhile and that the snapshot holds every one binlogged (the binlog is
// written before the storage engine commits, so the coordinate can lag the
// end): the snapshot is at that GTID state.
func (q Query) place(p Position, before, after, end string) (Position, error) {
	if q.coordinateOnly {
		return p, nil
	}
	coord := p.File + ":" + strconv.FormatUint(p.Offset, 10)
	if q.cache != nil {
		if pos, ok := q.cache.get(coord); ok {
			p.GTIDs, p.HasGTIDs = pos, true
			return p, nil
		}
	}
	if end == coord && after == before {
		var err error
		if p.GTIDs, err = parse(before, coord, q.cache); err != nil {
			return Position{}, err
		}
		p.HasGTIDs = true
	}
	return p, nil
}

// scanOne moves rows to its next result set (unless at the first) and
// scans its one row.
func scanOne(rows *sql.Rows, first bool, dest ...any) error {
	if !first && !rows.NextResultSet() {
		return resultErr(rows)
	}
	if !rows.Next() {
		return resultErr(rows)
	}
	return rows.Scan(dest...)
}

// resultErr is why a batch has no (more) results.
func resultErr(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		return err
	}
	return errors.New("a result is missing")
}

const needBinlog = "read the snapshot's binlog position (this needs a MariaDB source with its binlog on)"

func parse(text, coord string, cache *Cache) (gtid.Set, error) {
	pos, err := gtid.ParseSet(text)
	if err != nil {
		return gtid.Set{}, fmt.Errorf("snapshot position %q: %w", text, err)
	}
	if cache != nil {
		cache.put(coord, pos)
	}
	return pos, nil
}
