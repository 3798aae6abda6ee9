package copier

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/snapshot"
	"github.com/binlane/binlane/internal/txn"
)

// readSession is how chunk reads run: text values as the table stores them
// (character_set_results binary: no conversion), TIMESTAMP in UTC like the
// applier's sessions.
const readSession = "SET SESSION character_set_results = binary, time_zone = '+00:00'"

// columns reads the columns a chunk copies (generated ones are left out:
// the target computes them), how each renders, and their types. It runs in
// the chunk's snapshot transaction: a definition changed since the
// snapshot began makes the chunk's SELECT fail (and the chunk is read
// again), so the columns always match the rows.
func columns(ctx context.Context, q schema.Querier, t *Table) ([]txn.ChunkColumn, map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COALESCE(CHARACTER_SET_NAME, ''), EXTRA
		FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, t.Schema, t.Name)
	if err != nil {
		return nil, nil, fmt.Errorf("read the columns of %s: %w", t.Quoted(), err)
	}
	defer rows.Close()
	var out []txn.ChunkColumn
	types := map[string]string{}
	for rows.Next() {
		var name, dt, cs, extra string
		if err := rows.Scan(&name, &dt, &cs, &extra); err != nil {
			return nil, nil, err
		}
		ex := strings.ToUpper(extra)
		if strings.Contains(ex, "VIRTUAL") || strings.Contains(ex, "STORED") || strings.Contains(ex, "PERSISTENT") {
			continue
		}
		dt = strings.ToLower(dt)
		types[name] = dt
		kind := renderKind(dt, cs)
		if kind == "" {
			return nil, nil, fmt.Errorf("copy %s: column %s has type %s, which binlane cannot copy yet", t.Quoted(), schema.QuoteName(name), dt)
		}
		out = append(out, txn.ChunkColumn{Name: name, Kind: kind, Charset: cs})
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(out) == 0 {
		// information_schema is not read in the snapshot: a table dropped
		// since shows no columns.
		return nil, nil, errGone
	}
	return out, types, nil
}

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
	return "" // a type binlane does not know how to copy: refused by columns
}

// selectList writes the chunk's SELECT list: FLOAT columns widened to
// DOUBLE, whose text round-trips (a FLOAT's own text is rounded to six
// digits), BIT as its bytes, INET4, INET6 and UUID in their binary form:
// a binary string is what those columns take as that form — also from a
// LOAD DATA file read in CHARACTER SET binary, where their text would not
// parse.
func selectList(cols []txn.ChunkColumn, types map[string]string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		q := schema.QuoteName(c.Name)
		switch types[c.Name] {
		case "float":
			q = "CAST(" + q + " AS DOUBLE)"
		case "inet4":
			q = "CAST(" + q + " AS BINARY(4))"
		case "inet6", "uuid":
			q = "CAST(" + q + " AS BINARY(16))"
		}
		parts[i] = q
	}
	return strings.Join(parts, ", ")
}

// keyCondition writes the condition selecting the range (lo, hi] of a
// chunking key, expanded so that the index serves it: for (a, b) > (x, y),
// a > x OR (a = x AND b > y).
func keyCondition(key []KeyColumn, r Range) (string, []any) {
	var conds []string
	var args []any
	if r.Lo != nil {
		c, a := tupleCompare(key, r.Lo, ">")
		conds, args = append(conds, c), append(args, a...)
	}
	if r.Hi != nil {
		c, a := tupleCompare(key, r.Hi, "<=")
		conds, args = append(conds, c), append(args, a...)
	}
	if len(conds) == 0 {
		return "TRUE", nil
	}
	return strings.Join(conds, " AND "), args
}

// tupleCompare writes key op k lexicographically (op is ">" or "<=").
func tupleCompare(key []KeyColumn, k Key, op string) (string, []any) {
	strict := op[:1] // ">" or "<"
	var ors []string
	var args []any
	for i := range key {
		var ands []string
		for j := 0; j < i; j++ {
			ands = append(ands, schema.QuoteName(key[j].Name)+" = ?")
			args = append(args, k[j])
		}
		last := strict
		if i == len(key)-1 {
			last = op
		}
		ands = append(ands, schema.QuoteName(key[i].Name)+" "+last+" ?")
		args = append(args, k[i])
		ors = append(ors, "("+strings.Join(ands, " AND ")+")")
	}
	return "(" + strings.Join(ors, " OR ") + ")", args
}

func keyList(key []KeyColumn) string {
	parts := make([]string, len(key))
	for i, c := range key {
		parts[i] = schema.QuoteName(c.Name)
	}
	return strings.Join(parts, ", ")
}

// boundary returns the key n rows after lo (inclusive of the n-th), or nil
// when fewer than n rows follow.
func boundary(ctx context.Context, src *sql.DB, t *Table, lo Key, n int) (Key, error) {
	cond, args := keyCondition(t.Key, Range{Lo: lo})
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s ORDER BY %s LIMIT 1 OFFSET %d",
		keyList(t.Key), t.Quoted(), cond, keyOrder(t.Key), n-1)
	vals := make([]any, len(t.Key))
	ptrs := make([]any, len(t.Key))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	err := src.QueryRowContext(ctx, q, args...).Scan(ptrs...)
	if err == sql.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("find the next chunk boundary of %s: %w", t.Quoted(), err)
	}
	return FromSQL(t.Key, vals)
}

func keyOrder(key []KeyColumn) string {
	parts := make([]string, len(key))
	for i, c := range key {
		parts[i] = schema.QuoteName(c.Name)
	}
	return strings.Join(parts, ", ")
}

// reader is a connection of its own that reads chunks, each in a
// consistent snapshot whose binlog position it knows. Starting the next
// snapshot ends the previous one (START TRANSACTION commits implicitly), so
// a chunk costs three short round trips besides its SELECT while the
// source's binlog stands still, four or five when it moved (see
// snapshot.StartAt), and never a read of the source's binlog.
//
// A reader has at most one chunk in the applier: it starts its next chunk
// once the last one committed. So --copy-workers bounds the chunks the
// target writes at once too: on the 2-core benchmark machine four apply
// workers writing chunks for two readers cost the target a fifth more CPU
// per row than two writers (InnoDB's contention) and made the copy
// slower, not faster. (It waits before it takes its next place in the
// stream, not after reading: a reader holding a place it cannot fill
// stops the stream there.)
type reader struct {
	conn    *sql.Conn
	cache   *snapshot.Cache
	pos     snapshot.Position // of the current snapshot
	written chan struct{}     // closed when the last chunk handed over committed
	// coordinateOnly: Config.ByCoordinate.
	coordinateOnly bool
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

func newReader(ctx context.Context, src *sql.DB, cache *snapshot.Cache) (*reader, error) {
	conn, err := src.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := conn.ExecContext(ctx, readSession); err != nil {
		conn.Close()
		return nil, fmt.Errorf("prepare a source session for the copy: %w", err)
	}
	return &reader{conn: conn, cache: cache}, nil
}

// snapshot starts a new consistent snapshot and reads its position.
func (r *reader) snapshot(ctx context.Context) (err error) {
	r.pos, err = snapshot.StartAt(ctx, r.conn, r.cache, r.coordinateOnly)
	return err
}

func (r *reader) close() {
	_, _ = r.conn.ExecContext(context.Background(), "ROLLBACK")
	r.conn.Close()
}

// rows reads the rows of a range in key order, calling emit with at most
// batchBytes of them at a time.
func (r *reader) rows(ctx context.Context, t *Table, cols []txn.ChunkColumn, types map[string]string, rng Range,
	batchBytes int, emit func(rows [][][]byte, bytes int) error) error {
	cond, args := "TRUE", []any(nil)
	order := ""
	if t.Key != nil {
		cond, args = keyCondition(t.Key, rng)
		order = " ORDER BY " + keyOrder(t.Key)
	}
	q := fmt.Sprintf("SELECT %s FROM %s WHERE %s%s", selectList(cols, types), t.Quoted(), cond, order)
	rows, err := r.conn.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read %s: %w", t.Quoted(), err)
	}
	defer rows.Close()
	raw := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	var batch [][][]byte
	var a arena
	size := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		row := a.row(len(cols))
		for i, v := range raw {
			if v != nil {
				row[i] = a.bytes(v)
				size += len(v)
			}
			size += 24
		}
		batch = append(batch, row)
		if size >= batchBytes {
			if err := emit(batch, size); err != nil {
				return err
			}
			batch, size, a = nil, 0, arena{}
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read %s: %w", t.Quoted(), err)
	}
	return emit(batch, size)
}

// arena holds the values of a chunk's rows in a few large blocks instead
// of an allocation per value and per row (a sysbench row is five of them):
// the copy reads millions of rows, and the garbage collector's share of
// binlane's CPU is taken from the target on a shared machine. The blocks
// live as long as the chunk.
type arena struct {
	buf  []byte
	vals [][]byte
}

const arenaBlock = 64 << 10

// bytes returns a copy of v (never nil: nil is NULL).
func (a *arena) bytes(v []byte) []byte {
	if len(v) == 0 {
		return make([]byte, 0) // no allocation
	}
	if len(v) > arenaBlock/4 {
		return append([]byte(nil), v...)
	}
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, arenaBlock)
	}
	n := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

// row returns n nil values.
func (a *arena) row(n int) [][]byte {
	if cap(a.vals)-len(a.vals) < n {
		a.vals = make([][]byte, 0, max(n, 1024))
	}
	k := len(a.vals)
	a.vals = a.vals[:k+n]
	return a.vals[k : k+n : k+n]
}
