package replica

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/wire"
)

// currentPosition reads the source's GTID state and binlog coordinates so
// that they match.
func currentPosition(ctx context.Context, c *wire.Conn, flavor gtid.Flavor) (Position, error) {
	if flavor == gtid.MySQL {
		return mysqlCurrentPosition(ctx, c)
	}
	// MariaDB has no statement returning both at once. Read the GTID state
	// on both sides of SHOW MASTER STATUS: equal readings mean no
	// transaction was binlogged in between. A busy source binlogs between
	// most readings: the pause between tries grows (to 25 ms, 0.6 s in
	// all) so that one falls into a gap between its commits.
	for attempt := 0; attempt < unstableTries; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(time.Duration(min(attempt, 25)) * time.Millisecond):
			case <-ctx.Done():
				return Position{}, ctx.Err()
			}
		}
		before, err := globals(ctx, c, []string{"gtid_binlog_pos"})
		if err != nil {
			return Position{}, fmt.Errorf("current position: %w", err)
		}
		file, pos, _, err := masterStatus(ctx, c)
		if err != nil {
			return Position{}, err
		}
		after, err := globals(ctx, c, []string{"gtid_binlog_pos"})
		if err != nil {
			return Position{}, fmt.Errorf("current position: %w", err)
		}
		if before["gtid_binlog_pos"] != after["gtid_binlog_pos"] {
			continue
		}
		set, err := gtid.ParseSet(after["gtid_binlog_pos"])
		if err != nil {
			return Position{}, fmt.Errorf("current position: @@gtid_binlog_pos: %w", err)
		}
		return Position{GTIDMode: true, GTIDs: set, File: file, Pos: pos}, nil
	}
	return Position{}, fmt.Errorf("current position: %w", ErrUnstablePosition)
}

// unstableTries bounds the readings of the current position.
const unstableTries = 40

// ErrUnstablePosition: the source binlogged between every two readings of
// its GTID state; a later try may find a gap.
var ErrUnstablePosition = fmt.Errorf("the source kept committing; no stable reading of @@gtid_binlog_pos in %d tries", unstableTries)

// mysqlCurrentPosition uses SHOW MASTER STATUS, whose Executed_Gtid_Set
// matches its file and position.
func mysqlCurrentPosition(ctx context.Context, c *wire.Conn) (Position, error) {
	file, pos, executed, err := masterStatus(ctx, c)
	if err != nil {
		return Position{}, err
	}
	set, err := gtid.ParseSet(strings.ReplaceAll(executed, "\n", ""))
	if err != nil {
		return Position{}, fmt.Errorf("current position: Executed_Gtid_Set: %w", err)
	}
	return Position{GTIDMode: true, GTIDs: set, File: file, Pos: pos}, nil
}

// masterStatus runs SHOW MASTER STATUS, or SHOW BINARY LOG STATUS on MySQL
// 8.4, which dropped the old name.
func masterStatus(ctx context.Context, c *wire.Conn) (file string, pos uint64, executed string, err error) {
	res, err := c.Query(ctx, "SHOW MASTER STATUS")
	if wire.IsServerError(err, 1064) {
		res, err = c.Query(ctx, "SHOW BINARY LOG STATUS")
	}
	if err != nil {
		return "", 0, "", fmt.Errorf("current position: %w", err)
	}
	if len(res.Rows) == 0 {
		return "", 0, "", errNoBinlog
	}
	row := res.Rows[0]
	get := func(name string) string {
		if i := res.Column(name); i >= 0 && row[i] != nil {
			return *row[i]
		}
		return ""
	}
	pos, err = strconv.ParseUint(get("Position"), 10, 64)
	if err != nil || get("File") == "" {
		return "", 0, "", fmt.Errorf("current position: unexpected SHOW MASTER STATUS row %q", get("File"))
	}
	return get("File"), pos, get("Executed_Gtid_Set"), nil
}

// oldestGTIDPosition turns MariaDB's "empty GTID set" into the GTID state
// at the start of the oldest binlog the source still has. MariaDB streams
// from its first binlog for an empty @slave_connect_state only while that
// file is binlog number one: once older files are purged it answers 1236
// ("Could not find GTID state requested by slave in any binlog files"),
// checked on 10.11.
func oldestGTIDPosition(ctx context.Context, c *wire.Conn) (gtid.Set, error) {
	res, err := c.Query(ctx, "SHOW BINARY LOGS")
	if err != nil {
		return gtid.Set{}, fmt.Errorf("find the oldest binlog: %w", err)
	}
	if len(res.Rows) == 0 || res.Rows[0][0] == nil {
		return gtid.Set{}, errNoBinlog
	}
	oldest := *res.Rows[0][0]
	res, err = c.Query(ctx, "SELECT BINLOG_GTID_POS("+sqlquote.String(oldest)+", 4)")
	if err != nil {
		return gtid.Set{}, fmt.Errorf("GTID position of the oldest binlog %s: %w", oldest, err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] == nil {
		return gtid.Set{}, fmt.Errorf("GTID position of the oldest binlog %s: none (purged meanwhile?)", oldest)
	}
	set, err := gtid.ParseSet(*res.Rows[0][0])
	if err != nil {
		return gtid.Set{}, fmt.Errorf("GTID position of the oldest binlog %s: %w", oldest, err)
	}
	return set, nil
}
