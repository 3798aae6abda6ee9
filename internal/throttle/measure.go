package throttle

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sqlerr"
)

// measures are what the limits are compared with at one check.
type measures struct {
	threads    int
	threadsErr error
	replicas   []replicaLag
}

type replicaLag struct {
	name string
	lag  time.Duration
	err  error // errLagUnknown, or why it could not be read
}

// errLagUnknown is a replica that reports no lag: its replication is not
// running (Seconds_Behind_Master is NULL), or it replicates from nowhere.
var errLagUnknown = errors.New("lag unknown")

// decide is the throttle's rule: the first limit exceeded or unreadable
// names the reason; "" lets work go on.
func decide(maxThreads int, maxLag time.Duration, m measures) string {
	if maxThreads > 0 {
		switch {
		case m.threadsErr != nil:
			return fmt.Sprintf("source Threads_running unreadable (limit %d): %v", maxThreads, m.threadsErr)
		case m.threads > maxThreads:
			return fmt.Sprintf("source Threads_running %d > %d", m.threads, maxThreads)
		}
	}
	if maxLag > 0 {
		if len(m.replicas) == 0 {
			return fmt.Sprintf("--max-replica-lag %s with no replica to watch", maxLag)
		}
		for _, r := range m.replicas {
			switch {
			case r.err != nil:
				return fmt.Sprintf("replica %s: lag unreadable (limit %s): %v", r.name, maxLag, r.err)
			case r.lag > maxLag:
				return fmt.Sprintf("replica %s is %s behind (> %s)", r.name, r.lag.Round(time.Millisecond), maxLag)
			}
		}
	}
	return ""
}

// threadsRunning reads the source's Threads_running, less the session
// reading it (which always runs then).
func threadsRunning(ctx context.Context, db *sql.DB) (int, error) {
	if db == nil {
		return 0, errors.New("no connection to the source")
	}
	var name string
	var running int
	err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Threads_running'").Scan(&name, &running)
	return max(running-1, 0), err
}

// lagProbe reads one replica's lag; it learns the replica's flavor (and
// so its statement) at the first read that reaches it.
type lagProbe struct {
	replica   Replica
	heartbeat string
	queries   []string // the replication status statements to try, the one that worked first
}

func (p *lagProbe) read(ctx context.Context) (time.Duration, error) {
	if p.heartbeat != "" {
		return heartbeatLag(ctx, p.replica.DB, p.heartbeat)
	}
	if p.queries == nil {
		srv, err := dsn.ReadServer(ctx, p.replica.DB)
		if err != nil {
			return 0, err
		}
		p.queries = statusQueries(srv)
	}
	lag, err := statusLag(ctx, p.replica.DB, p.queries[0])
	for sqlerr.Is(err, sqlerr.ParseError) && len(p.queries) > 1 {
		p.queries = p.queries[1:] // an older server (MySQL before 8.0.22): the next form
		lag, err = statusLag(ctx, p.replica.DB, p.queries[0])
	}
	return lag, err
}

// statusQueries are the statements that show a replica's replication, by
// server, first the one to try.
func statusQueries(s dsn.Server) []string {
	if s.MariaDB() {
		// Every replication connection of a multi-source replica.
		return []string{"SHOW ALL SLAVES STATUS"}
	}
	return []string{"SHOW REPLICA STATUS", "SHOW SLAVE STATUS"}
}

// statusLag runs a replication status statement and returns the largest
// lag of its rows.
func statusLag(ctx context.Context, db *sql.DB, query string) (time.Duration, error) {
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	var values [][]*string
	for rows.Next() {
		row := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return 0, err
		}
		vals := make([]*string, len(cols))
		for i, v := range row {
			if v.Valid {
				vals[i] = &v.String
			}
		}
		values = append(values, vals)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	return lagOfRows(cols, values)
}

// lagOfRows reads Seconds_Behind_Master (Seconds_Behind_Source on MySQL
// 8.0.22+) of each replication connection and returns the largest; NULL
// on any connection, or no connection at all, is errLagUnknown.
func lagOfRows(cols []string, rows [][]*string) (time.Duration, error) {
	col := -1
	for i, c := range cols {
		if c == "Seconds_Behind_Master" || c == "Seconds_Behind_Source" {
			col = i
		}
	}
	if col < 0 {
		return 0, errors.New("no Seconds_Behind_Master column in the replication status")
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("%w: not a replica (its replication status is empty)", errLagUnknown)
	}
	var worst time.Duration
	for _, r := range rows {
		if r[col] == nil {
			return 0, fmt.Errorf("%w: Seconds_Behind_Master is NULL (replication stopped or broken)", errLagUnknown)
		}
		s, err := strconv.ParseInt(*r[col], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("Seconds_Behind_Master %q: %w", *r[col], err)
		}
		worst = max(worst, time.Duration(s)*time.Second)
	}
	return worst, nil
}

// heartbeatLag is the age of the newest row of a pt-heartbeat table,
// whose ts column pt-heartbeat --utc writes in UTC.
func heartbeatLag(ctx context.Context, db *sql.DB, table string) (time.Duration, error) {
	q, err := heartbeatQuery(table)
	if err != nil {
		return 0, err
	}
	var us sql.NullInt64
	if err := db.QueryRowContext(ctx, q).Scan(&us); err != nil {
		return 0, err
	}
	if !us.Valid {
		return 0, fmt.Errorf("%w: no heartbeat in %s", errLagUnknown, table)
	}
	lag := time.Duration(us.Int64) * time.Microsecond
	if lag < -time.Minute {
		return 0, fmt.Errorf("the newest heartbeat in %s is %s in the future: run pt-heartbeat with --utc", table, -lag)
	}
	return max(lag, 0), nil
}

// heartbeatQuery is the SELECT of a pt-heartbeat table named db.table.
func heartbeatQuery(table string) (string, error) {
	db, name, ok := strings.Cut(table, ".")
	if !ok || db == "" || name == "" || strings.ContainsAny(table, "`") {
		return "", fmt.Errorf("heartbeat table %q: want db.table", table)
	}
	return "SELECT TIMESTAMPDIFF(MICROSECOND, MAX(ts), UTC_TIMESTAMP(6)) FROM `" + db + "`.`" + name + "`", nil
}
