package verify

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// readObjects reads the definitions of the objects the rules select on one
// server: its tables, views and sequences the rules match, the triggers of
// those tables, and the routines and events of the databases the rules
// select. An object the server refuses to show (a missing privilege, or
// dropped meanwhile) is returned with its error; only a failure of the
// session itself ends the read.
func readObjects(ctx context.Context, conn *sql.Conn, rules filter.Rules) ([]objectDef, error) {
	schemas, err := selectedSchemas(ctx, conn, rules)
	if err != nil {
		return nil, err
	}
	var out []objectDef
	for _, sc := range schemas {
		defs, err := listObjects(ctx, conn, sc, rules)
		if err != nil {
			return nil, err
		}
		for _, d := range defs {
			d.Def, err = readDefinition(ctx, conn, d)
			switch {
			case objectError(err):
				d.Err = err.Error()
			case err != nil:
				return nil, fmt.Errorf("read %s %s.%s: %w", d.Kind, sqlquote.Name(d.Schema), sqlquote.Name(d.Name), err)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// objectError reports whether err is the object's, not the session's: the
// server refused to show it (a privilege, or it was dropped meanwhile) but
// answered, and nothing cut the statement short.
func objectError(err error) bool {
	var hidden *hiddenError
	if errors.As(err, &hidden) {
		return true
	}
	code := sqlerr.Code(err)
	return code != 0 && !sqlerr.ConnectionLost(err, sqlerr.Unknown) && !sqlerr.Interrupted(code) && !sqlerr.Transient(err)
}

func selectedSchemas(ctx context.Context, conn *sql.Conn, rules filter.Rules) ([]string, error) {
	var out []string
	err := scanStrings(ctx, conn, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME", nil, func(v []string) {
		if rules.MatchSchema(v[0]) {
			out = append(out, v[0])
		}
	})
	if err != nil {
		return nil, fmt.Errorf("list schemas: %w", err)
	}
	return out, nil
}

// listObjects names the selected objects of one schema. information_schema
// shows a view, routine, trigger or event only to an account with some
// privilege on it (see README, verify).
func listObjects(ctx context.Context, conn *sql.Conn, sc string, rules filter.Rules) ([]objectDef, error) {
	var out []objectDef
	add := func(kind ObjectKind, name string) { out = append(out, objectDef{Kind: kind, Schema: sc, Name: name}) }
	queries := []struct {
		sql  string
		scan func(v []string)
	}{
		{"SELECT TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", func(v []string) {
			if !rules.Match(sc, v[0]) {
				return
			}
			switch v[1] {
			case "BASE TABLE", "SYSTEM VERSIONED":
				add(KindTable, v[0])
			case "VIEW":
				add(KindView, v[0])
			case "SEQUENCE":
				add(KindSequence, v[0])
			}
		}},
		{"SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_ORDER FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ?", func(v []string) {
			if rules.Match(sc, v[1]) {
				add(KindTrigger, v[0])
				out[len(out)-1].Order = v[2]
			}
		}},
		// Packages (sql_mode=ORACLE) are not compared.
		{"SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ?", func(v []string) {
			switch v[1] {
			case "PROCEDURE":
				add(KindProcedure, v[0])
			case "FUNCTION":
				add(KindFunction, v[0])
			}
		}},
		{"SELECT EVENT_NAME, '' FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ?", func(v []string) { add(KindEvent, v[0]) }},
	}
	for _, q := range queries {
		if err := scanStrings(ctx, conn, q.sql, []any{sc}, q.scan); err != nil {
			return nil, fmt.Errorf("list the objects of %s: %w", sqlquote.Name(sc), err)
		}
	}
	return out, nil
}

// sequenceColumns are a sequence's definition and where it stands: what
// SETVAL and the next NEXTVAL depend on.
var sequenceColumns = []string{"next_not_cached_value", "minimum_value", "maximum_value", "start_value", "increment",
	"cache_size", "cycle_option", "cycle_count"}

// readDefinition returns an object's definition: SHOW CREATE with the
// session settings it shows, or a sequence's state.
func readDefinition(ctx context.Context, conn *sql.Conn, d objectDef) (string, error) {
	name := sqlquote.Qualified(d.Schema, d.Name)
	if d.Kind == KindSequence {
		var lines []string
		quoted := make([]string, len(sequenceColumns))
		for i, c := range sequenceColumns {
			quoted[i] = sqlquote.Name(c)
		}
		err := scanStrings(ctx, conn, "SELECT "+strings.Join(quoted, ", ")+" FROM "+name, nil, func(v []string) {
			for i, c := range sequenceColumns {
				lines = append(lines, c+"="+v[i])
			}
		})
		return strings.Join(lines, "\n"), err
	}
	sh, ok, err := schema.ShowCreate(ctx, conn, strings.ToUpper(string(d.Kind)), name)
	switch {
	case err != nil:
		return "", err
	case !ok:
		return "", &hiddenError{fmt.Sprintf("SHOW CREATE %s %s returned nothing", strings.ToUpper(string(d.Kind)), name)}
	case sh.Create == "":
		return "", &hiddenError{fmt.Sprintf("the server shows no definition of %s %s (see the privileges verify needs)", d.Kind, name)}
	}
	settings := [][2]string{{"sql_mode", sh.SQLMode}, {"time_zone", sh.TimeZone},
		{"character_set_client", sh.Charset}, {"collation_connection", sh.Collation}, {"action_order", d.Order}}
	return describeSession(sh.Create, settings), nil
}

// hiddenError: the server listed the object but did not show its
// definition (a routine's body, to an account without SHOW CREATE ROUTINE
// or SELECT on mysql.proc). It is the object's error, not the session's.
type hiddenError struct{ msg string }

func (e *hiddenError) Error() string { return e.msg }

// scanStrings runs q and hands each row to fn as strings (NULL as "").
func scanStrings(ctx context.Context, conn *sql.Conn, q string, args []any, fn func([]string)) error {
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		v := make([]string, len(vals))
		for i := range vals {
			v[i] = vals[i].String
		}
		fn(v)
	}
	return rows.Err()
}
