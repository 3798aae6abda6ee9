package position

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Save is the position written with a transaction.
type Save struct {
	GTID     string
	File     string
	Pos      uint64
	LastGTID string
	SourceTS uint32 // seconds; 0 leaves the column as it is
	Applied  int    // transactions covered by this save
	// ClearDDL ends the statement mark: the statement it names is applied
	// by the transaction this save commits with.
	ClearDDL bool
	// TempTables, when set, replaces the saved temporary tables of the
	// source's sessions (LoadTempTables).
	TempTables *string
}

// AppendUpdate appends the statement that moves the stream's position, for
// the caller to send inside the transaction it covers. It fails (the
// position would become NULL, which the column refuses) unless the stream
// still belongs to owner and, when guard names a user variable, that
// variable is 0 — so a COMMIT sent after it in the same multi-statement
// round trip never runs for a process that lost the stream, or after a
// statement that did not do what it should have.
func AppendUpdate(buf []byte, name string, s Save, owner, guard string) []byte {
	buf = append(buf, "UPDATE "+Table+" SET gtid_pos=IF(owner="...)
	buf = sqlquote.AppendString(buf, owner)
	if guard != "" {
		buf = append(buf, " AND "+guard+"=0"...)
	}
	buf = append(buf, ',')
	buf = sqlquote.AppendString(buf, s.GTID)
	buf = append(buf, ",NULL)"...)
	buf = append(buf, ",binlog_file="...)
	buf = sqlquote.AppendString(buf, s.File)
	buf = append(buf, ",binlog_pos="...)
	buf = strconv.AppendUint(buf, s.Pos, 10)
	buf = append(buf, ",last_gtid="...)
	buf = sqlquote.AppendString(buf, s.LastGTID)
	if s.SourceTS != 0 {
		buf = append(buf, ",source_ts=FROM_UNIXTIME("...)
		buf = strconv.AppendUint(buf, uint64(s.SourceTS), 10)
		buf = append(buf, ')')
	}
	if s.ClearDDL {
		buf = append(buf, ",ddl_gtid='',ddl_state='',ddl_fingerprint='',ddl_conn=0"...)
	}
	if s.TempTables != nil {
		buf = append(buf, ",temp_tables="...)
		buf = sqlquote.AppendString(buf, *s.TempTables)
	}
	buf = append(buf, ",applied_trx=applied_trx+"...)
	buf = strconv.AppendInt(buf, int64(s.Applied), 10)
	buf = append(buf, " WHERE name="...)
	return sqlquote.AppendString(buf, name)
}

// AppendCommittedGuard appends a statement that fails (error 1242) unless
// the session has no transaction open and stream's position is gtid: the
// first statement of a round trip sent before the answer to the one that
// commits gtid (apply's pipelined round trips). The server runs the round
// trip after that one whatever its answer, so the guard stops it when the
// commit failed: its transaction still open (a statement failed), or
// rolled back (a deadlock; the position is then the one before). It reads
// the stream's row without locking it (MariaDB: @@in_transaction).
func AppendCommittedGuard(buf []byte, name, gtid string) []byte {
	buf = append(buf, "SET @binlane_ahead=(SELECT 1 FROM (SELECT 1 UNION ALL SELECT 2) g WHERE @@in_transaction OR NOT EXISTS "+
		"(SELECT 1 FROM "+Table+" WHERE name="...)
	buf = sqlquote.AppendString(buf, name)
	buf = append(buf, " AND gtid_pos="...)
	buf = sqlquote.AppendString(buf, gtid)
	return append(buf, "));\n"...)
}

// SaveIdle writes a position on its own (transactions that changed nothing
// on the target), on behalf of owner.
func SaveIdle(ctx context.Context, db *sql.DB, name, owner string, s Save) error {
	if _, err := db.ExecContext(ctx, string(AppendUpdate(nil, name, s, owner, ""))); err != nil {
		if IsNotOwner(err) {
			return checkOwner(ctx, db, name, owner)
		}
		return fmt.Errorf("save position %s: %w", s.GTID, err)
	}
	return nil
}

// IsNotOwner recognizes the server's refusal of a position update by a
// process that lost the stream (or after a failed guard): the NULL position
// of AppendUpdate.
func IsNotOwner(err error) bool {
	return sqlerr.Is(err, sqlerr.BadNull) && strings.Contains(err.Error(), "gtid_pos")
}

// AppendDeferred appends the statement that records a statement binlane
// keeps instead of running, for the caller to send inside the transaction
// whose position covers it.
func AppendDeferred(buf []byte, stream, gtid, schemaName, reason, statement string) []byte {
	buf = append(buf, "INSERT INTO "+DeferredTable+" (stream, gtid, schema_name, reason, statement) VALUES ("...)
	for i, v := range []string{stream, gtid, schemaName, reason, statement} {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = sqlquote.AppendString(buf, v)
	}
	return append(buf, ')')
}

// Deferred is a statement kept for the user.
type Deferred struct {
	GTID, Schema, Reason, Statement string
	RecordedAt                      time.Time
}

// ListDeferred returns a stream's deferred statements, oldest first.
func ListDeferred(ctx context.Context, db *sql.DB, stream string) ([]Deferred, error) {
	rows, err := db.QueryContext(ctx, "SELECT gtid, schema_name, reason, statement, UNIX_TIMESTAMP(recorded_at) FROM "+
		DeferredTable+" WHERE stream = ? ORDER BY id", stream)
	if isNoTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read deferred statements: %w", err)
	}
	defer rows.Close()
	var out []Deferred
	for rows.Next() {
		var d Deferred
		var at float64
		if err := rows.Scan(&d.GTID, &d.Schema, &d.Reason, &d.Statement, &at); err != nil {
			return nil, err
		}
		d.RecordedAt = unix(at)
		out = append(out, d)
	}
	return out, rows.Err()
}

// Tail is what a target transaction records in binlane's tables before it
// commits, in the same transaction as its rows: the statements it keeps
// instead of running, the XA transaction it prepared or finished, the
// copy's progress, and last the stream's position, guarded by its owner.
// rowsql.Writer.Commit renders it, in this order.
type Tail struct {
	Stream, Owner string
	Save          Save
	Deferred      []Deferred // RecordedAt is the server's
	// XAPrepared records, XAFinished forgets, an XA transaction the
	// stream prepared on the target ("": none).
	XAPrepared, XAPreparedGTID, XAFinished string
	Copy                                   []CopyProgress
}
