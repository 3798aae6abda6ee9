package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/txn"
)

// Temporary tables of source sessions (txn.TempUse). A MIXED or STATEMENT
// session logs CREATE TEMPORARY TABLE and its statements on temporary
// tables; a statement of it on real tables may read them (INSERT INTO t
// SELECT ... FROM tmp). The target keeps, per source session (server id,
// thread id), a connection of its own where those statements run, so the
// temporary tables are there when the statement on real tables runs on
// that connection, with its transaction's position. A table is live when
// it was built there in this run from what the target has as the source
// had it; one created before binlane (re)started, filled from tables the
// stream does not replicate, renamed, or whose statement failed on the
// target is not, and a statement on real tables that reads it stops the
// stream. A session's connection closes when the binlog drops its last
// temporary table (the source logs DROP TEMPORARY TABLE for those left at
// a disconnect), when the source restarted, and at the end of the run.
//
// Only a transaction applied alone (a barrier: nothing else in flight)
// uses a session's connection, and the coordinator closes them only while
// none is in flight; the mutex keeps the map itself safe.

type sessionKey struct{ server, thread uint32 }

type tempSession struct {
	conn *targetConn
	live map[txn.TableName]bool
}

type tempSessions struct {
	target  dsn.DSN
	session dsn.Session
	mu      sync.Mutex
	db      *sql.DB // its own pool: sessions must never wait for the workers' connections
	m       map[sessionKey]*tempSession
}

func newTempSessions(target dsn.DSN, session dsn.Session) *tempSessions {
	return &tempSessions{target: target, session: session, m: map[sessionKey]*tempSession{}}
}

// open returns session k, with a connection (opened now if it has none).
func (ts *tempSessions) open(ctx context.Context, k sessionKey) (*tempSession, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if s := ts.m[k]; s != nil {
		return s, nil
	}
	if ts.db == nil {
		db, err := OpenPool(ts.target, 0, ts.session)
		if err != nil {
			return nil, err
		}
		db.SetMaxIdleConns(0)
		ts.db = db
	}
	c, err := openConn(ctx, ts.db)
	if err != nil {
		return nil, fmt.Errorf("open the target connection of source session %d/%d: %w", k.server, k.thread, err)
	}
	s := &tempSession{conn: c, live: map[txn.TableName]bool{}}
	ts.m[k] = s
	return s, nil
}

// end closes session k's connection: its temporary tables go with it.
func (ts *tempSessions) end(k sessionKey) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if s := ts.m[k]; s != nil {
		s.conn.close()
		delete(ts.m, k)
	}
}

// endAll closes every session's connection (the source restarted, or the
// run ends).
func (ts *tempSessions) endAll() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for k, s := range ts.m {
		s.conn.close()
		delete(ts.m, k)
	}
	if ts.db != nil {
		ts.db.Close()
		ts.db = nil
	}
}

// tempSessionOf returns the source session whose temporary tables a body's
// statements use (ok false: none).
func tempSessionOf(t *txn.Txn, body *txn.Body) (k sessionKey, ok bool, err error) {
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemStatement || it.Statement.Temp == nil {
			continue
		}
		u := it.Statement.Temp
		next := sessionKey{u.Server, u.Thread}
		if ok && next != k {
			return k, false, fmt.Errorf("transaction %s uses the temporary tables of two source sessions", t.Describe())
		}
		k, ok = next, true
	}
	return k, ok, nil
}

// useTempSession makes the session's connection the worker's for a
// transaction; done gives the worker its own back, and ends the session
// when the transaction failed (its tables are then unknown) or when it
// holds no live table any more.
func (w *worker) useTempSession(ctx context.Context, k sessionKey) (done func(failed bool), err error) {
	s, err := w.temps.open(ctx, k)
	if err != nil {
		return nil, err
	}
	own := w.conn
	w.conn, w.tempSess = s.conn, s
	w.connID.Store(s.conn.id)
	return func(failed bool) {
		w.conn, w.tempSess = own, nil
		w.connID.Store(0)
		if own != nil {
			w.connID.Store(own.id)
		}
		if failed || len(s.live) == 0 {
			w.temps.end(k)
		}
	}, nil
}

// tempStatement applies a statement about a source session's temporary
// tables only, on the session's connection (the worker's while the
// transaction runs): it builds what it can build as the source did, and
// records what it cannot as not live.
func (w *worker) tempStatement(ctx context.Context, t *txn.Txn, st *txn.Statement, s *aloneState) error {
	u, sess := st.Temp, w.tempSess
	if sess == nil {
		// The session is chosen from a transaction's first part.
		return w.statementError(t, st, errors.New("a statement on a source session's temporary tables in a later part of a "+
			"transaction larger than --max-txn-bytes: raise --max-txn-bytes above its size"))
	}
	if u.Drop {
		// Also the ones built and then no longer trusted: the session's
		// next CREATE of that name must find none.
		var drop []string
		for _, n := range u.Writes {
			drop = append(drop, n.String())
			delete(sess.live, n)
		}
		if len(drop) == 0 {
			return nil
		}
		if _, err := w.conn.conn.ExecContext(ctx, "DROP TEMPORARY TABLE IF EXISTS "+strings.Join(drop, ", ")); err != nil {
			return w.statementError(t, st, err)
		}
		return nil
	}
	// Run only on tables built here: a statement on a temporary table the
	// target does not have would reach a real table of that name.
	ok := u.Rebuild
	for _, n := range u.Reads {
		ok = ok && sess.live[n]
	}
	for _, n := range u.Writes {
		ok = ok && (u.Create || sess.live[n])
	}
	if ok && st.DML {
		if !s.inTxn {
			if err := w.sql.Begin(); err != nil {
				return err
			}
			s.inTxn = true
		}
		s.dml = true
		// Its failure may have ended the transaction: stop.
		if err := w.statementDML(ctx, t, st); err != nil {
			return err
		}
	} else if ok {
		// CREATE TEMPORARY TABLE does not end the transaction; ALTER and
		// TRUNCATE of a temporary table do, but the source logs them in a
		// group of their own.
		if err := w.sql.Flush(); err != nil {
			return err
		}
		ok = w.tempRun(ctx, t, st)
	}
	for _, n := range u.Writes {
		if ok {
			sess.live[n] = true
		} else {
			delete(sess.live, n)
		}
	}
	return nil
}

// tempRun runs DDL on temporary tables in its session context; a failure
// only leaves them not live (it changes no replicated table).
func (w *worker) tempRun(ctx context.Context, t *txn.Txn, st *txn.Statement) bool {
	err := w.execStatement(ctx, t, st)
	if err == nil {
		_, err = w.conn.conn.ExecContext(ctx, w.restore)
	}
	if err != nil {
		w.log.Warn("a statement on a source session's temporary tables failed on the target: a later statement on replicated "+
			"tables that reads them will stop the stream", "gtid", t.GTID.String(), "thread", st.Temp.Thread,
			"statement", abbreviate(redact.Statement(st.Query), 200), "error", err)
		return false
	}
	return true
}

// checkTempReads stops a statement on real tables that reads a temporary
// table the target does not have as the source had it.
func (w *worker) checkTempReads(st *txn.Statement) error {
	for _, n := range st.Temp.Reads {
		if w.tempSess == nil || !w.tempSess.live[n] {
			return fmt.Errorf("it reads temporary table %s of source session %d/%d (server id/thread), which binlane does not have "+
				"on the target as the source had it: the table was created before this run of binlane started (a restart loses "+
				"a session's temporary tables), or filled from tables it does not replicate or could not read; apply the statement's "+
				"effect on the target by hand and start after this transaction (--skip-gtid), or make that source session log "+
				"rows (SET SESSION binlog_format=ROW)", n, st.Temp.Server, st.Temp.Thread)
		}
	}
	return nil
}
