package replicate

import (
	"context"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/gtid"
)

// DivergedError stops a stream whose target has applied transactions its
// source does not have: after a failover to a replica of the old source
// that had not received the old source's last transactions, or a source
// whose binlog lost its tail. Going on would build on a history without
// them (the new source may even log other transactions under the same
// sequence numbers), so binlane refuses and names them.
type DivergedError struct {
	Source  string
	Missing []MissingRange
}

// MissingRange is what the target has of one server's transactions in one
// MariaDB domain beyond what the source has: From (zero when the source has
// none of that server's in the domain) to To, inclusive.
type MissingRange struct {
	From, To gtid.GTID
}

func (m MissingRange) String() string {
	if m.From.IsZero() {
		return fmt.Sprintf("domain %d up to %s (the source has none of server %d's)", m.To.Domain, m.To, m.To.ServerID)
	}
	if m.From == m.To {
		return m.To.String()
	}
	return m.From.String() + " to " + m.To.String()
}

func (e *DivergedError) Error() string {
	parts := make([]string, len(e.Missing))
	for i, m := range e.Missing {
		parts[i] = m.String()
	}
	return fmt.Sprintf("the target has applied transactions the source %s does not have: %s. They were committed on an earlier "+
		"source after the last one this source has (a failover to a replica that had not received them, or a source that lost "+
		"its binlog's end); binlane does not go on without them. Give this source those transactions first (let it replicate "+
		"them from the old source), or copy into an empty target again", e.Source, strings.Join(parts, ", "))
}

// checkSourceHas refuses a start position holding MariaDB GTIDs the source
// has not binlogged. The source's own refusal (error 1236 in strict mode)
// names one GTID and says nothing about the failover; a source that is
// behind would even wait for the GTID to come, and a later transaction of
// its own with that sequence number would then be taken for it.
//
// @@gtid_binlog_state holds the last sequence number of every (domain,
// server) pair the source binlogged, so the target's GTID d-s-n is on the
// source when the source has (d, s) at n or later.
func checkSourceHas(ctx context.Context, cfg Config, start gtid.Set) error {
	if start.Flavor() != gtid.MariaDB || start.IsEmpty() {
		return nil // MySQL positions are sets the source's own check compares whole
	}
	db, err := cfg.Source.OpenDB("")
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	defer db.Close()
	var state string
	if err := db.QueryRowContext(ctx, "SELECT @@GLOBAL.gtid_binlog_state").Scan(&state); err != nil {
		return fmt.Errorf("read the source's binlog GTID state: %w", err)
	}
	missing, err := missingOnSource(state, start)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &DivergedError{Source: cfg.Source.String(), Missing: missing}
	}
	return nil
}

// missingOnSource compares a MariaDB start position with the source's
// @@gtid_binlog_state.
func missingOnSource(state string, start gtid.Set) ([]MissingRange, error) {
	have := map[[2]uint32]gtid.GTID{}
	for _, part := range strings.Split(state, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		g, err := gtid.Parse(part)
		if err != nil {
			return nil, fmt.Errorf("the source's gtid_binlog_state %q: %w", state, err)
		}
		have[[2]uint32{g.Domain, g.ServerID}] = g
	}
	var missing []MissingRange
	for _, g := range start.Domains() {
		if g.Seq == 0 {
			continue
		}
		got, ok := have[[2]uint32{g.Domain, g.ServerID}]
		if ok && got.Seq >= g.Seq {
			continue
		}
		m := MissingRange{To: g}
		if ok {
			m.From = got
			m.From.Seq++
		}
		missing = append(missing, m)
	}
	return missing, nil
}
