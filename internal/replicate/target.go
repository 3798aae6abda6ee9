package replicate

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
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
	var version string
	if err := meta.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return nil, fmt.Errorf("target %s: %w", cfg.Target, err)
	}
	t.flavor = sqlerr.MySQL
	if strings.Contains(strings.ToLower(version), "mariadb") {
		t.flavor = sqlerr.MariaDB
	}
	var err error
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
	rows, err := meta.QueryContext(ctx, `SELECT t.TABLE_SCHEMA, t.TABLE_NAME, COALESCE(t.ENGINE, ''), COALESCE(e.TRANSACTIONS, 'YES'),
			(SELECT COUNT(*) FROM information_schema.TRIGGERS g
			  WHERE g.EVENT_OBJECT_SCHEMA = t.TABLE_SCHEMA AND g.EVENT_OBJECT_TABLE = t.TABLE_NAME)
		FROM information_schema.TABLES t LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE
		WHERE t.TABLE_TYPE = 'BASE TABLE' AND t.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys', 'binlane')`)
	if err != nil {
		return fmt.Errorf("read the target's tables: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var sc, name, engine, tx string
		var triggers int
		if err := rows.Scan(&sc, &name, &engine, &tx, &triggers); err != nil {
			return err
		}
		if !rules.Match(sc, name) {
			continue
		}
		q := schema.QuoteName(sc) + "." + schema.QuoteName(name)
		if !strings.EqualFold(tx, "YES") {
			problems = append(problems, fmt.Sprintf("table %s uses the %s engine, which cannot roll back: binlane's retries and "+
				"crash recovery need a transactional engine (ALTER TABLE %s ENGINE=InnoDB)", q, engine, q))
		}
		if triggers > 0 && !allowTriggers {
			problems = append(problems, (&plan.TriggerError{Table: q}).Error())
		}
	}
	if err := rows.Err(); err != nil {
		return err
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
