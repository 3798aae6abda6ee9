package copier

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// errGone: the table was dropped after the chunk's snapshot began.
var errGone = errors.New("the table is gone")

// renderKind says how a column's text is written back.
func renderKind(dataType, charset string) string {
	switch dataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "float", "double", "year":
		return txn.KindNumber
	case "date", "datetime", "timestamp", "time":
		return txn.KindQuoted // ASCII text the column parses back
	case "inet4", "inet6", "uuid":
		return txn.KindBinary // read in their binary form (see selectList)
	case "bit":
		return txn.KindBits
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
		"geometrycollection", "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob":
		return txn.KindBinary
	case "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json":
		if charset == "" || charset == "binary" {
			return txn.KindBinary
		}
		return txn.KindText
	}
	return "" // a type binlane does not know how to copy: refused by chunkColumns
}

// chunkColumns are the columns a chunk copies, as its SELECT reads them.
type chunkColumns struct {
	cols []txn.ChunkColumn
	key  []int  // positions of the chunking key's columns
	list string // the SELECT list
}

// newChunkColumns takes the columns a chunk copies from the table's
// columns (generated ones are left out: the target computes them).
func newChunkColumns(t *Table, all []schema.Column) (*chunkColumns, error) {
	cc := &chunkColumns{}
	var list []string
	for _, c := range all {
		if c.Generated {
			continue
		}
		kind := renderKind(c.DataType, c.Charset)
		if kind == "" {
			return nil, fmt.Errorf("copy %s: column %s has type %s, which binlane cannot copy yet", t.Quoted(), sqlquote.Name(c.Name), c.DataType)
		}
		cc.cols = append(cc.cols, txn.ChunkColumn{Name: c.Name, Kind: kind, Charset: c.Charset})
		list = append(list, selectExpr(c))
	}
	if len(cc.cols) == 0 {
		// A table dropped since shows no columns.
		return nil, errGone
	}
	for _, k := range t.Key {
		pos := -1
		for i, c := range cc.cols {
			if strings.EqualFold(c.Name, k.Name) {
				pos = i
			}
		}
		if pos < 0 {
			return nil, fmt.Errorf("copy %s: the chunking key's column %s is not among the table's columns", t.Quoted(), sqlquote.Name(k.Name))
		}
		cc.key = append(cc.key, pos)
	}
	cc.list = strings.Join(list, ", ")
	return cc, nil
}

// same reports whether now, the table's columns as the batch listed them,
// are read as cc reads them: the same SELECT list, each value written back
// the same way.
func (cc *chunkColumns) same(now *chunkColumns) bool {
	return cc != nil && now.list == cc.list && slices.Equal(now.cols, cc.cols)
}

// selectExpr reads a column as a chunk copies it: FLOAT widened to DOUBLE,
// whose text round-trips (a FLOAT's own text is rounded to six digits),
// INET4, INET6 and UUID in their binary form: a binary string is what those
// columns take as that form — also from a LOAD DATA file read in CHARACTER
// SET binary, where their text would not parse.
func selectExpr(c schema.Column) string {
	q := sqlquote.Name(c.Name)
	switch c.DataType {
	case "float":
		return "CAST(" + q + " AS DOUBLE)"
	case "inet4":
		return "CAST(" + q + " AS BINARY(4))"
	case "inet6", "uuid":
		return "CAST(" + q + " AS BINARY(16))"
	}
	return q
}

// endSnapshot follows a chunk's SELECT in its round trip: the snapshot
// ends as soon as the rows are sent, instead of staying open (holding the
// table's metadata lock, which a DDL statement on the source would wait
// for, and every write after it behind it; and an old read view) while the
// chunk waits for its place and its commit.
const endSnapshot = "ROLLBACK"

// rowsQuery is the SELECT of a chunk: the rows of the range in key order,
// at most limit of them (limit 0: no limit, a whole table). Bounds are
// literals (keyrange.AppendLiteral), so the query runs in the text protocol
// with the snapshot's statements, in one round trip; the condition is
// expanded so that the index serves it: for (a, b) > (x, y),
// a > x OR (a = x AND b > y).
func rowsQuery(t *Table, cc *chunkColumns, r keyrange.Range, limit int) string {
	var b []byte
	b = append(b, "SELECT "...)
	b = append(b, cc.list...)
	b = append(b, " FROM "...)
	b = append(b, t.Quoted()...)
	if t.Key == nil {
		return string(b)
	}
	conds := 0
	if r.Lo != nil {
		b = append(b, " WHERE "...)
		b = appendCompare(b, t.Key, r.Lo, ">")
		conds++
	}
	if r.Hi != nil {
		if conds == 0 {
			b = append(b, " WHERE "...)
		} else {
			b = append(b, " AND "...)
		}
		b = appendCompare(b, t.Key, r.Hi, "<=")
	}
	b = append(b, " ORDER BY "...)
	for i, k := range t.Key {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, sqlquote.Name(k.Name)...)
	}
	if limit > 0 {
		b = fmt.Appendf(b, " LIMIT %d", limit)
	}
	return string(b)
}

// appendCompare writes key op k lexicographically (op is ">" or "<=").
func appendCompare(b []byte, key []keyrange.Column, k keyrange.Key, op string) []byte {
	strict := op[:1] // ">" or "<"
	b = append(b, '(')
	for i := range key {
		if i > 0 {
			b = append(b, " OR "...)
		}
		b = append(b, '(')
		for j := 0; j < i; j++ {
			b = append(b, sqlquote.Name(key[j].Name)...)
			b = append(b, " = "...)
			b = keyrange.AppendLiteral(b, key[j], k[j])
			b = append(b, " AND "...)
		}
		last := strict
		if i == len(key)-1 {
			last = op
		}
		b = append(b, sqlquote.Name(key[i].Name)...)
		b = append(b, ' ')
		b = append(b, last...)
		b = append(b, ' ')
		b = keyrange.AppendLiteral(b, key[i], k[i])
		b = append(b, ')')
	}
	return append(b, ')')
}

// reader is a connection of its own that reads chunks, each in a
// consistent snapshot whose binlog position it knows. Starting the next
// snapshot ends the previous one (START TRANSACTION commits implicitly).
//
// A chunk costs the source one round trip: the snapshot, its position,
// the table's columns and the chunk's SELECT are one batch of statements
// (snapshot.Batch), and the reader takes the chunk's place in the stream
// as soon as the position arrives, before its rows. The SELECT reads the
// columns the cursor knows (from the table's definition when the copy was
// listed); the batch's own column list checks them, and a chunk read with
// columns a DDL statement changed since is read again with the new ones.
// Where the binlog moves, the stream can be a transaction ahead of a new
// snapshot (see Ticket.SetPos): such a snapshot is taken again, and the
// rows it read are dropped (Stats.Behind counts it; rare, against the
// second round trip every such chunk would cost if rows came after the
// place). The boundary of a chunk is its last row (at most n rows are
// read from its lower bound), so no query looks for boundaries ahead.
//
// A reader has at most one chunk in the stream not committed: it starts
// its next chunk once the last one committed, which bounds the copy's
// memory in bytes. The chunks the target writes at once are bounded by the
// applier (apply.Config.MaxChunkWrites: on the 2-core benchmark machine
// four writers cost the target a fifth more CPU per row than two, in
// InnoDB's contention); there are more readers than that, so that a chunk
// is ready to be written while another waits for the stream to reach its
// snapshot. (A reader waits before it takes its next place in the stream,
// not after reading: a reader holding a place it cannot fill stops the
// stream.)
type reader struct {
	conn    *sql.Conn
	query   snapshot.Query
	written chan struct{} // closed when the last chunk handed over committed
	// mem holds the rows of the reader's chunk of a range: used again once
	// the chunk committed (see read).
	mem arena
	// stats count the reader's round trips to the source; trips those of
	// the chunk being read.
	stats *Stats
	trips int64
}

// roundTrip counts a round trip to the source.
func (r *reader) roundTrip() {
	r.trips++
	r.stats.RoundTrips.Add(1)
}

// waitWritten waits until the reader's last chunk committed.
func (r *reader) waitWritten(ctx context.Context) error {
	if r.written == nil {
		return nil
	}
	select {
	case <-r.written:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func newReader(ctx context.Context, src *sql.DB, cache *snapshot.Cache, coordinateOnly bool, stats *Stats) (*reader, error) {
	conn, err := src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	// By statements on the reader's connection, not as the pool's
	// parameters: the copy's pool also reads the tables' definitions,
	// which must show TIMESTAMP defaults in the server's own time zone.
	if err := dsn.CopyReadSession().Set(ctx, conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("prepare a source session for the copy: %w", err)
	}
	q, err := snapshot.NewQuery(ctx, conn, cache, coordinateOnly)
	if err != nil {
		conn.Close()
		return nil, err
	}
	stats.SetupTrips.Add(2)
	return &reader{conn: conn, query: q, stats: stats}, nil
}

// close ends the reader's snapshot and closes its physical connection: it
// is in the copy-read session (UTC, binary results), and the pool it came
// from also reads the tables' definitions, which must show TIMESTAMP
// defaults in the server's own time zone. sql.Conn.Close alone would hand
// it back to the pool as it is.
func (r *reader) close() {
	_, _ = r.conn.ExecContext(context.Background(), "ROLLBACK")
	_ = r.conn.Raw(func(any) error { return driver.ErrBadConn })
	r.conn.Close()
}

// handOff is a chunk read and placed, to be handed to the stream.
type handOff struct {
	ticket *Ticket
	parts  []*txn.Chunk // a whole table's parts not sent yet, the last one last
	state  *State
	h      *handedOver
	rd     *reader
}

// send hands the chunk over (blocking until the stream is at its place)
// and makes the reader wait for its commit before its next chunk.
func (h *handOff) send(ctx context.Context) error {
	last := h.parts[len(h.parts)-1]
	h.state.handOver(last, h.h)
	for i, c := range h.parts {
		if err := h.ticket.Send(ctx, c, i == len(h.parts)-1); err != nil {
			h.state.handOver(last, nil)
			return err
		}
	}
	h.rd.written = h.h.written
	return nil
}

// readChunk reads the cursor's next chunk in a new snapshot that has its
// place in the stream, and advances the cursor past it. A whole table's
// parts but the last are sent as they are read.
func (c *Copier) readChunk(ctx context.Context, rd *reader, cur *cursor) (*handOff, error) {
	t := cur.t
	var rng keyrange.Range
	limit := 0
	if t.Key != nil {
		rng = keyrange.Range{Lo: cur.lo, Hi: cur.gapHi()}
		limit = cur.prog.sizer.next(c.cfg.MaxChunkBytes)
	}
	start := time.Now()
	rd.trips = 0
	ticket, pos, rows, err := c.place(ctx, rd, cur, rng, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	handed := false
	defer func() {
		if !handed { // the chunk is not (all) there: let the stream go on
			ticket.GiveUp()
		}
	}()
	if !rows.NextResultSet() {
		return nil, fmt.Errorf("read %s: %w", t.Quoted(), resultErr(rows))
	}
	chunk := func(rows [][][]byte, bytes int) *txn.Chunk {
		return &txn.Chunk{Schema: t.Schema, Table: t.Name, Columns: cur.cols.cols, Rows: rows, Pos: pos.String(),
			Key: t.Key, Whole: t.Key == nil, Bytes: bytes}
	}
	// A chunk of a range is read into the reader's memory (see arena); a
	// whole table, in parts sent as they are read, into memory of its own.
	// A range's read ends at the row that reaches MaxChunkBytes: the sizer
	// asked for rows as wide as the last chunk's, and wider ones (a run of
	// 1 MiB values after 100-byte ones) must not make the chunk a multiple
	// of the bound (TestCopyChunkBytesBounded).
	mem, partBytes, stopBytes := &rd.mem, 1<<62, c.cfg.MaxChunkBytes
	if t.Key == nil {
		mem, partBytes, stopBytes = &arena{}, c.cfg.MaxChunkBytes, 1<<62
	}
	got, bytes, stopped, err := scanRows(rows, len(cur.cols.cols), mem, limit, partBytes, stopBytes, func(part [][][]byte, n int) error {
		return ticket.Send(ctx, chunk(part, n), false)
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.Quoted(), err)
	}
	rows.Close()
	readTook := time.Since(start)
	c.stats.Chunks.Add(1)
	if pos.HasGTIDs {
		c.stats.StillChunks.Add(1)
		c.stats.StillTrips.Add(rd.trips)
	}
	last := chunk(got, bytes)
	if t.Key != nil {
		// The chunk ends at its last row when the read stopped short of the
		// range's end; else at the range's end.
		hi := rng.Hi
		if stopped || len(got) == limit {
			keyVals := make([][]byte, len(cur.cols.key))
			for i, p := range cur.cols.key {
				keyVals[i] = got[len(got)-1][p]
			}
			if hi, err = keyrange.FromText(t.Key, keyVals); err != nil {
				return nil, fmt.Errorf("read %s: %w", t.Quoted(), err)
			}
		}
		last.Covers = keyrange.Range{Lo: rng.Lo, Hi: hi}
		cur.advance(hi)
	} else {
		cur.exhausted = true
	}
	if c.cfg.AfterRead != nil {
		if err := c.cfg.AfterRead(ctx, t.Schema, t.Name, last.Rows); err != nil {
			return nil, err
		}
	}
	h := &handOff{ticket: ticket, state: c.cfg.State, rd: rd, parts: []*txn.Chunk{last},
		h: &handedOver{table: t.ID(), prog: cur.prog, bytes: last.Bytes, readTook: readTook, written: make(chan struct{})}}
	handed = true
	return h, nil
}

// place starts a snapshot in which to read a chunk and takes its place in
// the stream. It sends the batch of the snapshot's statements, the table's
// columns and the chunk's SELECT; rows then stand at that SELECT's result.
// A snapshot the stream has already passed (see Ticket.SetPos), or one
// whose columns are not those the SELECT read, is begun again.
func (c *Copier) place(ctx context.Context, rd *reader, cur *cursor, rng keyrange.Range, limit int) (
	ticket *Ticket, pos snapshot.Position, rows *sql.Rows, err error) {
	t := cur.t
	if cur.cols == nil {
		if err := c.learnColumns(ctx, rd, cur); err != nil {
			return nil, pos, nil, err
		}
	}
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		if ticket, err = c.cfg.Merger.Reserve(ctx); err != nil {
			return nil, pos, nil, err
		}
		if c.cfg.BeforeRead != nil {
			c.cfg.BeforeRead(ctx, t.Schema, t.Name)
		}
		rd.roundTrip()
		rows, err = rd.conn.QueryContext(ctx, rd.query.Batch(schema.ColumnsStatement(t.Schema, t.Name),
			rowsQuery(t, cur.cols, rng, limit), endSnapshot))
		if err != nil {
			ticket.Cancel()
			return nil, pos, nil, fmt.Errorf("start a snapshot to read %s: %w", t.Quoted(), err)
		}
		pos, err = rd.query.Read(rows)
		var all []schema.Column
		if err == nil {
			if all, err = schema.ScanColumns(rows); err != nil {
				err = fmt.Errorf("read the columns of %s: %w", t.Quoted(), err)
			}
		}
		if err != nil {
			rows.Close()
			ticket.Cancel()
			return nil, pos, nil, fmt.Errorf("start a snapshot to read %s: %w", t.Quoted(), err)
		}
		ok, err := ticket.SetPos(ctx, pos)
		if err != nil {
			rows.Close()
			ticket.GiveUp()
			return nil, pos, nil, err
		}
		now, err := newChunkColumns(t, all)
		if err != nil || !cur.cols.same(now) {
			// A DDL statement changed the table's columns since they were
			// read: the batch read rows with the old ones (or failed).
			rows.Close()
			ticket.GiveUp()
			if err != nil {
				return nil, pos, nil, err
			}
			cur.cols = now
			continue
		}
		if ok {
			return ticket, pos, rows, nil
		}
		rows.Close()
		c.stats.Behind.Add(1)
		c.cfg.Logger.Debug("snapshot behind the stream: starting another", "position", pos.String())
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, pos, nil, ctx.Err()
		}
	}
}

// learnColumns reads the table's columns for a cursor that knows none (a
// table the copy's listing did not find, or one altered under a chunk's
// snapshot).
func (c *Copier) learnColumns(ctx context.Context, rd *reader, cur *cursor) error {
	rd.roundTrip()
	rows, err := rd.conn.QueryContext(ctx, schema.ColumnsStatement(cur.t.Schema, cur.t.Name))
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", cur.t.Quoted(), err)
	}
	defer rows.Close()
	all, err := schema.ScanColumns(rows)
	if err != nil {
		return fmt.Errorf("read the columns of %s: %w", cur.t.Quoted(), err)
	}
	cur.cols, err = newChunkColumns(cur.t, all)
	return err
}

// scanRows reads a chunk's rows into a's blocks (expect: the rows asked
// for, 0 if not known). Every partBytes of them go to emit (a whole table's
// earlier parts, each in blocks of its own); reading stops early (stopped)
// once the rows held reach stopBytes. It returns the rows not emitted and
// the memory they hold.
func scanRows(rows *sql.Rows, ncols int, a *arena, expect, partBytes, stopBytes int, emit func(rows [][][]byte, bytes int) error) (
	batch [][][]byte, size int, stopped bool, err error) {
	raw := make([]sql.RawBytes, ncols)
	ptrs := make([]any, ncols)
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	batch = a.batch(expect)
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, 0, false, err
		}
		row := a.row(ncols)
		for i, v := range raw {
			if v != nil {
				row[i] = a.bytes(v)
				size += len(v)
			}
			size += 24
		}
		batch = append(batch, row)
		if size >= stopBytes {
			return a.keep(batch), size, true, nil
		}
		if size >= partBytes {
			if err := emit(batch, size); err != nil {
				return nil, 0, false, err
			}
			a = &arena{}
			batch, size = nil, 0
		}
	}
	return a.keep(batch), size, false, rows.Err()
}

// resultErr is why a batch has no (more) results.
func resultErr(rows *sql.Rows) error {
	if err := rows.Err(); err != nil {
		return err
	}
	return errors.New("a result is missing")
}
