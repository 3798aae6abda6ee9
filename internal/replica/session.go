package replica

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/wire"
)

// session is one connection streaming a dump.
type session struct {
	conn    *wire.Conn
	info    *SourceInfo
	start   Position // what the dump asked for (after resolving an empty set)
	started time.Time
}

// connectTimeout bounds one connection attempt (dial, TLS, authentication,
// preflight, session setup): a source that accepts TCP but never answers
// must not stall a reconnect forever.
const connectTimeout = 30 * time.Second

// connect dials, checks the source, prepares the session variables and
// starts the dump at pos.
func connect(ctx context.Context, cfg *Config, pos Position, replicaUUID string) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := dial(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &session{conn: conn, started: time.Now()}
	if err := s.setup(ctx, cfg, pos, replicaUUID); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func (s *session) setup(ctx context.Context, cfg *Config, pos Position, replicaUUID string) error {
	info, err := preflight(ctx, s.conn, cfg.ServerID, &pos)
	if err != nil {
		return err
	}
	s.info = info
	if pos.GTIDMode && pos.GTIDs.IsEmpty() && info.Flavor == gtid.MariaDB {
		oldest, err := oldestGTIDPosition(ctx, s.conn)
		switch {
		case wire.IsServerError(err, wire.ErrCodeSpecificAccess):
			// Without BINLOG MONITOR, ask for the empty state: it works
			// as long as the source has purged nothing.
			cfg.Logger.Warn("cannot list the source's binlogs to find the oldest GTID position; "+
				"streaming from an empty GTID state, which the source refuses (error 1236) once it purged binlogs: grant BINLOG MONITOR to fix", "error", err)
		case err != nil:
			return err
		default:
			pos.GTIDs = oldest
		}
	}
	s.start = pos
	for _, q := range sessionStatements(cfg, info.Flavor, pos, replicaUUID) {
		if err := s.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("prepare the replication session: %w", err)
		}
	}
	if err := s.conn.RegisterReplica(ctx, wire.RegisterReplica{ServerID: cfg.ServerID}); err != nil {
		return err
	}
	return s.startDump(ctx, cfg, pos)
}

// sessionStatements are the SETs that make the source stream what binlane
// expects.
//
//   - The checksum variable marks us checksum-aware; its value only decides
//     whether the fake ROTATE sent before the first format description
//     carries a CRC. With 'NONE' it does not; every event read from a file
//     keeps its on-disk checksum whatever we say (checked on MariaDB 10.11
//     with binlog_checksum CRC32 and NONE), and the decoder learns the
//     algorithm from each format description.
//   - The heartbeat period is in nanoseconds.
//   - MariaDB: capability 4 (GTID) gets real GTID and annotate events, not
//     dummy queries; @slave_connect_state switches the dump to GTID mode
//     (so it is only set in GTID mode); strict mode turns a gap or a
//     diverged history into error 1236 rather than a silent skip.
//   - MySQL: a stable random replica UUID per stream lets the source end a
//     zombie dump of ours when we reconnect.
//
// Semi-sync variables are never set, so no packet carries a semi-sync
// header.
func sessionStatements(cfg *Config, flavor gtid.Flavor, pos Position, replicaUUID string) []string {
	hb := cfg.HeartbeatPeriod.Nanoseconds()
	timeout := fmt.Sprintf("SET SESSION net_write_timeout = %d", netWriteTimeout)
	if flavor == gtid.MySQL {
		return []string{
			fmt.Sprintf("SET @source_binlog_checksum = 'NONE', @master_binlog_checksum = 'NONE', "+
				"@source_heartbeat_period = %d, @master_heartbeat_period = %d, @replica_uuid = %s, @slave_uuid = %s",
				hb, hb, quote(replicaUUID), quote(replicaUUID)),
			timeout,
		}
	}
	vars := []string{
		"@master_binlog_checksum = 'NONE'",
		"@mariadb_slave_capability = 4",
		fmt.Sprintf("@master_heartbeat_period = %d", hb),
		"@slave_gtid_strict_mode = 1",
		"@slave_gtid_ignore_duplicates = 0",
	}
	if pos.GTIDMode {
		vars = append(vars, "@slave_connect_state = "+quote(pos.GTIDs.String()))
	}
	return []string{"SET " + strings.Join(vars, ", "), timeout}
}

func (s *session) startDump(ctx context.Context, cfg *Config, pos Position) error {
	var flags uint16
	if cfg.NonBlocking {
		flags |= wire.DumpNonBlock
	}
	if s.info.Flavor == gtid.MySQL && pos.GTIDMode {
		return s.conn.StartBinlogDumpGTID(ctx, wire.BinlogDumpGTID{ServerID: cfg.ServerID, Flags: flags, Pos: 4, GTIDs: pos.GTIDs})
	}
	if s.info.Flavor == gtid.MariaDB && cfg.AnnotateRows {
		flags |= wire.DumpSendAnnotateRows
	}
	d := wire.BinlogDump{ServerID: cfg.ServerID, Flags: flags, Pos: 4}
	if !pos.GTIDMode {
		d.File, d.Pos = pos.File, uint32(pos.Pos)
	}
	return s.conn.StartBinlogDump(ctx, d)
}

// newUUID returns a random (version 4) UUID in text form.
func newUUID() string {
	var u gtid.UUID
	rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u.String()
}
