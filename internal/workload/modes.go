package workload

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
)

// Mode is a kind of traffic, each on a database of its own.
type Mode string

// The modes.
const (
	// Mixed is the conflict-heavy test traffic on database wl (Schema):
	// every column type, unique-key swaps, primary-key changes, cascades,
	// a keyless table, DDL (Config.DDL), savepoints. The default.
	Mixed Mode = ""
	// Shop is a web shop with cascading foreign keys on database shop:
	// customer (email unique), item, orders (ON DELETE CASCADE from
	// customer), order_line (ON DELETE CASCADE from orders, ON UPDATE
	// CASCADE from item). 45% balance updates, 40% orders of 1-5 lines
	// with their stock and the customer's order count, 12% shipping, 3%
	// deletes of an old order; customers and items picked uniformly
	// (Config.Customers, Config.Items).
	Shop Mode = "shop"
	// OrderEntry is TPC-C-like order entry on database orderentry: a few
	// warehouses whose ten districts are hot rows, new-order (45%),
	// payment (43%), delivery (4%) and stock-level/order-status reads left
	// out (they write nothing), all tables linked by foreign keys.
	OrderEntry Mode = "orderentry"
	// Bulk is Shop's traffic on database bulk, and every BulkEvery-th
	// transaction (counted over all sessions) one that updates or deletes
	// BulkRows rows of bulk.history in turn (an archive job beside the
	// shop).
	Bulk Mode = "bulk"
	// Docs writes wide rows (60 columns, 2-4 KB) and JSON documents of
	// 2-20 KB on database docs.
	Docs Mode = "docs"
)

// modeSpec is what a mode consists of.
type modeSpec struct {
	// setup returns the statements creating the mode's tables and rows.
	setup func(cfg Config) []string
	ops   []op
	// bulk, when set, returns the mode's bulk transaction number k.
	bulk func(s *session, k int) []string
}

var modes = map[Mode]*modeSpec{
	Mixed:      {ops: mixedOps},
	Shop:       {setup: shopSeed, ops: shopOps},
	Bulk:       {setup: bulkSetup, ops: shopOps, bulk: (*session).bulkChange},
	OrderEntry: {setup: orderEntrySetup, ops: orderEntryOps},
	Docs:       {setup: docsSetup, ops: docsOps},
	Slots:      {setup: slotsSetup, ops: slotsOps},
}

// Modes returns the modes' names.
func Modes() []Mode {
	var out []Mode
	for m := range modes {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// Schema returns the database the mode writes to: its name, wl for
// Mixed.
func (m Mode) Schema() string {
	if m == Mixed {
		return Schema
	}
	return string(m)
}

// Prepare creates the schema and seed rows of cfg.Mode (Setup for Mixed).
func Prepare(ctx context.Context, db *sql.DB, cfg Config) error {
	spec, ok := modes[cfg.Mode]
	if !ok {
		return fmt.Errorf("workload: unknown mode %q", cfg.Mode)
	}
	if spec.setup == nil {
		return Setup(ctx, db)
	}
	for _, q := range spec.setup(cfg.withDefaults()) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("workload %s setup: %s: %w", cfg.Mode, abbreviate(q, 120), err)
		}
	}
	return nil
}

func abbreviate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// pick returns an op of ops by weight.
func pick(s *session, ops []op) op {
	total := 0
	for _, o := range ops {
		total += o.weight
	}
	r := s.rng.IntN(total)
	for _, o := range ops {
		if r < o.weight {
			return o
		}
		r -= o.weight
	}
	return ops[len(ops)-1]
}
