package sandbox

import (
	"context"
	"fmt"
	"time"
)

// Native replication between sandboxes, for tests of what binlane does
// around MariaDB's own replicas (a source failing over to one). It runs as
// root: it is the test's set-up of the servers, not binlane.

// ReplicateFrom makes s a GTID replica of source (from s's gtid_slave_pos,
// empty on a fresh server: source's whole binlog) and starts it. With the
// sandbox's log_slave_updates and strict GTID mode, s binlogs what it
// applies under source's GTIDs, as a replica that can be promoted must.
func (s *Server) ReplicateFrom(ctx context.Context, source *Server) error {
	return s.Exec(ctx, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='root', "+
		"MASTER_USE_GTID=slave_pos", source.Port), "START SLAVE")
}

// WaitReplicated waits until s, a replica, has applied the GTID position pos.
func (s *Server) WaitReplicated(ctx context.Context, pos string, timeout time.Duration) error {
	db, err := s.Open("")
	if err != nil {
		return err
	}
	defer db.Close()
	var res int
	if err := db.QueryRowContext(ctx, "SELECT MASTER_GTID_WAIT(?, ?)", pos, timeout.Seconds()).Scan(&res); err != nil {
		return fmt.Errorf("sandbox %s: wait for %s: %w", s.Name, pos, err)
	}
	if res != 0 {
		return fmt.Errorf("sandbox %s: has not replicated %s after %s", s.Name, pos, timeout)
	}
	return nil
}

// Promote ends s's replication and forgets its source: the replica a
// failover makes the new primary.
func (s *Server) Promote(ctx context.Context) error {
	return s.Exec(ctx, "STOP SLAVE", "RESET SLAVE ALL")
}
