package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/wire"
)

// Defaults for zero Config fields.
const (
	DefaultHeartbeatPeriod = 5 * time.Second
	DefaultMinBackoff      = 100 * time.Millisecond
	DefaultMaxBackoff      = 30 * time.Second
	DefaultQueueBytes      = 2 << 20
	// netWriteTimeout (seconds) is raised on the dump connection so that a
	// consumer that stalls (back pressure through the queue and the socket)
	// does not make the source drop the dump.
	netWriteTimeout = 3600
)

// Position is where a stream starts or resumes: a GTID set, or a binlog
// file and the offset of an event in it.
type Position struct {
	// GTIDMode selects GTIDs (true) or File and Pos (false) to start from.
	// A stream updates both whichever mode it started in, but in file mode
	// GTIDs only holds what the stream itself has seen (it starts empty).
	GTIDMode bool
	// GTIDs is MariaDB's per-domain position (the last GTID of each
	// domain) or MySQL's executed set. The empty set means "from the oldest
	// binlog the source still has". To start "from now", use
	// CurrentPosition, which reads @@gtid_binlog_pos on MariaDB (never
	// @@gtid_current_pos: it can hold replica-applied GTIDs that were never
	// binlogged, which the source then refuses with error 1236) and
	// @@gtid_executed on MySQL.
	GTIDs gtid.Set
	File  string
	Pos   uint64
}

// StartAtGTID returns a GTID-mode position.
func StartAtGTID(set gtid.Set) Position { return Position{GTIDMode: true, GTIDs: set} }

// StartAtFile returns a file-and-position-mode position.
func StartAtFile(file string, pos uint64) Position { return Position{File: file, Pos: pos} }

// Clone returns a copy that shares nothing with p.
func (p Position) Clone() Position {
	p.GTIDs = p.GTIDs.Clone()
	return p
}

func (p Position) String() string {
	if p.GTIDMode {
		if p.GTIDs.IsEmpty() {
			return "GTID position '' (the oldest binlog)"
		}
		return fmt.Sprintf("GTID position '%s'", p.GTIDs)
	}
	return fmt.Sprintf("%s:%d", p.File, p.Pos)
}

// Config describes one replication stream.
type Config struct {
	// Config is the connection to the source: its address (host:port, or
	// a Unix socket), the account (it needs REPLICATION SLAVE, and BINLOG
	// MONITOR on MariaDB 10.5+ for CurrentPosition), TLS (TLSOptional
	// continues in plaintext when the source does not offer it: ssl-mode
	// preferred) and ServerPublicKey (pins the source's RSA key for
	// caching_sha2_password over plain TCP; without it the key is
	// requested). dsn.DSN.WireConfig fills it from a server address. DB and
	// MaxPacket are not used: a replication connection has no default
	// database, and its packets are events.
	wire.Config
	// ServerID identifies this replica to the source. It must be nonzero,
	// differ from the source's @@server_id, and be unique among the
	// source's replicas: a source ends an older dump with the same id.
	ServerID uint32
	Start    Position
	// HeartbeatPeriod is how often an idle source sends a heartbeat. A
	// read waits at most three periods: silence longer than that means a
	// dead connection, and the stream reconnects.
	HeartbeatPeriod time.Duration
	// NonBlocking makes the source end the stream at the end of its binlog
	// (Next then returns io.EOF) instead of waiting for new events.
	NonBlocking bool
	// AnnotateRows asks a MariaDB source for ANNOTATE_ROWS events (the SQL
	// text behind row events).
	AnnotateRows bool
	Logger       *slog.Logger
	// MinBackoff and MaxBackoff bound the wait between reconnect attempts,
	// which doubles after each failure.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// MaxRetries bounds consecutive failed reconnect attempts; 0 retries
	// until the stream is closed.
	MaxRetries int
	// QueueBytes bounds the decoded events waiting for Next, counted by
	// their raw size. One event larger than the bound still passes, alone.
	QueueBytes int
}

// ConfigError reports an invalid Config.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return "replica config: " + e.Msg }

// withDefaults validates cfg and fills zero fields.
func (cfg Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return cfg, &ConfigError{Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case cfg.Addr == "":
		return bad("no source address")
	case cfg.ServerID == 0:
		return bad("server id must be nonzero (the source refuses replicas with id 0)")
	case cfg.HeartbeatPeriod < 0 || cfg.MinBackoff < 0 || cfg.MaxBackoff < 0 || cfg.MaxRetries < 0 || cfg.QueueBytes < 0:
		return bad("heartbeat period, backoff, retries and queue size must not be negative")
	case cfg.HeartbeatPeriod > 0 && cfg.HeartbeatPeriod < 10*time.Millisecond:
		return bad("heartbeat period %s is below 10ms", cfg.HeartbeatPeriod)
	case cfg.HeartbeatPeriod > time.Duration(math.MaxUint32)*time.Second/1000:
		return bad("heartbeat period %s is too long", cfg.HeartbeatPeriod)
	}
	if err := validateStart(cfg.Start); err != nil {
		return bad("%v", err)
	}
	if cfg.HeartbeatPeriod == 0 {
		cfg.HeartbeatPeriod = DefaultHeartbeatPeriod
	}
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = max(DefaultMaxBackoff, cfg.MinBackoff)
	}
	if cfg.MinBackoff > cfg.MaxBackoff {
		return bad("min backoff %s exceeds max backoff %s", cfg.MinBackoff, cfg.MaxBackoff)
	}
	if cfg.QueueBytes == 0 {
		cfg.QueueBytes = DefaultQueueBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Start = cfg.Start.Clone()
	return cfg, nil
}

func validateStart(p Position) error {
	if p.GTIDMode {
		return nil
	}
	switch {
	case p.File == "":
		return errors.New("start position: give a GTID set or a binlog file name")
	case p.Pos < 4:
		return fmt.Errorf("start position %s: binlog events start at offset 4", p)
	case p.Pos > math.MaxUint32:
		return fmt.Errorf("start position %s: offsets past 4 GiB cannot be requested with COM_BINLOG_DUMP; start from a GTID instead", p)
	}
	return nil
}

// readTimeout is how long a read may wait before the connection counts as
// dead: three heartbeat periods, and never less than 300ms.
func (cfg *Config) readTimeout() time.Duration {
	return max(3*cfg.HeartbeatPeriod, 300*time.Millisecond)
}
