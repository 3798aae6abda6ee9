package txn

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"unsafe"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/sqllex"
)

const (
	valueSize  = int(unsafe.Sizeof(binlog.Value{}))
	changeSize = int(unsafe.Sizeof(Change{}))
	itemSize   = int(unsafe.Sizeof(Item{}))
)

// rows decodes a rows event of a selected table into changes.
func (a *Assembler) rows(ctx context.Context, ev *binlog.Event, r *binlog.RowsEvent) error {
	if a.cur == nil {
		return fmt.Errorf("source binlog %s:%d: rows event outside a transaction", ev.File, ev.Pos)
	}
	if r.Table == nil || a.skipping {
		return nil // the empty event that ends a statement; a skipped transaction's rows
	}
	if !a.selectedTable(r.Table) {
		return nil
	}
	partial := !fullImage(r.Present, r.Columns) || r.Kind == binlog.RowsUpdate && !fullImage(r.PresentAfter, r.Columns)
	vals, err := a.decodeRows(r)
	if err != nil {
		return fmt.Errorf("transaction %s at %s:%d: %w", a.cur.GTID, ev.File, ev.Pos, err)
	}
	n := r.Columns
	body := &a.body
	first := len(body.Changes)
	images := 1
	if r.Kind == binlog.RowsUpdate {
		images = 2
	}
	body.Changes = roomFor(body.Changes, len(vals)/max(1, n*images), a.gen.changeBlock)
	for i := 0; i < len(vals); {
		c := Change{Table: r.Table, Kind: r.Kind, Flags: r.Flags, Partial: partial}
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
			if partial {
				c.FillUnwritten()
			}
		}
		body.Changes = append(body.Changes, c)
	}
	a.addItem(Item{Kind: ItemRows, Rows: r, First: first, Last: len(body.Changes)})
	// The event's bytes back the values' strings; the values and changes
	// themselves are counted on top.
	a.bytes += int(ev.Header.EventSize) + len(vals)*valueSize + (len(body.Changes)-first)*changeSize
	return a.maybeStream(ctx)
}

// Blocks. A part's items, changes and values are carved out of blocks that
// consecutive parts share: handing a part over gives away its regions of
// the blocks (their capacity cut to their length, so an append by the
// receiver copies), and the next part fills the rest. Nothing handed over
// is ever written again, and a small transaction costs no allocation of
// its own (copying each part into exactly sized arrays, as before, was a
// tenth of binlane's CPU on order entry: the copies, and the allocation of
// arrays that hold pointers). A block is shared by the parts of one
// generation, at most retainMax bytes of them; the next generation's
// blocks are sized for what the last one held, so that one block of each
// kind serves a generation and little of it stays unused (fixed blocks of
// 512 changes and 256 items cost the docs benchmark, a few changes per
// 10-30 KB transaction, a fifth more memory).
const (
	// blockMin bounds every block from below, in elements; a first
	// generation's blocks (nothing known yet) hold firstBlock.
	blockMin   = 16
	firstBlock = 256
	// valueBlockMax bounds the blocks of the decode buffer, in values (40
	// bytes each): at most 640 KB; a new one holds at least valueRoom.
	// blockMax bounds the change and item blocks a generation starts with
	// (256 KB of changes): a large transaction's part grows its own by
	// doubling, and sizing the next generation's blocks from it made every
	// small transaction after a 100,000-row one allocate 7 MB of changes
	// (bulk benchmark: peak RSS 295-368 MiB against 227-265).
	valueBlockMax = 16 << 10
	valueRoom     = 256
	blockMax      = 4 << 10
	// retainMax bounds the bytes of the parts carved from the current
	// blocks: a block lives as long as any part carved from it, and keeps
	// alive the events every part's values point into. Past it the next
	// part starts new blocks, so a part that stays (a large transaction
	// waiting for its turn) holds the events of at most 256 KB of others.
	// Shop benchmark, pinned, against copying every part: with 4 MiB and
	// 1 MiB binlane's peak RSS was 41-45 MiB against 37-38 and its page
	// faults 7,600-8,600 against 6,200-6,700; with 256 KB 38 MiB and
	// 6,800-6,900.
	retainMax = 256 << 10
)

// generation counts what was carved from the current blocks and sizes the
// next ones.
type generation struct {
	bytes, values, changes, items int // carved so far
	// valueBlock, changeBlock and itemBlock are the sizes of the next
	// blocks, in elements.
	valueBlock, changeBlock, itemBlock int
}

func newGeneration() generation {
	return generation{valueBlock: firstBlock, changeBlock: firstBlock, itemBlock: firstBlock}
}

// next starts a generation whose blocks fit what this one held, with an
// eighth to spare.
func (g *generation) next() {
	size := func(n, most int) int { return min(max(blockMin, n+n/8), most) }
	*g = generation{valueBlock: max(valueRoom, size(g.values, valueBlockMax)),
		changeBlock: size(g.changes, blockMax), itemBlock: size(g.items, blockMax)}
}

// roomFor makes room for k more changes in a new block of at least block
// changes, doubling the part's array when it is short (append grows a
// large slice by a quarter, and a 100,000-row transaction's changes were
// copied, and each new array faulted in, some thirty times). Only the part
// being filled moves to the new block.
func roomFor(changes []Change, k, block int) []Change {
	if cap(changes)-len(changes) >= k {
		return changes
	}
	grown := make([]Change, len(changes), max(len(changes)+k, 2*len(changes), block))
	copy(grown, changes)
	return grown
}

// addItem appends an item to the part being filled, in its block.
func (a *Assembler) addItem(it Item) {
	items := a.body.Items
	if len(items) == cap(items) {
		grown := make([]Item, len(items), max(2*len(items), a.gen.itemBlock))
		copy(grown, items)
		items = grown
	}
	a.body.Items = append(items, it)
}

// decodeRows decodes a rows event's images into the decode buffer and
// returns its values. The buffer grows by blocks, never by copying: when
// the current block lacks room, the event's values go to a new one and the
// changes made so far keep pointing into the old. A buffer doubled by
// copying moved 40 MB for a transaction of 100,000 updates of five
// columns, and the page faults of each new array cost more than the copy
// (bulk benchmark, 2026-11-29: a fifth of binlane's CPU). A new block is
// started when the current one lacks room for the event's first row or for
// valueRoom values (a quarter of a small block): an event that outgrows
// the room moves to an array append grows for it, which becomes the next
// block, and in blocks left with room for a row only most of the events
// of a bulk transaction did (its peak RSS a fifth higher); asking for
// valueRoom in blocks of valueRoom left all but one event's values of each
// block unused on wide transactions.
func (a *Assembler) decodeRows(r *binlog.RowsEvent) ([]binlog.Value, error) {
	row := r.Columns
	if r.Kind == binlog.RowsUpdate {
		row *= 2
	}
	if cap(a.values)-len(a.values) < max(row, min(valueRoom, cap(a.values)/4), 1) {
		a.values = make([]binlog.Value, 0, max(valueRoom, a.gen.valueBlock))
		a.gen.valueBlock = min(2*cap(a.values), valueBlockMax) // a large transaction's next block
	}
	start := len(a.values)
	room := cap(a.values) - start
	vals, err := r.AppendRows(a.values[start:start])
	if err != nil {
		return nil, err
	}
	if len(vals) <= room {
		a.values = a.values[:start+len(vals)] // decoded in place
	} else {
		a.values = vals // the event outgrew the block: its own array is the next block
	}
	a.gen.values += len(vals)
	return vals, nil
}

// handOver returns the part being filled, for the applier, and starts the
// next part in the rest of its blocks (see Blocks), or in new ones once
// retainMax bytes were carved from them.
func (a *Assembler) handOver() Body {
	b := a.body
	ni, nc := len(b.Items), len(b.Changes)
	a.body = Body{Items: b.Items[ni:], Changes: b.Changes[nc:]}
	b.Items, b.Changes = b.Items[:ni:ni], b.Changes[:nc:nc]
	g := &a.gen
	g.bytes, g.changes, g.items = g.bytes+a.bytes, g.changes+nc, g.items+ni
	if g.bytes >= retainMax {
		g.next()
		a.body, a.values = Body{}, nil
	}
	return b
}

// dropPart forgets the part being filled (a transaction that was not
// handed over): the next part overwrites its items and changes. Its
// values stay unused in their block.
func (a *Assembler) dropPart() {
	clear(a.body.Items)
	clear(a.body.Changes)
	a.body = Body{Items: a.body.Items[:0], Changes: a.body.Changes[:0]}
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

// FillUnwritten completes the after image of a partial update (MINIMAL,
// NOBLOB) with the before image's values of the columns the update did
// not write: the source logs a column in the after image when the
// statement wrote it (its ON UPDATE clock included), so one it left out
// still holds its before value. A column in neither image stays absent.
// The assembler calls it for every partial update; it does nothing to
// other changes.
func (c *Change) FillUnwritten() {
	if c.Kind != binlog.RowsUpdate {
		return
	}
	for i := range c.After {
		if c.After[i].Kind == binlog.KindAbsent {
			c.After[i] = c.Before[i]
		}
	}
}

// fullImage reports whether a columns-present bitmap names every column:
// otherwise the source logged a MINIMAL or NOBLOB image.
// A byte at a time: per rows event, a bit at a time was 2% of binlane's
// CPU on 60-column rows.
func fullImage(bitmap []byte, n int) bool {
	whole := n >> 3
	for _, b := range bitmap[:whole] {
		if b != 0xff {
			return false
		}
	}
	if rest := n & 7; rest != 0 {
		mask := byte(1)<<rest - 1
		return bitmap[whole]&mask == mask
	}
	return true
}

// maybeStream sends the part being filled to the applier before the
// transaction ends once it outgrew the memory bound: the first part at
// MaxTxnBytes, later ones at a quarter of it (the applier already holds a
// connection for the transaction; smaller parts keep memory flat).
func (a *Assembler) maybeStream(ctx context.Context) error {
	limit := a.cfg.MaxTxnBytes
	if a.sent {
		limit /= 4
	}
	if a.bytes <= limit {
		return nil
	}
	if !a.sent {
		a.log.Info("transaction too large to hold in memory: sending it in parts", "gtid", a.cur.GTID.String(), "bytes_so_far", a.bytes)
	}
	return a.sendPart(ctx, false, nil)
}

// query handles BEGIN/COMMIT/XA, savepoints and statements.
func (a *Assembler) query(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	switch q.Kind() {
	case binlog.QueryBegin:
		if a.cur == nil {
			if err := a.begin(ev, gtid.GTID{}); err != nil {
				return nil, err
			}
		}
		a.single = false
		return nil, nil
	case binlog.QueryCommit:
		return a.end(ctx, ev)
	case binlog.QueryRollback:
		// Only groups with changes to tables that are not transactional on
		// the source reach the binlog ending in ROLLBACK: those changes
		// stayed, the others were undone (see ResolveRollbacks).
		if a.cur != nil {
			a.cur.RolledBack = true
		}
		return a.end(ctx, ev)
	case binlog.QuerySavepoint:
		return nil, a.savepoint(ev, q)
	case binlog.QueryXA:
		return a.xa(ctx, ev, q)
	}
	return a.statement(ctx, ev, q)
}

// savepoint records SAVEPOINT, ROLLBACK TO and RELEASE SAVEPOINT in source
// order: the source only binlogs them when the transaction also changed a
// table that is not transactional, whose changes a rollback to the
// savepoint does not undo.
func (a *Assembler) savepoint(ev *binlog.Event, q *binlog.QueryEvent) error {
	if a.cur == nil {
		return fmt.Errorf("source binlog %s:%d: %q outside a transaction", ev.File, ev.Pos, q.Query)
	}
	kind, name, err := parseSavepoint(string(q.Query), sqllex.ModeOf(q.Status.SQLMode))
	if err != nil {
		return fmt.Errorf("transaction %s at %s:%d: %w", a.cur.GTID, ev.File, ev.Pos, err)
	}
	a.cur.Savepoints = true
	a.addItem(Item{Kind: kind, Savepoint: name})
	return nil
}

func (a *Assembler) curGTID() string {
	if a.cur == nil {
		return ""
	}
	return a.cur.GTID.String()
}

// xa handles XA statements. A transaction the source prepared arrives as
// two groups: the prepare (XA START ... XA END, its rows, then an XA
// PREPARE event) and, later, a group of its own with XA COMMIT or XA
// ROLLBACK. The applier prepares the first on the target the same way and
// finishes it at the second. A one-phase XA COMMIT is an ordinary commit.
func (a *Assembler) xa(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	words := keywords(string(q.Query), sqllex.ModeOf(q.Status.SQLMode), 8)
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
		a.single = false
		return nil, nil
	case "END", "PREPARE":
		return nil, nil
	case "COMMIT", "ROLLBACK":
		if a.cur == nil {
			if err := a.begin(ev, gtid.GTID{}); err != nil {
				return nil, err
			}
		}
		onePhase := contains(words, "ONE") // XA COMMIT xid ONE PHASE
		switch {
		case words[1] == "COMMIT" && (onePhase || len(a.body.Items) > 0 || a.sent):
			return a.end(ctx, ev)
		case words[1] == "ROLLBACK" && (len(a.body.Items) > 0 || a.sent):
			// A one-phase rollback of logged non-transactional changes.
			a.cur.RolledBack = true
			return a.end(ctx, ev)
		}
		id, err := xaID(string(q.Query))
		if err != nil {
			return nil, fmt.Errorf("transaction %s: %w", a.curGTID(), err)
		}
		phase := XACommit
		if words[1] == "ROLLBACK" {
			phase = XARollback
		}
		a.cur.XA = &XA{ID: id, Phase: phase}
		return a.end(ctx, ev)
	}
	return nil, fmt.Errorf("transaction %s: unsupported XA statement %q", a.curGTID(), q.Query)
}

// xaPrepare ends the first group of an XA transaction at its XA PREPARE
// event (one-phase: an ordinary commit).
func (a *Assembler) xaPrepare(ctx context.Context, ev *binlog.Event, p *binlog.XAPrepareEvent) (*Txn, error) {
	if a.cur != nil && !p.OnePhase {
		a.cur.XA = &XA{ID: p.XID.String(), Phase: XAPrepare}
	}
	return a.end(ctx, ev)
}

// xaID reads the xid of XA COMMIT xid / XA ROLLBACK xid as the source
// wrote it (X'..',X'..',n or 'gtrid'[,'bqual'[,n]]).
func xaID(q string) (string, error) {
	rest := strings.TrimSpace(q)
	for _, w := range []string{"XA", ""} {
		i := strings.IndexFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' })
		if i < 0 {
			return "", fmt.Errorf("cannot read the xid of %q", q)
		}
		if w != "" && !strings.EqualFold(rest[:i], w) {
			return "", fmt.Errorf("cannot read the xid of %q", q)
		}
		rest = strings.TrimSpace(rest[i:])
	}
	if rest == "" {
		return "", fmt.Errorf("cannot read the xid of %q", q)
	}
	return rest, nil
}

// statement handles a statement that is not transaction control. What it
// concerns is decided first: a statement about tables the filter does not
// select is skipped whatever it is (pt-table-checksum writes
// statement-based DML into its own schema on a row-based source).
func (a *Assembler) statement(ctx context.Context, ev *binlog.Event, q *binlog.QueryEvent) (*Txn, error) {
	if a.cur == nil {
		if err := a.begin(ev, gtid.GTID{}); err != nil {
			return nil, err
		}
		a.single = true
	}
	if a.skipping {
		a.vars = Vars{}
		if a.single {
			return a.end(ctx, ev)
		}
		return nil, nil
	}
	query := string(q.Query)
	st := &Statement{Schema: q.Schema, Query: query, Status: q.Status, Timestamp: ev.Header.Timestamp,
		ThreadID: q.ThreadID, ErrorCode: q.ErrorCode, Vars: a.vars}
	a.vars = Vars{}
	dec, err := a.cfg.Names.decoder(q.Status.ClientCharset)
	if err != nil {
		return nil, fmt.Errorf("transaction %s at %s:%d: %w", a.curGTID(), ev.File, ev.Pos, err)
	}
	kind := classify(query, st.lexMode())
	var refs dmlRefsResult
	if kind == stmtDML {
		refs = dmlRefs(query, st.lexMode(), q.Schema, dec)
		st.Tables, st.Writes, st.Unknown, st.Calls, st.DML = union(refs.writes, refs.reads), refs.writes, refs.unknown, refs.calls, true
	} else {
		st.Tables, st.Unknown = ddlTables(query, st.lexMode(), q.Schema, dec)
	}
	if kind == stmtDDL || kind == stmtDML {
		skip, err := a.temporary(ev, q, st, dec)
		if err != nil {
			return nil, err
		}
		if skip {
			kind, a.tempsChanged = stmtTemp, true
		}
	}
	switch {
	case kind == stmtSkip:
	case kind == stmtTemp:
		if a.tempStatement(st) {
			a.addItem(Item{Kind: ItemStatement, Statement: st})
			a.bytes += len(query)
		}
	case kind == stmtAccount:
		a.logStatement(slog.LevelInfo, "skipping account statement (accounts are not replicated)", query)
	case kind == stmtDML:
		if err := a.dmlItem(st, refs, q.Load); err != nil {
			return nil, fmt.Errorf("transaction %s at %s:%d: %w", a.curGTID(), ev.File, ev.Pos, err)
		}
	case !a.selected(st):
		a.logStatement(slog.LevelDebug, "skipping statement for tables not replicated", query)
	case kind == stmtTrigger || kind == stmtEvent:
		st.Deferred = deferReason(kind)
		a.logStatement(slog.LevelWarn, "not running "+st.Deferred+" on the target while it is a replica; recorded for cut-over", query)
		a.addItem(Item{Kind: ItemDeferred, Statement: st})
		a.bytes += len(query)
	default:
		v, why, err := decide(st, a.alter)
		if err != nil {
			return nil, fmt.Errorf("transaction %s at %s:%d: %w", a.curGTID(), ev.File, ev.Pos, err)
		}
		if v == skipIt {
			a.logStatement(slog.LevelInfo, "not running the "+why, query)
			break
		}
		a.addItem(Item{Kind: ItemStatement, Statement: st})
		a.bytes += len(query)
	}
	if a.single {
		return a.end(ctx, ev)
	}
	return nil, nil
}

// temporary applies the source session's temporary tables to a statement
// (see temp.go): skip when the target has nothing to run.
func (a *Assembler) temporary(ev *binlog.Event, q *binlog.QueryEvent, st *Statement, dec decoder) (skip bool, err error) {
	sess := session{ev.Header.ServerID, q.ThreadID}
	had := len(a.temps[sess]) > 0
	skip, err = a.temps.observe(sess, st, dec)
	if st.Temp != nil {
		st.Temp.Server, st.Temp.Thread = sess.server, sess.thread
	}
	switch {
	case err != nil && a.selected(st):
		return false, fmt.Errorf("transaction %s at %s:%d: %w", a.curGTID(), ev.File, ev.Pos, err)
	case err != nil: // about tables not replicated: nothing to run
		a.logStatement(slog.LevelDebug, "skipping statement for tables not replicated", st.Query)
		return true, nil
	case skip && !had && len(a.temps[sess]) > 0:
		// Once per session's run of temporary tables: a reporting job may
		// write them a statement at a time.
		a.log.Info("a source session logs statements (its binlog_format is not ROW): the target keeps its temporary tables on a "+
			"connection of its own while this run lasts", "server_id", sess.server, "thread", sess.thread,
			"gtid", a.curGTID(), "query", abbreviate(redact.Statement(st.Query), 200))
	case skip:
		a.logStatement(slog.LevelDebug, "not running a statement on temporary tables of a source session", st.Query)
	}
	return skip, nil
}

func deferReason(k stmtKind) string {
	if k == stmtTrigger {
		return "trigger DDL"
	}
	return "event DDL"
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
