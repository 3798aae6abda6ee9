package apply

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/session"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// runAlone applies a transaction that runs with nothing else in flight: one
// with statements (DDL, deferred trigger DDL), or one too large to hold,
// whose parts the coordinator relays as they arrive.
//
// A statement runs outside any transaction (DDL commits implicitly), so it
// cannot be covered by the position update. It is applied exactly once this
// way: before it runs, the stream's row records it (its GTID, a fingerprint
// of the target's definition of what it changes, the connection running
// it); the position update that follows it clears the record in the same
// transaction. A run that finds the record after a crash waits for that
// connection's statement to end, then compares the fingerprint: changed,
// the statement was applied (DDL is atomic, also across a crash of the
// server); unchanged, it was not, and runs. A statement that fails is
// recorded as failed: it was not applied, and runs again after a restart —
// an error code never counts as "already applied".
func (w *worker) runAlone(ctx context.Context, b *batch) (rerr error) {
	if err := w.commit.waitTurn(ctx, w, b); err != nil {
		return err
	}
	wk := b.works[0]
	t := wk.t
	// The indexes a copy deferred on the tables its statements touch come
	// first: the statements then run on the definitions they ran on at the
	// source. (Each build is idempotent; the checkpoints that record them
	// built commit with the transaction.)
	for _, build := range wk.builds {
		if err := w.build(ctx, build); err != nil {
			return fmt.Errorf("transaction %s: before its statement: %w", t.Describe(), err)
		}
	}
	w.sql.Collapse, w.sql.OneByOne, w.sql.Runs = false, false, false
	s := aloneState{}
	// Statement-logged DML leaves the connection as it found it (see
	// statementDML): what it does not reset (user variables,
	// LAST_INSERT_ID) every statement that reads it gets from its own
	// events.
	if k, ok, err := tempSessionOf(t, &wk.body); err != nil {
		return err
	} else if ok {
		// The whole transaction runs where the session's temporary tables
		// are, its position included.
		done, err := w.useTempSession(ctx, k)
		if err != nil {
			return err
		}
		defer func() { done(rerr != nil) }()
	}
	body := wk.body
	for {
		if err := w.aloneBody(ctx, t, &body, &s); err != nil {
			return err
		}
		if wk.parts == nil {
			break
		}
		p, err := w.nextPart(ctx, b, wk)
		if err != nil {
			return err
		}
		if p.Abort != nil {
			return fmt.Errorf("transaction %s: %w", t.GTID, p.Abort)
		}
		if p.Last && (t.Savepoints || t.RolledBack) {
			return fmt.Errorf("transaction %s is larger than --max-txn-bytes and rolls back to a savepoint (or ends in ROLLBACK) "+
				"over changes to non-transactional tables: such a transaction must be held whole to be resolved; raise --max-txn-bytes",
				t.Describe())
		}
		body = p.Body
		if p.Last {
			if err := w.aloneBody(ctx, t, &body, &s); err != nil {
				return err
			}
			break
		}
	}
	if !s.inTxn {
		if err := w.sql.Begin(); err != nil {
			return err
		}
	}
	if err := w.sql.Finish(); err != nil {
		return err
	}
	return w.commit.commit(ctx, w, b, commitOpts{rows: s.rows, force: true, clearDDL: s.statement, deferred: s.deferred})
}

// aloneState follows a transaction applied alone across its parts.
type aloneState struct {
	inTxn     bool // a target transaction is open for its rows
	statement bool // a statement ran (or was found applied)
	dml       bool // a statement-logged DML statement ran in the transaction
	rows      int
	deferred  []position.Deferred
}

// nextPart waits for the next part of a transaction sent in parts.
func (w *worker) nextPart(ctx context.Context, b *batch, wk *work) (txn.Part, error) {
	select {
	case p := <-wk.parts:
		return p, nil
	case <-w.abortAll:
		return txn.Part{}, errStopping
	case <-ctx.Done():
		return txn.Part{}, ctx.Err()
	}
}

// aloneBody applies one body of a transaction applied alone.
func (w *worker) aloneBody(ctx context.Context, t *txn.Txn, body *txn.Body, s *aloneState) error {
	for i := range body.Items {
		it := &body.Items[i]
		switch it.Kind {
		case txn.ItemStatement:
			if st := it.Statement; st.Temp != nil && st.Temp.Only {
				if err := w.tempStatement(ctx, t, st, s); err != nil {
					return err
				}
				continue
			}
			if it.Statement.DML {
				// Row changes: in the transaction, with the position.
				if !s.inTxn {
					if err := w.sql.Begin(); err != nil {
						return err
					}
					s.inTxn = true
				}
				s.dml = true
				if st := it.Statement; st.Temp != nil {
					if err := w.checkTempReads(st); err != nil {
						return w.statementError(t, st, err)
					}
				}
				if err := w.statementDML(ctx, t, it.Statement); err != nil {
					return err
				}
				continue
			}
			if w.tempSess != nil {
				// DDL runs on a fresh connection of its own (see statement).
				return w.statementError(t, it.Statement, errors.New("DDL in a transaction that uses a source session's temporary tables"))
			}
			if s.inTxn {
				// The statement commits what came before it implicitly.
				if err := w.sql.Flush(); err != nil {
					return err
				}
				s.inTxn = false
			}
			if err := w.statement(ctx, t, it.Statement); err != nil {
				return err
			}
			s.statement = true
		case txn.ItemDeferred:
			st := it.Statement
			s.deferred = append(s.deferred, position.Deferred{GTID: t.GTID.String(), Schema: st.Schema, Reason: st.Deferred, Statement: st.Query})
		case txn.ItemRows:
			if !s.inTxn {
				if err := w.sql.Begin(); err != nil {
					return err
				}
				s.inTxn = true
			}
			p, err := w.plans.Get(ctx, it.Rows.Table)
			if err != nil {
				return fmt.Errorf("transaction %s: %w", t.Describe(), err)
			}
			changes := body.Changes[it.First:it.Last]
			if w.copy != nil && w.copy.Copying() {
				// A barrier: every chunk before it in the stream is
				// sequenced, none after it yet (the coordinator takes nothing
				// more until it commits). The parts of a transaction sent in
				// parts were filtered by the coordinator (takePart), in
				// stream order: filtering again drops nothing more.
				out, _, ok, err := w.copy.Filter(p, changes)
				if err != nil {
					return fmt.Errorf("transaction %s: %w", t.Describe(), err)
				}
				if ok {
					changes = out
				}
			}
			if err := w.sql.Rows(t, p, changes); err != nil {
				return err
			}
			s.rows += len(changes)
		}
	}
	return nil
}

// statement runs one statement the way the source session ran it, exactly
// once across crashes (see runAlone).
func (w *worker) statement(ctx context.Context, t *txn.Txn, st *txn.Statement) error {
	gtid := t.GTID.String()
	objects, whole := statementObjects(st)
	if rec := w.recoveredDDL; rec.GTID == gtid && rec.State == position.DDLRunning {
		applied, err := w.appliedBeforeCrash(ctx, st, rec, objects, whole)
		if err != nil {
			return w.statementError(t, st, err)
		}
		w.recoveredDDL = position.DDLMark{}
		if applied {
			w.log.Warn("statement was applied before the previous run stopped (the target's definitions changed); not running it again",
				"gtid", gtid, "statement", abbreviate(redact.Statement(st.Query), 200))
			w.plans.Invalidate()
			return nil
		}
	}
	fp, err := schema.Fingerprint(ctx, w.conn.conn, objects, whole)
	if err != nil {
		return w.statementError(t, st, err)
	}
	if err := position.MarkDDL(ctx, w.conn.conn, w.commit.stream, w.commit.owner,
		position.DDLMark{GTID: gtid, Fingerprint: fp, Conn: w.conn.id}); err != nil {
		return w.statementError(t, st, err)
	}
	err = w.execStatement(ctx, t, st)
	w.plans.Invalidate()
	// The statement's session context must not reach the rows that follow:
	// they run on a fresh connection.
	w.dropConn()
	if rerr := w.ensureConn(ctx); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		if ferr := position.FailDDL(fctx, w.meta, w.commit.stream, w.commit.owner); ferr != nil {
			w.log.Warn("could not record the statement's failure", "gtid", gtid, "error", ferr)
		}
		cancel()
		return w.statementError(t, st, err)
	}
	return nil
}

func (w *worker) statementError(t *txn.Txn, st *txn.Statement, err error) error {
	return fmt.Errorf("transaction %s: statement %q: %w", t.Describe(), abbreviate(redact.Statement(st.Query), 300), err)
}

// execStatement runs a statement in the session context the source ran it
// in (package session), and judges how it ended against how it ended on the
// source.
func (w *worker) execStatement(ctx context.Context, t *txn.Txn, st *txn.Statement) error {
	if err := session.Check(st); err != nil {
		return err
	}
	enter, err := session.Enter(st, w.plans.Collation)
	if err != nil {
		return err
	}
	c := w.conn.conn
	// The default database first: USE sets collation_database to the
	// database's, which the source's context may then override.
	if st.Schema != "" {
		if _, err := c.ExecContext(ctx, "USE "+sqlquote.Name(st.Schema)); err != nil && !sqlerr.Is(err, sqlerr.UnknownDB) {
			return err
		}
	}
	for _, q := range enter {
		if _, err := c.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("set the source session's context (%s): %w", abbreviate(q, 300), err)
		}
	}
	w.execStart.Store(time.Now().UnixNano())
	_, err = c.ExecContext(ctx, st.Text())
	w.execStart.Store(0)
	accepted, err := session.Outcome(st, err)
	if accepted {
		w.log.Info("the statement ended on the target with the error it was logged with on the source: it did the same there",
			"gtid", t.GTID.String(), "error", st.ErrorCode, "statement", abbreviate(redact.Statement(st.Query), 200))
	}
	if sqlerr.Is(err, sqlerr.BinlogUnsafeRoutine, sqlerr.BinlogCreateRoutineNeedSuper) {
		err = fmt.Errorf("%w (the target binlogs what binlane applies: set log_bin_trust_function_creators=ON on the "+
			"target, or run with --binlog-applied=false)", err)
	}
	return err
}

// appliedBeforeCrash decides whether the statement the previous run marked
// was applied: it waits until the connection that ran it no longer runs it
// (a killed process's statement goes on in the server), then compares the
// target's definitions with those taken before it started.
func (w *worker) appliedBeforeCrash(ctx context.Context, st *txn.Statement, rec position.DDLMark,
	objects []schema.Object, whole []string) (bool, error) {
	for waited := time.Duration(0); ; waited += time.Second {
		var n int
		err := w.conn.conn.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.PROCESSLIST
			WHERE ID = ? AND INFO = ?`, rec.Conn, st.Query).Scan(&n)
		if err != nil {
			return false, fmt.Errorf("look for the previous run's statement: %w", err)
		}
		if n == 0 {
			break
		}
		if waited%(30*time.Second) == 0 {
			w.log.Warn("waiting for the statement the previous run started to finish on the target",
				"connection", rec.Conn, "waited", waited, "statement", abbreviate(redact.Statement(st.Query), 200))
		}
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	fp, err := schema.Fingerprint(ctx, w.conn.conn, objects, whole)
	if err != nil {
		return false, err
	}
	return fp != rec.Fingerprint, nil
}

// statementObjects names what a statement may change, for its
// fingerprint: the tables it names; for a statement on a schema (CREATE
// DATABASE, routines, ...) that schema and everything in it; for one whose
// objects could not be read, its whole default schema.
func statementObjects(st *txn.Statement) ([]schema.Object, []string) {
	var objects []schema.Object
	var whole []string
	for _, n := range st.Tables {
		objects = append(objects, schema.Object{Schema: n.Schema, Table: n.Table})
		if n.Table == "" && n.Schema != "" {
			whole = append(whole, n.Schema)
		}
	}
	if (st.Unknown || len(objects) == 0) && st.Schema != "" {
		whole = append(whole, st.Schema)
	}
	return objects, whole
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
