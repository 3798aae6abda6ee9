package verify

import (
	"bytes"
	"context"
	"database/sql"
	"sort"

	"golang.org/x/sync/errgroup"
)

// diffKeyed lists the differing rows of a chunk whose checksums differ. The
// source's rows are held in memory (at most about ChunkRows of them, since
// the source's rows chose the bounds); the target's, which may be any
// number, are streamed past them. Rows are matched by the bytes of their
// key, so a key that differs only in case is a missing row plus an extra
// one. It returns the first limit differences in key order and whether
// there were more.
func diffKeyed(ctx context.Context, src, tgt *sql.Conn, p *plan, c chunk, limit int) ([]RowDiff, bool, error) {
	type found struct {
		pos int // 2*source row index; extras get the odd slot after the last matched row
		d   RowDiff
	}
	q, args := p.rowsQuery(onSource, c.lower, c.upper)
	var srcRows [][][]byte
	if err := scanRows(ctx, src, q, args, len(p.Cols), func(row [][]byte) {
		srcRows = append(srcRows, row)
	}); err != nil {
		return nil, false, sideErr("source", "read rows", err)
	}
	byKey := make(map[string]int, len(srcRows))
	for i, row := range srcRows {
		byKey[p.keyString(row)] = i
	}
	matched := make([]bool, len(srcRows))
	var out []found
	extras, last := 0, -1
	q, args = p.rowsQuery(onTarget, c.lower, c.upper)
	err := scanRows(ctx, tgt, q, args, len(p.Cols), func(row [][]byte) {
		if i, ok := byKey[p.keyString(row)]; ok && !matched[i] {
			matched[i], last = true, i
			if cols := p.differingColumns(srcRows[i], row); cols != nil {
				out = append(out, found{2 * i, RowDiff{Kind: DiffValues, Key: p.keyDisplay(row), Columns: cols}})
			}
			return
		}
		// Extras arrive in key order, so keeping the first limit keeps
		// the ones that sort first.
		if extras++; extras <= limit {
			out = append(out, found{2*last + 1, RowDiff{Kind: DiffExtra, Key: p.keyDisplay(row)}})
		}
	})
	if err != nil {
		return nil, false, sideErr("target", "read rows", err)
	}
	for i, row := range srcRows {
		if !matched[i] {
			out = append(out, found{2 * i, RowDiff{Kind: DiffMissing, Key: p.keyDisplay(row)}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].pos < out[j].pos })
	more := extras > limit || len(out) > limit
	diffs := make([]RowDiff, 0, min(len(out), limit))
	for _, f := range out[:min(len(out), limit)] {
		diffs = append(diffs, f.d)
	}
	return diffs, more, nil
}

// diffMultiset lists the differing rows of a table without a usable key.
// Each side returns its rows sorted by the MD5 of their canonical text, so
// one merge pass pairs equal rows, duplicates included: a row the source
// has three times and the target twice is one missing row. Memory stays
// constant; each server sorts its own table.
func diffMultiset(ctx context.Context, src, tgt *sql.Conn, p *plan, limit int) ([]RowDiff, bool, error) {
	q := p.multisetQuery()
	var sr, tr *sql.Rows
	// Not errgroup.WithContext: its context ends when Wait returns, and the
	// driver kills a connection whose query context ends mid-result.
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var g errgroup.Group
	g.Go(func() (err error) { sr, err = src.QueryContext(qctx, q); return sideErr("source", "read rows", err) })
	g.Go(func() (err error) { tr, err = tgt.QueryContext(qctx, q); return sideErr("target", "read rows", err) })
	err := g.Wait()
	for _, r := range []*sql.Rows{sr, tr} {
		if r != nil {
			defer r.Close()
		}
	}
	if err != nil {
		cancel() // stop the other side's sort
		return nil, false, err
	}
	n := len(p.Cols) + 1
	s, sok, err := nextRow(sr, n)
	if err != nil {
		return nil, false, sideErr("source", "read rows", err)
	}
	t, tok, err := nextRow(tr, n)
	if err != nil {
		return nil, false, sideErr("target", "read rows", err)
	}
	var diffs []RowDiff
	total := 0
	add := func(kind DiffKind, row [][]byte) {
		if total++; total <= limit {
			diffs = append(diffs, RowDiff{Kind: kind, Key: p.rowDisplay(row[1:])})
		}
	}
	for (sok || tok) && err == nil {
		cmp := 0
		switch {
		case !tok:
			cmp = -1
		case !sok:
			cmp = 1
		default:
			cmp = bytes.Compare(s[0], t[0])
		}
		if cmp < 0 {
			add(DiffMissing, s)
		} else if cmp > 0 {
			add(DiffExtra, t)
		}
		if cmp <= 0 {
			if s, sok, err = nextRow(sr, n); err != nil {
				err = sideErr("source", "read rows", err)
			}
		}
		if cmp >= 0 && err == nil {
			if t, tok, err = nextRow(tr, n); err != nil {
				err = sideErr("target", "read rows", err)
			}
		}
	}
	return diffs, total > limit, err
}

// scanRows runs a query and hands each row to fn as copies of the raw
// column bytes: nil for NULL, never nil otherwise.
func scanRows(ctx context.Context, conn *sql.Conn, q string, args []any, n int, fn func([][]byte)) error {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for {
		row, ok, err := nextRow(rows, n)
		if err != nil || !ok {
			return err
		}
		fn(row)
	}
}

// nextRow reads the next row of n columns, or reports the end.
func nextRow(rows *sql.Rows, n int) ([][]byte, bool, error) {
	if !rows.Next() {
		return nil, false, rows.Err()
	}
	raw := make([]sql.RawBytes, n)
	ptrs := make([]any, n)
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, false, err
	}
	row := make([][]byte, n)
	for i, v := range raw {
		if v != nil {
			row[i] = append([]byte{}, v...)
		}
	}
	return row, true, nil
}
