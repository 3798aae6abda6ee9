package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// target is what a run learned about the target.
type target struct {
	flavor     sqlerr.Flavor
	collations schema.Collations
	cache      *schema.Cache
}

// inspectTarget reads what the applier needs to know of the target and
// checks the replicated tables that exist there: every one must be
// transactional (retries and crash recovery roll back), and none may have
// triggers unless the user allowed them (they would fire a second time for
// what the source's triggers already did).
func inspectTarget(ctx context.Context, meta *sql.DB, cfg *Config) (*target, error) {
	t := &target{}
	srv, err := dsn.ReadServer(ctx, meta)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Target, err)
	}
	t.flavor = srv.Flavor
	if t.collations, err = schema.LoadCollations(ctx, meta); err != nil {
		return nil, err
	}
	if t.cache, err = schema.NewCache(ctx, meta); err != nil {
		return nil, err
	}
	if msg := routineCreation(ctx, meta, cfg.Apply.SkipBinlog); msg != "" {
		cfg.Logger.Warn(msg)
	}
	tables, err := t.cache.Warm(ctx, cfg.Rules)
	if err != nil {
		return nil, fmt.Errorf("read the target's tables: %w", err)
	}
	return t, checkTargetTables(tables, cfg.AllowTriggers)
}

// routineCreation says why a CREATE FUNCTION the source logs would fail
// on the target, if it would: a target that binlogs what binlane applies
// refuses functions not declared DETERMINISTIC, NO SQL or READS SQL DATA
// (error 1418) unless log_bin_trust_function_creators is on, and any
// function from an account without SUPER (error 1419). Most streams never
// see one, so it is a warning at start, not a refusal.
func routineCreation(ctx context.Context, meta *sql.DB, skipBinlog bool) string {
	if skipBinlog {
		return ""
	}
	var logBin, trust int
	err := meta.QueryRowContext(ctx, "SELECT @@log_bin, @@log_bin_trust_function_creators").Scan(&logBin, &trust)
	if err != nil || logBin == 0 || trust == 1 {
		return ""
	}
	return "the target binlogs what binlane applies and its log_bin_trust_function_creators is OFF: a CREATE FUNCTION " +
		"replicated from the source will stop the stream (error 1418/1419). Set log_bin_trust_function_creators=ON on " +
		"the target (SET GLOBAL needs SUPER), or run with --binlog-applied=false"
}

// checkTargetTables refuses replicated target tables (as the cache's Warm
// read them) that binlane cannot apply to correctly. information_schema
// shows a table's triggers only to users with the TRIGGER privilege on it
// (the README's grants include it).
func checkTargetTables(tables []*schema.Table, allowTriggers bool) error {
	var problems []string
	for _, t := range tables {
		q := t.QualifiedName()
		if t.Type == "SYSTEM VERSIONED" {
			problems = append(problems, fmt.Sprintf("table %s: %v", q, txn.ErrVersioned))
			continue
		}
		if t.Type != "BASE TABLE" {
			continue
		}
		if !t.Transactional {
			problems = append(problems, fmt.Sprintf("table %s uses the %s engine, which cannot roll back: binlane's retries and "+
				"crash recovery need a transactional engine (ALTER TABLE %s ENGINE=InnoDB)", q, t.Engine, q))
		}
		if t.HasTriggers && !allowTriggers {
			problems = append(problems, (&plan.TriggerError{Table: q}).Error())
		}
	}
	if len(problems) > 0 {
		return &TargetError{Problems: problems}
	}
	return nil
}

// TargetError lists what must change on the target before replicating.
type TargetError struct{ Problems []string }

func (e *TargetError) Error() string {
	return "the target's replicated tables cannot be applied to safely:\n  - " + strings.Join(e.Problems, "\n  - ")
}
