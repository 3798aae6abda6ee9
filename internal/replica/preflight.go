package replica

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/wire"
)

// SourceInfo is what a stream learned about its source on connecting.
type SourceInfo struct {
	Flavor     gtid.Flavor
	Version    string // e.g. "10.11.6-MariaDB-0+deb12u1"
	ServerID   uint32
	ServerUUID string // MySQL only
	Checksum   string // @@binlog_checksum: NONE or CRC32
	// RowImage is @@binlog_row_image: FULL, or an image that leaves
	// columns out (see RowImageNotice).
	RowImage string
	// BinlogFormat is @@global.binlog_format: ROW, MIXED or STATEMENT.
	BinlogFormat string
	// GTIDs is @@gtid_binlog_pos (MariaDB) or @@gtid_executed (MySQL) when
	// the connection was made.
	GTIDs        gtid.Set
	ConnectionID uint32 // of the replication connection
}

// requirement is one server variable binlane depends on.
type requirement struct {
	name string
	ok   func(string) bool
	need string
	fix  string
}

func equalFold(want ...string) func(string) bool {
	return func(v string) bool {
		for _, w := range want {
			if strings.EqualFold(v, w) {
				return true
			}
		}
		return false
	}
}

// requirements are checked on both flavors, in this order.
var requirements = []requirement{
	{"log_bin", equalFold("1", "ON"), "ON", "start the source with binary logging (log_bin in its config file) and restart it"},
	// MIXED and STATEMENT are accepted: what a session logs as a statement
	// the applier runs alone (SourceInfo.BinlogFormat, for the notice).
	{"binlog_format", equalFold("ROW", "MIXED", "STATEMENT"), "ROW, MIXED or STATEMENT", "run SET GLOBAL binlog_format='ROW' on the source and set binlog_format=ROW in its config file"},
	{"binlog_row_image", equalFold("FULL", "MINIMAL", "NOBLOB", "FULL_NODUP"), "FULL, MINIMAL or NOBLOB", "run SET GLOBAL binlog_row_image='FULL' on the source and set binlog_row_image=FULL in its config file"},
	{"binlog_row_metadata", equalFold("FULL"), "FULL", "run SET GLOBAL binlog_row_metadata='FULL' on the source and set binlog_row_metadata=FULL in its config file"},
	{"binlog_checksum", equalFold("NONE", "CRC32"), "NONE or CRC32", "run SET GLOBAL binlog_checksum='CRC32' on the source"},
}

// RowImageNotice says what a source's binlog_row_image other than FULL
// means for the stream ("" for FULL). Each session may set its own, so the
// stream takes partial images whatever the global value; the notice only
// tells the operator what to expect from the global one.
func RowImageNotice(image string) string {
	if image == "" || strings.EqualFold(image, "FULL") {
		return ""
	}
	return fmt.Sprintf("the source's binlog_row_image is %s: rows are applied from partial images, found by the key "+
		"their image holds; a transaction whose image lacks a unique key's value (with MINIMAL: deletes from tables "+
		"with a secondary unique key, updates that change one) takes that table whole and runs after every earlier "+
		"transaction touching it, and one that lacks a child row's reference (with MINIMAL: updates and deletes of "+
		"rows with a foreign key) runs after every earlier change of the parent's keys and of such rows; a change whose "+
		"image cannot name its row on the target (no primary key or NOT NULL unique key there) stops the stream, as "+
		"does, during a copy, an update moving a row into a copied range from one not copied yet", strings.ToUpper(image))
}

// flavorVariables are read after the requirements.
var flavorVariables = map[gtid.Flavor][]string{
	gtid.MariaDB: {"server_id", "gtid_binlog_pos"},
	gtid.MySQL:   {"server_id", "gtid_executed", "server_uuid", "gtid_mode"},
}

var unknownVarRE = regexp.MustCompile(`Unknown system variable '([^']+)'`)

// preflight reads the source's settings on the replication connection and
// checks every requirement, reporting all problems at once. serverID is the
// replica's id (0 skips the collision check).
func preflight(ctx context.Context, c *wire.Conn, serverID uint32, start *Position) (*SourceInfo, error) {
	info := &SourceInfo{Flavor: gtid.MySQL, Version: c.ServerVersion(), ConnectionID: c.ConnectionID()}
	if c.IsMariaDB() {
		info.Flavor = gtid.MariaDB
	}
	names := make([]string, 0, 10)
	for _, r := range requirements {
		names = append(names, r.name)
	}
	names = append(names, flavorVariables[info.Flavor]...)
	vals, err := globals(ctx, c, names)
	if err != nil {
		if m := unknownVarRE.FindStringSubmatch(err.Error()); m != nil && wire.IsServerError(err, wire.ErrCodeUnknownSystemVar) {
			return nil, &PreflightError{Problems: []string{fmt.Sprintf(
				"source %s has no @@%s: binlane needs MariaDB 10.5+ or MySQL 8.0+ (for binlog_row_metadata=FULL)", info.Version, m[1])}}
		}
		return nil, fmt.Errorf("preflight: %w", err)
	}
	var problems []string
	for _, r := range requirements {
		if v := vals[r.name]; !r.ok(v) {
			problems = append(problems, fmt.Sprintf("@@%s is %s, need %s: %s", r.name, v, r.need, r.fix))
		}
	}
	problems = append(problems, info.fill(vals, serverID, start)...)
	if info.Flavor == gtid.MySQL {
		problems = append(problems, mysqlOptionalChecks(ctx, c)...)
	}
	if len(problems) > 0 {
		return nil, &PreflightError{Problems: problems}
	}
	return info, nil
}

// fill copies the flavor's variables into info and checks ids and the
// start position against them.
func (info *SourceInfo) fill(vals map[string]string, serverID uint32, start *Position) []string {
	var problems []string
	info.Checksum = strings.ToUpper(vals["binlog_checksum"])
	info.RowImage = strings.ToUpper(vals["binlog_row_image"])
	info.BinlogFormat = strings.ToUpper(vals["binlog_format"])
	id, err := strconv.ParseUint(vals["server_id"], 10, 32)
	switch {
	case err != nil || id == 0:
		problems = append(problems, fmt.Sprintf("@@server_id is %q: a source needs a nonzero server_id", vals["server_id"]))
	case serverID != 0 && uint32(id) == serverID:
		problems = append(problems, fmt.Sprintf("the replica server id %d is the source's own @@server_id: choose another one", serverID))
	}
	info.ServerID = uint32(id)
	gtidVar := "gtid_binlog_pos"
	if info.Flavor == gtid.MySQL {
		gtidVar = "gtid_executed"
		info.ServerUUID = vals["server_uuid"]
		if start != nil && start.GTIDMode && !strings.EqualFold(vals["gtid_mode"], "ON") {
			problems = append(problems, fmt.Sprintf("@@gtid_mode is %s, need ON to start from a GTID set: enable GTIDs on the source, or start from a file and position", vals["gtid_mode"]))
		}
	}
	set, err := gtid.ParseSet(strings.ReplaceAll(vals[gtidVar], "\n", ""))
	if err != nil {
		problems = append(problems, fmt.Sprintf("@@%s: %v", gtidVar, err))
	}
	info.GTIDs = set
	if start != nil && start.GTIDMode && !start.GTIDs.IsEmpty() && start.GTIDs.Flavor() != info.Flavor {
		problems = append(problems, fmt.Sprintf("the start position '%s' is a %s GTID set, but the source is %s", start.GTIDs, start.GTIDs.Flavor(), info.Flavor))
	}
	return problems
}

// mysqlOptional are settings that only some MySQL versions have, with the
// value binlane cannot follow. binlog_transaction_compression is not one:
// the decoder reads its Transaction_payload events (zstd).
var mysqlOptional = []struct{ name, bad, fix string }{
	{"binlog_row_value_options", "PARTIAL_JSON", "run SET GLOBAL binlog_row_value_options='' on the source (partial JSON updates are not supported)"},
}

// mysqlOptionalChecks covers settings that only some MySQL versions have
// (an unknown variable there means the feature does not exist: fine).
func mysqlOptionalChecks(ctx context.Context, c *wire.Conn) []string {
	var problems []string
	for _, chk := range mysqlOptional {
		vals, err := globals(ctx, c, []string{chk.name})
		if err != nil {
			if !wire.IsServerError(err, wire.ErrCodeUnknownSystemVar) {
				problems = append(problems, fmt.Sprintf("read @@%s: %v", chk.name, err))
			}
			continue
		}
		if p := mysqlOptionalProblem(chk.name, vals[chk.name]); p != "" {
			problems = append(problems, p)
		}
	}
	return problems
}

// mysqlOptionalProblem decides whether the source's value of an optional
// MySQL setting stops binlane, and says what to change ("" when it does
// not).
func mysqlOptionalProblem(name, value string) string {
	for _, chk := range mysqlOptional {
		if chk.name == name && (strings.EqualFold(value, chk.bad) || value == "1" && chk.bad == "ON") {
			return fmt.Sprintf("@@%s is %s: %s", name, value, chk.fix)
		}
	}
	return ""
}

// globals reads global variables in one query; NULL reads as "".
func globals(ctx context.Context, c *wire.Conn, names []string) (map[string]string, error) {
	sel := make([]string, len(names))
	for i, n := range names {
		sel[i] = "@@global." + n
	}
	res, err := c.Query(ctx, "SELECT "+strings.Join(sel, ", "))
	if err != nil {
		return nil, err
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != len(names) {
		return nil, fmt.Errorf("reading %d variables: got %d rows", len(names), len(res.Rows))
	}
	out := make(map[string]string, len(names))
	for i, n := range names {
		if v := res.Rows[0][i]; v != nil {
			out[n] = *v
		}
	}
	return out, nil
}

// Inspect connects to the source, runs the preflight checks and returns
// what it learned. Only Addr, the credentials and TLS of cfg are used
// (ServerID too, when set, for the collision check).
func Inspect(ctx context.Context, cfg Config) (*SourceInfo, error) {
	c, err := dial(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return preflight(ctx, c, cfg.ServerID, nil)
}

// CurrentPosition returns the source's position now: its GTID state
// (@@gtid_binlog_pos on MariaDB, @@gtid_executed on MySQL) together with
// the matching binlog file and offset, in GTID mode. A stream started from
// it sees every transaction committed after the call. It needs BINLOG
// MONITOR (MariaDB 10.5+) or REPLICATION CLIENT (MySQL).
func CurrentPosition(ctx context.Context, cfg Config) (Position, error) {
	c, err := dial(ctx, &cfg)
	if err != nil {
		return Position{}, err
	}
	defer c.Close()
	info, err := preflight(ctx, c, cfg.ServerID, nil)
	if err != nil {
		return Position{}, err
	}
	return currentPosition(ctx, c, info.Flavor)
}

func dial(ctx context.Context, cfg *Config) (*wire.Conn, error) {
	if cfg.Addr == "" {
		return nil, &ConfigError{Msg: "no source address"}
	}
	return wire.Dial(ctx, wire.Config{Addr: cfg.Addr, User: cfg.User, Password: cfg.Password, TLS: cfg.TLS,
		TLSOptional: cfg.TLSOptional, ServerPublicKey: cfg.ServerPublicKey})
}

var errNoBinlog = errors.New("the source reports no binary log (is log_bin on, and does the user have BINLOG MONITOR / REPLICATION CLIENT?)")
