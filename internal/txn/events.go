package txn

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
)

const valueSize = int(unsafe.Sizeof(binlog.Value{}))

// rows decodes a rows event of a selected table into changes.
func (a *Assembler) rows(ctx context.Context, ev *binlog.Event, r *binlog.RowsEvent) error {
	if a.cur == nil {
		return fmt.Errorf("source binlog %s:%d: rows event outside a transaction", ev.File, ev.Pos)
	}
	if r.Table == nil {
		return nil // the empty event that ends a statement
	}
	if !a.selectedTable(r.Table) {
		return nil
	}
	if !fullImage(r.Present, r.Columns) || r.Kind == binlog.RowsUpdate && !fullImage(r.PresentAfter, r.Columns) {
		return fmt.Errorf("transaction %s, table %s: row image is not FULL (binlog_row_image must be FULL for every source session)",
			a.cur.GTID, r.Table.QualifiedName())
	}
	start := len(a.values)
	vals, err := r.AppendRows(a.values)
	if err != nil {
		return fmt.Errorf("transaction %s at %s:%d: %w", a.cur.GTID, ev.File, ev.Pos, err)
	}
	a.values = vals
	n := r.Columns
	body := a.body
	first := len(body.Changes)
	for i := start; i < len(vals); {
		c := Change{Table: r.Table, Kind: r.Kind, Flags: r.Flags}
		switch r.Kind {
		case binlog.RowsInsert:
			c.After = vals[i : i+n : i+n]
			i += n
		case binlog.RowsDelete:
			c.Before = vals[i : i+n : i+n]
			i += n
		default:
			c.Before = vals[i : i+n : i+n]
			c.After = vals[i+n : i+2*n : i+2*n]
			i += 2 * n
		}
		body.Changes = append(body.Changes, c)
	}
	body.Items = append(body.Items, Item{Rows: r, First: first, Last: len(body.Changes)})
	a.bytes += int(ev.Header.EventSize) + (len(vals)-start)*valueSize
	return a.maybeStream(ctx)
}

// selectedTable applies the filter once per table map (the decoder reuses a
// table map while its bytes do not change): pattern matching per rows
// event shows in profiles.
func (a *Assembler) selectedTable(tm *binlog.TableMap) bool {
	if sel, ok := a.tableSel[tm]; ok {
		return sel
	}
	if len(a.tableSel) > 10000 {
		clear(a.tableSel)
	}
	sel := a.cfg.Rules.Match(tm.Schema, tm.Table)
	a.tableSel[tm] = sel
	return sel
}

func fullImage(bitmap []byte, n int) bool {
	for i := 0; i < n; i++ {
		if bitmap[i>>3]&(1<<(i&7)) == 0 {
			return false
		}
	}
	return true
}

// maybeStream hands a transaction that outgrew the memory bound to the
// applier before it ends, and from then on sends it in parts.
func (a *Assembler) maybeStream(ctx context.Context) error {
	t := a.cur
	if t.More == nil {
		if a.bytes <= a.cfg.MaxTxnBytes {
			return nil
		}
		t.Bytes = a.bytes
		t.More = make(chan Body, 1)
		if err := send(ctx, a.out, t); err != nil {
			return err
		}
		a.log.Info("streaming a large transaction", "gtid", t.GTID.String(), "bytes_so_far", a.bytes)
	} else {
		if a.bytes <= a.cfg.MaxTxnBytes/4 {
			return nil
		}
		if err := send(ctx, t.More, *a.body); err != nil {
			return err
		}
	}
	a.body = &Body{}
	a.values, a.bytes = nil, 0
	return nil
}

// query handles BEGIN/COMMIT/XA and statements.
func (a *Assembler) query(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	switch q.Kind() {
	case binlog.QueryBegin:
		if a.cur == nil {
			if err := a.begin(ev, gtid.GTID{}); err != nil {
				return nil, err
			}
		}
		a.inTrx, a.single = true, false
		return nil, nil
	case binlog.QueryCommit:
		return a.end(ctx, ev)
	case binlog.QueryRollback:
		// Only changes to non-transactional tables reach the binlog with a
		// ROLLBACK; the source kept them, so apply what is there.
		a.log.Warn("transaction ended with ROLLBACK in the binlog; applying its logged changes", "gtid", a.curGTID())
		return a.end(ctx, ev)
	case binlog.QuerySavepoint:
		return nil, nil
	case binlog.QueryXA:
		return a.xa(ctx, ev, q)
	}
	return a.statement(ctx, ev, q)
}

func (a *Assembler) curGTID() string {
	if a.cur == nil {
		return ""
	}
	return a.cur.GTID.String()
}

// xa handles XA statements. A prepared XA transaction is applied as if it
// committed at prepare time (its XA_PREPARE event ends the group); the
// later XA COMMIT is then an empty transaction. An XA ROLLBACK of a
// prepared transaction cannot be undone on the target: stop.
func (a *Assembler) xa(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	words := keywords(string(q.Query), 4)
	if len(words) < 2 {
		return nil, fmt.Errorf("transaction %s: cannot parse %q", a.curGTID(), q.Query)
	}
	switch words[1] {
	case "START", "BEGIN":
		if a.cur == nil {
			if err := a.begin(ev, gtid.GTID{}); err != nil {
				return nil, err
			}
		}
		a.inTrx, a.single = true, false
		return nil, nil
	case "END", "PREPARE":
		return nil, nil
	case "COMMIT":
		if a.cur == nil {
			if err := a.begin(ev, gtid.GTID{}); err != nil {
				return nil, err
			}
		}
		return a.end(ctx, ev)
	case "ROLLBACK":
		if a.cur != nil && len(a.body.Items) > 0 {
			return a.end(ctx, ev) // a one-phase rollback of logged non-transactional changes
		}
		return nil, fmt.Errorf("transaction %s: XA ROLLBACK of a prepared XA transaction: binlane applies XA transactions at prepare time and cannot undo them (%s)",
			a.curGTID(), q.Query)
	}
	return nil, fmt.Errorf("transaction %s: unsupported XA statement %q", a.curGTID(), q.Query)
}

// statement handles a statement that is not transaction control.
func (a *Assembler) statement(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	if a.cur == nil {
		if err := a.begin(ev, gtid.GTID{}); err != nil {
			return nil, err
		}
		a.single = true
	}
	query := string(q.Query)
	switch classify(query) {
	case stmtDML:
		return nil, fmt.Errorf("transaction %s at %s:%d: statement-based DML in the binlog (binlog_format must be ROW for every source session): %s",
			a.curGTID(), ev.File, ev.Pos, abbreviate(query, 200))
	case stmtAccount:
		a.log.Info("skipping account statement", "gtid", a.curGTID(), "query", abbreviate(query, 100))
	default:
		st := &Statement{Schema: q.Schema, Query: query, Status: q.Status}
		st.Tables, st.Unknown = ddlTables(query, q.Schema)
		if a.selected(st) {
			a.body.Items = append(a.body.Items, Item{Statement: st})
			a.bytes += len(query)
		} else {
			a.log.Debug("skipping statement for filtered tables", "gtid", a.curGTID(), "query", abbreviate(query, 100))
		}
	}
	if a.single {
		return a.end(ctx, ev)
	}
	return nil, nil
}

// selected decides whether a statement concerns the selected tables. When
// its tables cannot be named, its default schema decides.
func (a *Assembler) selected(st *Statement) bool {
	if st.Unknown || len(st.Tables) == 0 {
		return st.Schema == "" || a.cfg.Rules.MatchSchema(st.Schema)
	}
	for _, t := range st.Tables {
		if t.Table == "" && a.cfg.Rules.MatchSchema(t.Schema) || t.Table != "" && a.cfg.Rules.Match(t.Schema, t.Table) {
			return true
		}
	}
	return false
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
