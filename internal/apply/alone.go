package apply

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

// runAlone applies a transaction that runs with nothing else in flight: one
// with statements (DDL), or one too large to hold, which arrives in parts.
// Statements run outside any transaction (DDL commits implicitly); the
// stream records the statement's GTID first, so that after a crash in the
// middle the statement is recognized as possibly applied.
func (w *worker) runAlone(ctx context.Context, b *batch) error {
	if err := w.waitTurn(ctx, b); err != nil {
		return err
	}
	wk := b.works[0]
	t := wk.t
	w.sw.reset()
	w.rows = 0
	inTxn, ranStatement := false, false
	body := &t.Body
	for {
		for i := range body.Items {
			if st := body.Items[i].Statement; st != nil {
				if inTxn {
					// The statement commits what came before it implicitly.
					if err := w.sw.send(); err != nil {
						return err
					}
					inTxn = false
				}
				if err := w.statement(ctx, t, st); err != nil {
					return err
				}
				ranStatement = true
				continue
			}
			if !inTxn {
				w.sw.reset()
				if err := w.sw.beginTxn(); err != nil {
					return err
				}
				inTxn = true
			}
			part := txn.Body{Items: body.Items[i : i+1], Changes: body.Changes}
			if err := w.writeBody(ctx, t, &part, nil, false); err != nil {
				return err
			}
		}
		if t.More == nil {
			break
		}
		next, ok := <-t.More
		if !ok {
			break
		}
		if next.Err != nil {
			return fmt.Errorf("%w: %v", errStreamAborted, next.Err)
		}
		body = &next
	}
	if !inTxn {
		w.sw.reset()
		if err := w.sw.beginTxn(); err != nil {
			return err
		}
	}
	if err := w.finishStatements(false); err != nil {
		return err
	}
	if ranStatement {
		w.sw.begin()
		w.sw.buf = append(w.sw.buf, "UPDATE "+position.Table+" SET ddl_gtid='' WHERE name="...)
		w.sw.buf = appendHexString(w.sw.buf, []byte(w.a.cfg.Stream), "utf8mb4")
		if err := w.sw.end(stmtInfo{expect: -1, what: "statement mark"}); err != nil {
			return err
		}
	}
	return w.commit(ctx, b, true)
}

// statement runs one statement the way the source session ran it.
func (w *worker) statement(ctx context.Context, t *txn.Txn, st *txn.Statement) error {
	mark := t.GTID.String()
	if _, err := w.conn.conn.ExecContext(ctx, "UPDATE "+position.Table+" SET ddl_gtid = ? WHERE name = ?", mark, w.a.cfg.Stream); err != nil {
		return err
	}
	if _, err := w.conn.conn.ExecContext(ctx, sessionFor(st)); err != nil {
		return fmt.Errorf("set the source session's settings for %q: %w", abbreviate(st.Query, 100), err)
	}
	if st.Schema != "" {
		if _, err := w.conn.conn.ExecContext(ctx, "USE "+schema.QuoteName(st.Schema)); err != nil && serverCode(err) != 1049 {
			return err
		}
	}
	_, err := w.conn.conn.ExecContext(ctx, st.Query)
	if err != nil && w.a.cfg.RecoveredDDL != "" && w.a.cfg.RecoveredDDL == mark && alreadyApplied(err) {
		w.a.log.Warn("statement was already applied before a crash; continuing", "gtid", mark, "error", err)
		err = nil
	}
	w.a.plans.Invalidate()
	w.a.plans.Schema().InvalidateAll()
	if rerr := w.conn.init(ctx, w.a.cfg.BinlogApplied, w.a.cfg.LockWaitTimeout); rerr != nil && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("transaction %s: statement %q: %w", describeTxn(t), abbreviate(st.Query, 300), err)
	}
	return nil
}

// sessionFor sets what the source's query event recorded.
func sessionFor(st *txn.Statement) string {
	var b strings.Builder
	b.WriteString("SET SESSION ")
	if st.Status.HasSQLMode {
		b.WriteString("sql_mode=" + strconv.FormatUint(st.Status.SQLMode, 10) + ", ")
	}
	if st.Status.ClientCharset != 0 {
		fmt.Fprintf(&b, "character_set_client=%d, collation_connection=%d, ", st.Status.ClientCharset, st.Status.ConnCollation)
	}
	if st.Status.ServerCollat != 0 {
		fmt.Fprintf(&b, "collation_server=%d, ", st.Status.ServerCollat)
	}
	if st.Status.TimeZone != "" {
		b.WriteString("time_zone='" + strings.ReplaceAll(st.Status.TimeZone, "'", "''") + "', ")
	}
	const noFKChecks, relaxedUnique = 1 << 26, 1 << 27
	fmt.Fprintf(&b, "foreign_key_checks=%s, unique_checks=%s", onOff(st.Status.Flags2&noFKChecks == 0), onOff(st.Status.Flags2&relaxedUnique == 0))
	return b.String()
}

// alreadyApplied recognizes the errors a DDL gives when it ran before.
func alreadyApplied(err error) bool {
	switch serverCode(err) {
	case 1050, 1051, 1060, 1061, 1091, 1007, 1008, 1146, 1826, 1022, 1054, 1176, 4031:
		return true
	}
	return false
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
