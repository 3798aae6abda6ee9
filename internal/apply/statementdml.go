package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Statement-logged DML (txn.Statement.DML): row changes a MIXED or
// STATEMENT session logged as the statement that made them. Such a
// statement has no writeset, so its transaction is a barrier: it runs with
// nothing else in flight, in source order. Unlike DDL it can roll back, so
// it runs inside the target transaction that saves the position (as rows
// do): a crash leaves both or neither, and nothing is applied twice. It
// runs in the session context the source ran it in (package session) on
// the worker's connection, which gets the applier's own settings back
// right after it, for the rows that may follow. What stays with the
// session (user variables, LAST_INSERT_ID) no later statement reads
// without its own values from the binlog: the source logs a User_var or
// Intvar event for each it reads.
//
// Before it is scheduled, the coordinator refuses one whose result on the
// target could differ from the source's for a reason only the servers know
// (the stream has already refused tables it does not replicate and tables
// it cannot name): a table with triggers on the source (binlane defers
// trigger DDL until the cut-over, so the target's tables have none), a
// stored function it calls (its reads and writes are not in the text), a
// table whose copy is not finished (copier.State.Statement).

// AloneStatementDML is the reason a transaction with statement-logged DML
// runs alone.
const AloneStatementDML = "statement_dml"

// checkStatementDML refuses a transaction whose statement-logged DML the
// target cannot run to the source's result; dml reports whether it has any.
func (c *coordinator) checkStatementDML(ctx context.Context, w *work) (dml bool, err error) {
	ddl := false
	for i := range w.body.Items {
		it := &w.body.Items[i]
		if it.Kind == txn.ItemDeferred || it.Kind == txn.ItemStatement && !it.Statement.DML && it.Statement.Temp == nil {
			// Trigger or routine DDL: what the source has may change.
			clear(c.sourceOK)
		}
		if it.Kind != txn.ItemStatement {
			continue
		}
		if u := it.Statement.Temp; u != nil && u.Only {
			// On temporary tables only: what the target cannot build as the
			// source did is not built (a later use of it on real tables
			// stops the stream).
			if u.Rebuild && (it.Statement.DML || len(it.Statement.Calls) > 0) {
				if err := c.checkDMLSource(ctx, it.Statement); err != nil {
					u.Rebuild = false
				}
			}
			continue
		}
		if !it.Statement.DML {
			ddl = true
			continue
		}
		dml = true
		if err := c.checkDMLSource(ctx, it.Statement); err != nil {
			return true, fmt.Errorf("transaction %s: statement %q: %w", w.t.Describe(),
				abbreviate(redact.Statement(it.Statement.Query), 200), err)
		}
	}
	if dml && ddl {
		return true, fmt.Errorf("transaction %s holds row changes logged as statements and DDL: the DDL commits on its own, "+
			"so the transaction cannot be applied exactly once; make the source session log rows (binlog_format=ROW)", w.t.Describe())
	}
	return dml, nil
}

// checkDMLSource asks the source about the tables and functions of a
// statement. What it found fine is kept (c.sourceOK) until DDL passes in
// the stream: a trigger or function created later is created by DDL the
// stream sees first.
func (c *coordinator) checkDMLSource(ctx context.Context, st *txn.Statement) error {
	src := c.a.cfg.Source
	if src == nil {
		return errors.New("statement-logged DML needs the source's table definitions (triggers), which this run cannot read")
	}
	for _, n := range st.Tables {
		key := "t\x00" + n.Schema + "\x00" + n.Table
		if c.sourceOK[key] {
			continue
		}
		has, err := src.HasTriggers(ctx, n.Schema, n.Table)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("table %s has triggers on the source, which binlane keeps off the target until the cut-over: "+
				"the statement would change the target without the triggers' effects; make the source session log rows "+
				"(SET SESSION binlog_format=ROW) for statements on tables with triggers, then start the stream again", n)
		}
		c.sourceOK[key] = true
	}
	for _, n := range st.Writes {
		key := "d\x00" + n.Schema + "\x00" + n.Table
		if c.sourceOK[key] || st.Temp != nil && slices.Contains(st.Temp.Reads, n) {
			continue
		}
		col, call, err := src.UnsafeDefault(ctx, n.Schema, n.Table)
		if err != nil {
			return err
		}
		if call != "" {
			return fmt.Errorf("column %s of %s has DEFAULT %s, which the target would compute as its own for the rows the "+
				"statement writes; make the source session log rows (SET SESSION binlog_format=ROW or MIXED) for it, then "+
				"start the stream again", sqlquote.Name(col), n, call)
		}
		c.sourceOK[key] = true
	}
	for _, f := range st.Calls {
		key := "f\x00" + f.Schema + "\x00" + strings.ToLower(f.Table)
		if c.sourceOK[key] {
			continue
		}
		is, err := src.StoredFunction(ctx, f.Schema, f.Table)
		if err != nil {
			return err
		}
		if is {
			return fmt.Errorf("the statement calls stored function %s, whose reads and writes binlane cannot see: "+
				"make the source session log rows (SET SESSION binlog_format=ROW) for it, then start the stream again", f)
		}
		c.sourceOK[key] = true
	}
	return nil
}

// statementDML runs a statement-logged DML statement inside the open
// target transaction, in its source session's context, then gives the
// connection the applier's settings back for what follows.
func (w *worker) statementDML(ctx context.Context, t *txn.Txn, st *txn.Statement) error {
	if err := w.sql.Flush(); err != nil { // START TRANSACTION and the rows before it
		return err
	}
	exec := *st
	if st.Load != nil {
		done, err := w.loadFile(&exec)
		if err != nil {
			return w.statementError(t, st, err)
		}
		defer done()
	}
	if err := w.execStatement(ctx, t, &exec); err != nil {
		return w.statementError(t, st, err)
	}
	if _, err := w.conn.conn.ExecContext(ctx, w.restore); err != nil {
		return w.statementError(t, st, fmt.Errorf("restore the applier's session after the statement: %w", err))
	}
	return nil
}

// loadFile serves a statement-based LOAD DATA's file (its blocks from the
// binlog) from memory: the statement reads it as LOCAL INFILE under a name
// of the worker's own, as a replica reads the file it wrote.
func (w *worker) loadFile(st *txn.Statement) (done func(), err error) {
	if !w.conn.localInfile {
		return nil, errors.New("a LOAD DATA logged as a statement needs local_infile=ON on the target")
	}
	name := fmt.Sprintf("%sload-%d", w.infilePrefix, st.Load.FileID)
	if st.Exec, err = loadStatement(st.Query, st.Load, name); err != nil {
		return nil, err
	}
	return w.conn.serve(name, st.Load.Data), nil
}

// loadStatement puts file name into a LOAD DATA logged as a statement, as
// MariaDB's replica does (Execute_load_query_log_event::do_apply_event):
// the clause at [FileStart, FileEnd), " INFILE 'name' [IGNORE|REPLACE]
// INTO", is written again with the name, LOCAL (the file is the client's)
// and the duplicate handling the source used.
func loadStatement(q string, l *txn.LoadData, name string) (string, error) {
	if int(l.FileEnd) > len(q) || l.FileStart > l.FileEnd {
		return "", fmt.Errorf("the LOAD DATA's file name is at %d-%d, outside the statement", l.FileStart, l.FileEnd)
	}
	head := q[:l.FileStart]
	local := ""
	if f := strings.Fields(head); len(f) == 0 || !strings.EqualFold(f[len(f)-1], "LOCAL") {
		local = " LOCAL"
	}
	dup := ""
	switch l.DupHandling {
	case 1:
		dup = " IGNORE"
	case 2:
		dup = " REPLACE"
	}
	return strings.TrimRight(head, " ") + local + " INFILE '" + name + "'" + dup + " INTO " + strings.TrimLeft(q[l.FileEnd:], " "), nil
}
