package position

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/binlane/binlane/internal/sqlquote"
)

// XATable records the XA transactions of the source a stream prepared on
// the target and has not finished yet: the source's XA COMMIT or XA
// ROLLBACK finishes them later. The row is written in the same target
// transaction as the position after the prepare and removed in the one
// after the finish, so a run that finds it knows the prepare was applied;
// one that does not, and meets the finish, knows the prepare came before
// the stream's start and its rows are not on the target.
const XATable = "`binlane`.`xa_prepared`"

// XADDL creates XATable.
const XADDL = `CREATE TABLE IF NOT EXISTS ` + XATable + ` (
	stream VARCHAR(64) NOT NULL,
	xid VARCHAR(400) NOT NULL,
	gtid VARCHAR(255) NOT NULL DEFAULT '',
	prepared_at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
	PRIMARY KEY (stream, xid)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

// AppendXAPrepared appends the statement that records a prepared XA
// transaction, for the transaction that saves the position after it.
func AppendXAPrepared(buf []byte, stream, xid, gtid string) []byte {
	buf = append(buf, "REPLACE INTO "+XATable+" (stream, xid, gtid) VALUES ("...)
	buf = sqlquote.AppendString(buf, stream)
	buf = append(buf, ',')
	buf = sqlquote.AppendString(buf, xid)
	buf = append(buf, ',')
	buf = sqlquote.AppendString(buf, gtid)
	return append(buf, ')')
}

// AppendXAFinished appends the statement that forgets a finished one.
func AppendXAFinished(buf []byte, stream, xid string) []byte {
	buf = append(buf, "DELETE FROM "+XATable+" WHERE stream="...)
	buf = sqlquote.AppendString(buf, stream)
	buf = append(buf, " AND xid="...)
	return sqlquote.AppendString(buf, xid)
}

// XAPrepared reports whether the stream prepared xid on the target and did
// not finish it.
func XAPrepared(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, stream, xid string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+XATable+" WHERE stream = ? AND xid = ?", stream, xid).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", XATable, err)
	}
	return n > 0, nil
}
