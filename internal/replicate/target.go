package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
)

// target is what a run learned about the target.
type target struct {
	driver     *mysql.Config
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
	driver, err := cfg.Target.DriverConfig("")
	if err != nil {
		return nil, err
	}
	t := &target{driver: driver}
	var version string
	if err := meta.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Target, err)
	}
	t.flavor = sqlerr.MySQL
	if strings.Contains(strings.ToLower(version), "mariadb") {
		t.flavor = sqlerr.MariaDB
	}
	if t.collations, err = schema.LoadCollations(ctx, meta); err != nil {
		return nil, err
	}
	if t.cache, err = schema.NewCache(ctx, meta); err != nil {
		return nil, err
	}
	return t, checkTargetTables(ctx, meta, cfg.Rules, cfg.AllowTriggers)
}

// checkTargetTables refuses replicated target tables that binlane cannot
// apply to correctly. information_schema shows a table's triggers only to
// users with the TRIGGER privilege on it (the README's grants include it).
func checkTargetTables(ctx context.Context, meta *sql.DB, rules filter.Rules, allowTriggers bool) error {
	tables, err := schema.ReadCatalog(ctx, meta, rules, true)
	if err != nil {
		return fmt.Errorf("read the target's tables: %w", err)
	}
	var problems []string
	for _, t := range tables {
		if t.Type != "BASE TABLE" {
			continue
		}
		q := t.QualifiedName()
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
