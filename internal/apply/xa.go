package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/rowsql"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// runXA applies one step of an XA transaction the source prepared, as
// MariaDB's own replica does: the prepare becomes an XA transaction
// prepared on the target (XA START, its rows, XA END, XA PREPARE), which
// the source's later XA COMMIT or XA ROLLBACK finishes. Between the two,
// the prepared rows hold their locks on the target as they did on the
// source, where no transaction in between could touch them.
//
// Exactly once across crashes: neither XA PREPARE nor XA COMMIT can share
// a target transaction with the position update that follows it, so each
// step first asks the target what already happened. A prepare whose xid is
// already prepared there was applied by a run that stopped before saving
// the position; a finish whose xid is no longer prepared was applied the
// same way. Which XA transactions the stream prepared is recorded with the
// position (position.XATable): a finish without a record means the
// prepare came before the stream's start, and its rows were never applied.
func (w *worker) runXA(ctx context.Context, b *batch) error {
	if err := w.commit.waitTurn(ctx, w, b); err != nil {
		return err
	}
	wk := b.works[0]
	x := wk.t.XA
	prepared, err := w.xaPreparedOnTarget(ctx, x.ID)
	if err != nil {
		return w.xaError(wk.t, err)
	}
	opts := commitOpts{force: true}
	switch x.Phase {
	case txn.XAPrepare:
		if err := w.xaPrepare(ctx, b, wk, prepared); err != nil {
			return err
		}
		opts.xaPrepared = x.ID
	default:
		recorded, err := position.XAPrepared(ctx, w.conn.conn, w.commit.stream, x.ID)
		if err != nil {
			return w.xaError(wk.t, err)
		}
		if !recorded {
			return w.xaError(wk.t, fmt.Errorf("binlane did not prepare this XA transaction on the target: its XA PREPARE "+
				"came before the stream's start position (it was prepared on the source when the stream or its copy "+
				"started), so its rows are not on the target. Finish it on the source before starting a stream "+
				"(XA RECOVER lists what is prepared), or apply its rows to the target by hand and start after %s", wk.t.GTID))
		}
		if prepared {
			if err := w.xaFinish(ctx, x); err != nil {
				return w.xaError(wk.t, err)
			}
		} else {
			w.log.Info("XA transaction already finished on the target before the previous run stopped", "gtid", wk.t.GTID.String(), "xid", x.ID)
		}
		opts.xaFinished = x.ID
	}
	if err := w.sql.Begin(); err != nil {
		return err
	}
	if err := w.sql.Finish(); err != nil {
		return err
	}
	return w.commit.commit(ctx, w, b, opts)
}

// xaFinish commits or rolls back a prepared XA transaction. The session
// that prepared it was dropped right after its XA PREPARE (see xaPrepare),
// and another session can end it only once the server has detached it from
// that one while handling the disconnect: until then XA RECOVER lists the
// xid but XA COMMIT answers XAER_NOTA (seen once in the statement corpus,
// one worker, the COMMIT right after the PREPARE). That answer is retried
// for a few seconds.
func (w *worker) xaFinish(ctx context.Context, x *txn.XA) error {
	verb := "XA COMMIT "
	if x.Phase == txn.XARollback {
		verb = "XA ROLLBACK "
	}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		_, err := w.conn.conn.ExecContext(ctx, verb+x.ID)
		if err != nil && !sqlerr.Is(err, sqlerr.XAUnknownXID) {
			return struct{}{}, backoff.Permanent(err)
		}
		return struct{}{}, err
	}, backoff.WithBackOff(&backoff.ExponentialBackOff{InitialInterval: 5 * time.Millisecond, Multiplier: 2, MaxInterval: 200 * time.Millisecond}),
		backoff.WithMaxElapsedTime(5*time.Second))
	return err
}

// xaPrepare prepares the target's side of an XA transaction, unless an
// earlier run already did.
func (w *worker) xaPrepare(ctx context.Context, b *batch, wk *work, prepared bool) (err error) {
	t := wk.t
	if wk.parts != nil {
		return w.xaError(t, errors.New("the XA transaction is larger than --max-txn-bytes: raise it to hold the transaction whole"))
	}
	if prepared {
		w.log.Info("XA transaction already prepared on the target before the previous run stopped", "gtid", t.GTID.String(), "xid", t.XA.ID)
		return nil
	}
	if w.copy != nil && w.copy.Copying() {
		// Its rows become visible at its XA COMMIT, after the chunk
		// that will copy the rows around them: filtering them by the copy's
		// progress now would lose those of ranges not copied yet.
		if err := w.xaCopyCheck(ctx, t, &wk.body); err != nil {
			return err
		}
	}
	w.sql.Collapse, w.sql.OneByOne, w.sql.Runs = false, false, false
	defer func() {
		if err != nil {
			// An XA transaction not prepared yet rolls back with its
			// connection (ROLLBACK cannot end one).
			w.sql.Discard()
			w.dropConn()
		}
	}()
	if err := w.sql.BeginXA(t.XA.ID); err != nil {
		return err
	}
	for i := range wk.body.Items {
		it := &wk.body.Items[i]
		if it.Kind != txn.ItemRows {
			return w.xaError(t, fmt.Errorf("an XA transaction holds a statement (%s): not supported", abbreviate(it.Statement.Query, 100)))
		}
		p, err := w.plans.Get(ctx, it.Rows.Table)
		if err != nil {
			return w.xaError(t, err)
		}
		if err := w.sql.Rows(t, p, wk.body.Changes[it.First:it.Last]); err != nil {
			return err
		}
	}
	if err := w.sql.Finish(); err != nil {
		return err
	}
	if err := w.sql.Flush(); err != nil {
		return err
	}
	var bad int64
	if err := w.conn.conn.QueryRowContext(ctx, "SELECT "+rowsql.GuardVar).Scan(&bad); err != nil {
		return err
	}
	if bad != 0 {
		return w.xaError(t, fmt.Errorf("%w: %d row statements did not affect the rows they should have", rowsql.ErrRowCount, bad))
	}
	if _, err := w.conn.conn.ExecContext(ctx, "XA END "+t.XA.ID+"; XA PREPARE "+t.XA.ID); err != nil {
		return w.xaError(t, err)
	}
	// A session whose XA transaction is prepared can run nothing else
	// (XAER_RMFAIL); the prepared transaction outlives the connection.
	w.dropConn()
	return w.ensureConn(ctx)
}

// xaCopyCheck refuses an XA prepare whose rows the copy would filter.
func (w *worker) xaCopyCheck(ctx context.Context, t *txn.Txn, body *txn.Body) error {
	for i := range body.Items {
		it := &body.Items[i]
		if it.Kind != txn.ItemRows {
			continue
		}
		p, err := w.plans.Get(ctx, it.Rows.Table)
		if err != nil {
			return w.xaError(t, err)
		}
		in := body.Changes[it.First:it.Last]
		out, _, ok, err := w.copy.Filter(p, in)
		if err != nil {
			return w.xaError(t, err)
		}
		if ok && !sameChanges(in, out) {
			return w.xaError(t, fmt.Errorf("the XA transaction was prepared on the source while table %s is being copied "+
				"and changes rows not copied yet: binlane cannot apply it before its XA COMMIT. Let the copy start again "+
				"once no XA transaction is prepared on the source (XA RECOVER)", p.Name))
		}
	}
	return nil
}

func sameChanges(a, b []txn.Change) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Kind != b[i].Kind || len(a[i].Before) != len(b[i].Before) || len(a[i].After) != len(b[i].After) {
			return false
		}
	}
	return true
}

// xaPreparedOnTarget reports whether an XA transaction with the source's
// xid is prepared on the target (XA RECOVER, which needs no privilege on
// MariaDB).
func (w *worker) xaPreparedOnTarget(ctx context.Context, id string) (bool, error) {
	want, err := parseXID(id)
	if err != nil {
		return false, err
	}
	rows, err := w.conn.conn.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return false, fmt.Errorf("XA RECOVER: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var format, glen, blen int64
		var data []byte
		if err := rows.Scan(&format, &glen, &blen, &data); err != nil {
			return false, err
		}
		if format == want.format && int(glen) == len(want.gtrid) && int(blen) == len(want.bqual) &&
			bytes.Equal(data, append(append([]byte(nil), want.gtrid...), want.bqual...)) {
			return true, nil
		}
	}
	return false, rows.Err()
}

func (w *worker) xaError(t *txn.Txn, err error) error {
	return fmt.Errorf("transaction %s (%s %s): %w", t.Describe(), t.XA.Phase, t.XA.ID, err)
}

// xid is an XA transaction id.
type xid struct {
	gtrid, bqual []byte
	format       int64
}

// parseXID reads an xid as SQL writes it: gtrid[, bqual[, formatID]], each
// string a quoted literal or X'hex', the format a number (default 1).
func parseXID(s string) (xid, error) {
	x := xid{format: 1}
	rest := strings.TrimSpace(s)
	for part := 0; rest != ""; part++ {
		var val []byte
		var err error
		switch {
		case part == 2:
			end := strings.IndexAny(rest, " ,")
			if end < 0 {
				end = len(rest)
			}
			x.format, err = strconv.ParseInt(rest[:end], 10, 64)
			rest = rest[end:]
		default:
			val, rest, err = xidString(rest)
			if part == 0 {
				x.gtrid = val
			} else {
				x.bqual = val
			}
		}
		if err != nil {
			return xid{}, fmt.Errorf("cannot read xid %q: %w", s, err)
		}
		rest = strings.TrimSpace(rest)
		if rest == "" {
			break
		}
		if rest[0] != ',' || part == 2 {
			return xid{}, fmt.Errorf("cannot read xid %q", s)
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return x, nil
}

// xidString reads one string of an xid: X'hex', 0xhex or a quoted literal.
func xidString(s string) ([]byte, string, error) {
	switch {
	case len(s) >= 2 && (s[0] == 'X' || s[0] == 'x') && s[1] == '\'':
		end := strings.IndexByte(s[2:], '\'')
		if end < 0 {
			return nil, "", errors.New("unterminated hex string")
		}
		var out []byte
		if _, err := fmt.Sscanf(s[2:2+end]+"\n", "%x\n", &out); err != nil && end > 0 {
			return nil, "", err
		}
		return out, s[3+end:], nil
	case len(s) >= 1 && (s[0] == '\'' || s[0] == '"'):
		q := s[0]
		var out []byte
		for i := 1; i < len(s); i++ {
			switch {
			case s[i] == '\\' && i+1 < len(s):
				out = append(out, s[i+1])
				i++
			case s[i] == q && i+1 < len(s) && s[i+1] == q:
				out = append(out, q)
				i++
			case s[i] == q:
				return out, s[i+1:], nil
			default:
				out = append(out, s[i])
			}
		}
		return nil, "", errors.New("unterminated string")
	}
	return nil, "", fmt.Errorf("unexpected %q", s)
}
