package cutover

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Triggers and events live on the primary only: a replica must not run
// them (the source's trigger effects are in its binlog as rows; its events
// write on the source, and those writes come through the stream). So the
// stream never runs trigger or event DDL (it keeps it in binlane.deferred),
// and the copy creates tables without triggers. At the hand-over the
// target gets the source's triggers and events as they are at P — what
// replaying the kept statements would give, and also those that existed
// before the copy began, which the stream never saw — and, with --reverse,
// the source, now a replica, loses them (they would run a second time for
// the rows the reverse stream writes; the reverse stream refuses a target
// table with triggers).

type objectKind string

const (
	kindTrigger objectKind = "TRIGGER"
	kindEvent   objectKind = "EVENT"
)

// object is a trigger or an event.
type object struct {
	kind         objectKind
	schema, name string
	table        string // a trigger's table
	definer      string // user@host
	// The definition, read at the hand-over (SHOW CREATE): the statement
	// and the session it runs in.
	create, sqlMode, charset, collation, timeZone string
}

func (o object) key() string { return string(o.kind) + " " + o.qualified() }

func (o object) qualified() string {
	return sqlquote.Qualified(o.schema, o.name)
}

func (f *facts) count(k objectKind) int {
	n := 0
	for _, o := range f.objects {
		if o.kind == k {
			n++
		}
	}
	return n
}

// listObjects lists the triggers of the selected tables (in the order they
// fire) and the events of the databases that hold selected tables.
// information_schema shows them only to an account with TRIGGER and EVENT
// on them (see the preflight).
func listObjects(ctx context.Context, db *sql.DB, rules filter.Rules) ([]object, error) {
	var out []object
	rows, err := db.QueryContext(ctx, `SELECT TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_TABLE, DEFINER FROM information_schema.TRIGGERS
		ORDER BY EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_TIMING, EVENT_MANIPULATION, ACTION_ORDER`)
	if err != nil {
		return nil, fmt.Errorf("list triggers: %w", err)
	}
	for rows.Next() {
		o := object{kind: kindTrigger}
		if err := rows.Scan(&o.schema, &o.name, &o.table, &o.definer); err != nil {
			rows.Close()
			return nil, err
		}
		if rules.Match(o.schema, o.table) {
			out = append(out, o)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	schemas, err := selectedSchemas(ctx, db, rules)
	if err != nil {
		return nil, err
	}
	rows, err = db.QueryContext(ctx, "SELECT EVENT_SCHEMA, EVENT_NAME, DEFINER FROM information_schema.EVENTS ORDER BY EVENT_SCHEMA, EVENT_NAME")
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		o := object{kind: kindEvent}
		if err := rows.Scan(&o.schema, &o.name, &o.definer); err != nil {
			return nil, err
		}
		if schemas[o.schema] {
			out = append(out, o)
		}
	}
	return out, rows.Err()
}

// selectedSchemas are the databases that hold selected tables.
func selectedSchemas(ctx context.Context, db *sql.DB, rules filter.Rules) (map[string]bool, error) {
	tables, err := schema.SelectedTables(ctx, db, rules)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, t := range tables {
		out[t[0]] = true
	}
	return out, nil
}

// define reads an object's definition (SHOW CREATE TRIGGER / EVENT).
func define(ctx context.Context, db *sql.DB, o *object) error {
	sh, ok, err := schema.ShowCreate(ctx, db, string(o.kind), o.qualified())
	switch {
	case err != nil:
		return fmt.Errorf("read %s %s: %w", strings.ToLower(string(o.kind)), o.qualified(), err)
	case !ok:
		return fmt.Errorf("read %s %s: it is gone", strings.ToLower(string(o.kind)), o.qualified())
	case sh.Create == "":
		return fmt.Errorf("read %s %s: no definition (does the account have the %s privilege on %s?)", strings.ToLower(string(o.kind)),
			o.qualified(), o.kind, sqlquote.Name(o.schema))
	}
	o.create, o.sqlMode, o.charset, o.collation, o.timeZone = sh.Create, sh.SQLMode, sh.Charset, sh.Collation, sh.TimeZone
	return nil
}

// session is the statements that set up a connection to run o's
// definition as the source did. The settings come from the source: each
// must be a plain name (sqlquote.Setting), or o is not created.
func (o object) session() ([]string, error) {
	settings := []struct{ name, v string }{{"sql_mode", o.sqlMode}, {"character_set_client", o.charset},
		{"collation_connection", o.collation}, {"time_zone", o.timeZone}}
	var set []string
	for _, st := range settings {
		if st.v == "" && st.name == "time_zone" {
			continue
		}
		lit, err := sqlquote.Setting(st.v)
		if err != nil {
			return nil, fmt.Errorf("%s %s was created with %s %w", strings.ToLower(string(o.kind)), o.qualified(), st.name, err)
		}
		set = append(set, st.name+" = "+lit)
	}
	return []string{"USE " + sqlquote.Name(o.schema), "SET SESSION " + strings.Join(set, ", ")}, nil
}

// createObject runs o's definition on db, in a session of its own (thrown
// away after: its settings are o's).
func createObject(ctx context.Context, db *sql.DB, o object) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drops the connection
	stmts, err := o.session()
	if err != nil {
		return err
	}
	for _, q := range append(stmts, o.create) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("create %s %s on the target: %w", strings.ToLower(string(o.kind)), o.qualified(), err)
		}
	}
	return nil
}

// dropObject drops o on db (the server named where), if it is there.
func dropObject(ctx context.Context, db *sql.DB, o object, where string) error {
	if _, err := db.ExecContext(ctx, "DROP "+string(o.kind)+" IF EXISTS "+o.qualified()); err != nil {
		return fmt.Errorf("drop %s %s on the %s: %w", strings.ToLower(string(o.kind)), o.qualified(), where, err)
	}
	return nil
}

// replaceObject gives the target o's definition where it has an object of
// the same name: an event the copy created DISABLE ON SLAVE, as a replica
// holds it. It reports false when the target's is already o's (a run that
// finishes an earlier one). A failed create puts the target's own
// definition back, so the target never keeps neither.
func replaceObject(ctx context.Context, db *sql.DB, o object) (bool, error) {
	old := object{kind: o.kind, schema: o.schema, name: o.name, table: o.table}
	if err := define(ctx, db, &old); err != nil {
		return false, fmt.Errorf("target: %w", err)
	}
	if old.sameDefinition(o) {
		return false, nil
	}
	if err := dropObject(ctx, db, old, "target"); err != nil {
		return false, err
	}
	err := createObject(ctx, db, o)
	if err == nil {
		return true, nil
	}
	if uerr := createObject(ctx, db, old); uerr != nil {
		return false, fmt.Errorf("%w; and putting back the target's own definition failed: %w", err, uerr)
	}
	return false, fmt.Errorf("%w (the target's own definition is back)", err)
}

// sameDefinition: o and p are created by the same statement in the same
// session settings.
func (o object) sameDefinition(p object) bool {
	return o.create == p.create && o.sqlMode == p.sqlMode && o.charset == p.charset && o.collation == p.collation &&
		o.timeZone == p.timeZone
}

// existingObjects lists the triggers and events db has (object keys).
func existingObjects(ctx context.Context, db *sql.DB) (map[string]bool, error) {
	out := map[string]bool{}
	for _, q := range []struct {
		kind objectKind
		sql  string
	}{
		{kindTrigger, "SELECT TRIGGER_SCHEMA, TRIGGER_NAME FROM information_schema.TRIGGERS"},
		{kindEvent, "SELECT EVENT_SCHEMA, EVENT_NAME FROM information_schema.EVENTS"},
	} {
		rows, err := db.QueryContext(ctx, q.sql)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			o := object{kind: q.kind}
			if err := rows.Scan(&o.schema, &o.name); err != nil {
				rows.Close()
				return nil, err
			}
			out[o.key()] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// oneLine keeps text from the source (a name, a definer) on its comment
// line: a line break in it would end the comment, and the rest would run.
func oneLine(s string) string {
	return strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(s)
}

// script is the objects' definitions as a file for the mysql client, and
// the statements the stream kept (binlane.deferred) for reference.
func script(header string, objs []object, kept []position.Deferred) (string, error) {
	var b strings.Builder
	for _, l := range strings.Split(header, "\n") {
		b.WriteString("-- " + l + "\n")
	}
	b.WriteString("DELIMITER ;;\n")
	for _, o := range objs {
		fmt.Fprintf(&b, "\n-- %s\n", oneLine(fmt.Sprintf("%s %s (definer %s)", strings.ToLower(string(o.kind)), o.qualified(), o.definer)))
		stmts, err := o.session()
		if err != nil {
			return "", err
		}
		if o.kind == kindEvent {
			// The copy creates the events on the target (DISABLE ON
			// SLAVE): the source's definition replaces them.
			stmts = append(stmts, "DROP EVENT IF EXISTS "+o.qualified())
		}
		for _, q := range append(stmts, o.create) {
			b.WriteString(q + ";;\n")
		}
	}
	b.WriteString("DELIMITER ;\n")
	if len(kept) > 0 {
		b.WriteString("\n-- The trigger and event statements the stream kept instead of running (binlane.deferred), for\n" +
			"-- reference: the definitions above are their result as the source has it at the cut-over.\n")
		for _, d := range kept {
			fmt.Fprintf(&b, "-- %s: %s\n", oneLine(fmt.Sprintf("%s (%s, in %s)", d.GTID, d.Reason, d.Schema)),
				strings.ReplaceAll(redact.Statement(d.Statement), "\n", "\n--   "))
		}
	}
	return b.String(), nil
}
