package cutover

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sqlerr"
)

// Freeze modes.
const (
	// FreezeReadOnly: binlane sets the source read-only and waits for the
	// transactions with changes that are still open to end.
	FreezeReadOnly = "read-only"
	// FreezeNone: the application stops writing; binlane waits until the
	// source's position stops moving.
	FreezeNone = "none"
)

// TimeoutError says a step did not finish within --timeout; the cut-over
// was rolled back.
type TimeoutError struct {
	Step   string
	After  time.Duration
	Detail string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%s did not finish within --timeout %s: %s", e.Step, e.After, e.Detail)
}

// freeze stops the source's writes the configured way and returns its
// final position P: no transaction can commit on it after P any more
// (read-only, except accounts that bypass read_only), or none did for the
// quiet period (none).
func (c *cut) freeze(ctx context.Context, deadline time.Time) (gtid.Set, error) {
	if c.cfg.Freeze == FreezeReadOnly {
		return c.freezeReadOnly(ctx, deadline)
	}
	return c.freezeQuiet(ctx, deadline)
}

// freezeReadOnly sets read_only and waits for the transactions that made
// changes and are still open: they cannot commit any more (read_only fails
// their commit), but a rollback of the cut-over within --timeout lets them.
// SET GLOBAL read_only itself waits for write statements still running (and
// for commits in progress), within the session's lock_wait_timeout.
func (c *cut) freezeReadOnly(ctx context.Context, deadline time.Time) (gtid.Set, error) {
	if !c.facts.sourceReadOnly {
		// Recorded before the change: a rollback, by this process or the
		// next run after a crash, makes the source writable again.
		if err := position.UpdateCutover(ctx, c.tgt, c.cfg.Stream, c.token, map[position.CutoverColumn]any{position.CutoverFrozeSource: FreezeReadOnly}); err != nil {
			return gtid.Set{}, err
		}
		if err := setReadOnly(ctx, c.src, true, time.Until(deadline)); err != nil {
			if sqlerr.Is(err, sqlerr.LockWaitTimeout) {
				return gtid.Set{}, &TimeoutError{Step: "freeze", After: c.cfg.Timeout,
					Detail: "SET GLOBAL read_only waited for statements still running on the source (a long write, LOCK TABLES, FLUSH TABLES)"}
			}
			return gtid.Set{}, fmt.Errorf("source: make it read-only: %w", err)
		}
		c.log.Info("the source is read-only")
	}
	for {
		// Read no earlier than innodbTrxCache after the change, and then
		// no faster: what the server shows is at most that old.
		if err := sleep(ctx, innodbTrxCache); err != nil {
			return gtid.Set{}, err
		}
		open, err := openWrites(ctx, c.src)
		if err != nil {
			return gtid.Set{}, err
		}
		if len(open) == 0 {
			return sourcePosition(ctx, c.src, c.facts.source)
		}
		if time.Now().After(deadline) {
			return gtid.Set{}, &TimeoutError{Step: "freeze", After: c.cfg.Timeout,
				Detail: fmt.Sprintf("%d transactions with uncommitted changes are still open on the source: %s", len(open), strings.Join(open, "; "))}
		}
	}
}

// innodbTrxCache: InnoDB serves information_schema.INNODB_TRX from a cache
// it refreshes only when the last refresh is more than 100 ms old, so a
// read less than that after a change (or after another reader) can miss
// the transaction that just made one.
const innodbTrxCache = 150 * time.Millisecond

// freezeQuiet waits until the source's position has not moved for the
// quiet period (and, when the account can see them, no transaction with
// changes is open).
func (c *cut) freezeQuiet(ctx context.Context, deadline time.Time) (gtid.Set, error) {
	last, err := sourcePosition(ctx, c.src, c.facts.source)
	if err != nil {
		return last, err
	}
	since := time.Now()
	var open []string
	for {
		if err := sleep(ctx, max(innodbTrxCache, min(200*time.Millisecond, c.cfg.Quiet/4))); err != nil {
			return gtid.Set{}, err
		}
		now, err := sourcePosition(ctx, c.src, c.facts.source)
		if err != nil {
			return now, err
		}
		if !now.Equal(last) {
			last, since = now, time.Now()
		}
		if c.facts.seesTrx {
			if open, err = openWrites(ctx, c.src); err != nil {
				return gtid.Set{}, err
			}
		}
		if len(open) == 0 && time.Since(since) >= c.cfg.Quiet {
			return last, nil
		}
		if time.Now().After(deadline) {
			detail := fmt.Sprintf("the source's position still moves (last at %s, %s ago): stop the application's writes first, "+
				"or let binlane freeze them (--freeze read-only)", last, time.Since(since).Round(time.Millisecond))
			if len(open) > 0 {
				detail = fmt.Sprintf("%d transactions with uncommitted changes are still open on the source: %s", len(open), strings.Join(open, "; "))
			}
			return gtid.Set{}, &TimeoutError{Step: "freeze", After: c.cfg.Timeout, Detail: detail}
		}
	}
}

// setReadOnly sets the server's read_only, waiting at most wait for the
// global read lock that takes.
func setReadOnly(ctx context.Context, db *sql.DB, on bool, wait time.Duration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("SET SESSION lock_wait_timeout = %d", max(1, int(wait.Seconds())))); err != nil {
		return err
	}
	value := "OFF"
	if on {
		value = "ON"
	}
	_, err = conn.ExecContext(ctx, "SET GLOBAL read_only = "+value)
	// The connection goes back to the pool: its session as it was.
	if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "SET SESSION lock_wait_timeout = DEFAULT"); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// openWrites lists the transactions that changed rows and are still open
// (PROCESS), but binlane's own session.
func openWrites(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT x.trx_mysql_thread_id, COALESCE(p.USER, ''), COALESCE(p.HOST, ''),
			TIMESTAMPDIFF(SECOND, x.trx_started, NOW()), x.trx_rows_modified
		FROM information_schema.INNODB_TRX x LEFT JOIN information_schema.PROCESSLIST p ON p.ID = x.trx_mysql_thread_id
		WHERE x.trx_rows_modified > 0 AND x.trx_mysql_thread_id <> CONNECTION_ID()
		ORDER BY x.trx_started`)
	if err != nil {
		return nil, fmt.Errorf("source: list the open transactions (this needs PROCESS): %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, age, changed int64
		var user, host string
		if err := rows.Scan(&id, &user, &host, &age, &changed); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("connection %d (%s@%s) open for %ds with %d rows changed", id, user, host, age, changed))
	}
	return out, rows.Err()
}

// sourcePosition reads a server's binlog position: every transaction it
// committed (MariaDB @@gtid_binlog_pos, MySQL @@gtid_executed).
func sourcePosition(ctx context.Context, db *sql.DB, srv dsn.Server) (gtid.Set, error) {
	q := "SELECT @@global.gtid_binlog_pos"
	if !srv.MariaDB() {
		q = "SELECT @@global.gtid_executed"
	}
	var text string
	if err := db.QueryRowContext(ctx, q).Scan(&text); err != nil {
		return gtid.Set{}, fmt.Errorf("read the binlog position: %w", err)
	}
	return gtid.ParseSet(strings.ReplaceAll(text, "\n", ""))
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
