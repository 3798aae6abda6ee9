package schema

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// ObjectKind is a kind of schema object other than a table.
type ObjectKind string

// The object kinds a copy brings along (triggers are the cut-over's).
const (
	KindSequence    ObjectKind = "SEQUENCE"
	KindView        ObjectKind = "VIEW"
	KindProcedure   ObjectKind = "PROCEDURE"
	KindFunction    ObjectKind = "FUNCTION"
	KindPackage     ObjectKind = "PACKAGE"
	KindPackageBody ObjectKind = "PACKAGE BODY"
	KindEvent       ObjectKind = "EVENT"
)

// ObjectDef is a view, sequence, stored routine or event as the source
// defines it: SHOW CREATE's statement and the session it was created in.
type ObjectDef struct {
	Kind         ObjectKind
	Schema, Name string
	// Definer is user@host as information_schema spells it ("" for
	// sequences).
	Definer string
	// Create is SHOW CREATE's statement, run in the object's schema.
	Create string
	// The session the object was created in: sql_mode (routines, events),
	// the client's character set and the connection's collation (all but
	// sequences), the time zone (events).
	SQLMode, Charset, Collation, TimeZone string
	// Sequence is a sequence's state (ReadSequence), nil before it is read.
	Sequence *SequenceState
}

// Qualified is `schema`.`name`.
func (o *ObjectDef) Qualified() string { return sqlquote.Qualified(o.Schema, o.Name) }

// String is the kind and the name, as messages name an object.
func (o *ObjectDef) String() string { return strings.ToLower(string(o.Kind)) + " " + o.Qualified() }

// SequenceState is a sequence's one row: what the next NEXTVAL returns
// follows from it (MariaDB binlogs a sequence's changes as this row).
type SequenceState struct {
	Columns []string
	Values  []string
}

// DefinitionMode is the sql_mode in which binlane reads a table's or
// sequence's definition (SHOW CREATE prints it for the session's mode:
// ANSI_QUOTES changes its quoting) and runs it on the target: a table the
// source created with an empty sql_mode and a zero date as a default must be
// created so on a target whose global mode has NO_ZERO_DATE. No mode that
// checks values at DDL time, none that changes how the statement parses;
// NO_ENGINE_SUBSTITUTION so that an engine the target lacks is an error,
// not a silent InnoDB.
const DefinitionMode = "NO_ENGINE_SUBSTITUTION"

// ReadObjects lists the objects a copy with rules brings along, with their
// definitions: views and sequences the rules select by name, and the
// routines and events of the databases they select (as the stream filters
// their DDL). It sets the session's sql_mode to DefinitionMode. Views come in name order; package CreateObjects orders
// them by dependency.
func ReadObjects(ctx context.Context, q *sql.Conn, rules filter.Rules) ([]*ObjectDef, error) {
	if _, err := q.ExecContext(ctx, "SET SESSION sql_mode = '"+DefinitionMode+"'"); err != nil {
		return nil, err
	}
	if err := checkVisible(ctx, q, rules); err != nil {
		return nil, err
	}
	var out []*ObjectDef
	lists := []struct {
		query  string
		byName bool
	}{
		{`SELECT TABLE_TYPE, TABLE_SCHEMA, TABLE_NAME, '' FROM information_schema.TABLES
			WHERE TABLE_TYPE = 'SEQUENCE' ORDER BY TABLE_SCHEMA, TABLE_NAME`, true},
		{`SELECT 'VIEW', TABLE_SCHEMA, TABLE_NAME, DEFINER FROM information_schema.VIEWS
			ORDER BY TABLE_SCHEMA, TABLE_NAME`, true},
		{`SELECT ROUTINE_TYPE, ROUTINE_SCHEMA, ROUTINE_NAME, DEFINER FROM information_schema.ROUTINES
			ORDER BY ROUTINE_SCHEMA, FIELD(ROUTINE_TYPE, 'PACKAGE', 'PACKAGE BODY'), ROUTINE_NAME`, false},
		{`SELECT 'EVENT', EVENT_SCHEMA, EVENT_NAME, DEFINER FROM information_schema.EVENTS
			ORDER BY EVENT_SCHEMA, EVENT_NAME`, false},
	}
	for _, l := range lists {
		objs, err := listObjects(ctx, q, l.query)
		if err != nil {
			return nil, fmt.Errorf("list the source's objects: %w", err)
		}
		for _, o := range objs {
			if l.byName && rules.Match(o.Schema, o.Name) || !l.byName && rules.MatchSchema(o.Schema) {
				out = append(out, o)
			}
		}
	}
	kept := out[:0]
	for _, o := range out {
		found, err := showObject(ctx, q, o)
		if err != nil {
			return nil, err
		}
		if found { // else dropped since it was listed: its DROP is in the binlog
			kept = append(kept, o)
		}
	}
	return kept, nil
}

// checkVisible fails when the server would hide routines or events from
// binlane's account: information_schema lists only those an account may
// see, so without the privileges they would be silently left behind.
func checkVisible(ctx context.Context, q *sql.Conn, rules filter.Rules) error {
	if _, err := q.ExecContext(ctx, "SELECT 1 FROM mysql.proc LIMIT 0"); err != nil {
		return fmt.Errorf("the source hides its stored routines from binlane's account (%w): grant it SELECT ON mysql.proc "+
			"(README: privileges)", err)
	}
	rows, err := q.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA ORDER BY SCHEMA_NAME")
	if err != nil {
		return fmt.Errorf("list schemas: %w", err)
	}
	var schemas []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		if rules.MatchSchema(s) {
			schemas = append(schemas, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, s := range schemas {
		if _, err := q.ExecContext(ctx, "SHOW EVENTS FROM "+sqlquote.Name(s)); err != nil {
			return fmt.Errorf("the source hides the events of %s from binlane's account (%w): grant it EVENT ON %s.* "+
				"(README: privileges)", sqlquote.Name(s), err, sqlquote.Name(s))
		}
	}
	return nil
}

func listObjects(ctx context.Context, q Querier, query string) ([]*ObjectDef, error) {
	rows, err := q.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*ObjectDef
	for rows.Next() {
		o := &ObjectDef{}
		if err := rows.Scan(&o.Kind, &o.Schema, &o.Name, &o.Definer); err != nil {
			return nil, err
		}
		if !filter.IsSystem(o.Schema) {
			out = append(out, o)
		}
	}
	return out, rows.Err()
}

// showObject reads o's definition and session with SHOW CREATE; false when
// o is gone.
func showObject(ctx context.Context, q *sql.Conn, o *ObjectDef) (bool, error) {
	sh, ok, err := ShowCreate(ctx, q, string(o.Kind), o.Qualified())
	switch {
	case isGone(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("read the definition of %s: %w", o, err)
	case !ok:
		return false, nil
	case sh.Create == "":
		// The server shows a routine's body only to its definer and to an
		// account that can read mysql.proc.
		return false, fmt.Errorf("read the definition of %s: the server shows none to binlane's account "+
			"(see the source's privileges in the README: SHOW VIEW, EVENT, SELECT ON mysql.proc)", o)
	}
	o.Create, o.SQLMode, o.Charset, o.Collation, o.TimeZone = sh.Create, sh.SQLMode, sh.Charset, sh.Collation, sh.TimeZone
	if o.Kind == KindSequence {
		o.SQLMode = DefinitionMode
	}
	return true, nil
}

// Shown is what SHOW CREATE shows of an object: its statement and the
// session it was created in (the settings SHOW CREATE gives for its kind;
// "" for the others).
type Shown struct {
	Create, SQLMode, Charset, Collation, TimeZone string
}

// ShowCreate runs SHOW CREATE kind qualified (a quoted name) and reads
// its one row; false when the server answered with none. Create is "" when
// the server hides the definition from the account (a routine's body).
func ShowCreate(ctx context.Context, q Querier, kind, qualified string) (Shown, bool, error) {
	var sh Shown
	rows, err := q.QueryContext(ctx, "SHOW CREATE "+kind+" "+qualified)
	if err != nil {
		return sh, false, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return sh, false, err
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if !rows.Next() {
		return sh, false, rows.Err()
	}
	if err := rows.Scan(ptrs...); err != nil {
		return sh, false, err
	}
	for i, c := range cols {
		switch c := strings.ToLower(c); {
		case strings.HasPrefix(c, "create ") || c == "sql original statement":
			sh.Create = vals[i].String
		case c == "sql_mode":
			sh.SQLMode = vals[i].String
		case c == "character_set_client":
			sh.Charset = vals[i].String
		case c == "collation_connection":
			sh.Collation = vals[i].String
		case c == "time_zone":
			sh.TimeZone = vals[i].String
		}
	}
	return sh, true, rows.Err()
}

// isGone reports an error saying the object does not exist (any kind),
// or is now an object of another kind.
func isGone(err error) bool {
	return sqlerr.Is(err, sqlerr.NoSuchTable, sqlerr.NoSuchRoutine, sqlerr.NoSuchEvent, sqlerr.NotSequence, sqlerr.WrongObjectType)
}

// ReadSequence reads a sequence's state. Read it after the position the
// stream starts from: the stream's events set the row to the states after
// that position, in order, so the last one is the state read (a state read
// before the start could miss a change the stream never sees).
func ReadSequence(ctx context.Context, q Querier, o *ObjectDef) error {
	rows, err := q.QueryContext(ctx, "SELECT * FROM "+o.Qualified())
	if err != nil {
		return fmt.Errorf("read the state of %s: %w", o, err)
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
	if !rows.Next() {
		return fmt.Errorf("read the state of %s: it has no row", o)
	}
	if err := rows.Scan(ptrs...); err != nil {
		return err
	}
	st := &SequenceState{Columns: cols}
	for _, v := range vals {
		if !numeric.MatchString(v.String) {
			return fmt.Errorf("read the state of %s: unexpected value %q", o, v.String)
		}
		st.Values = append(st.Values, v.String)
	}
	o.Sequence = st
	return rows.Err()
}

// numeric is a sequence column's value: every one is an integer.
var numeric = regexp.MustCompile(`^-?[0-9]+$`)

// SequenceInsert is the statement that gives a sequence a state: MariaDB
// takes an INSERT into a sequence as its new row (what its replica does
// with the row event), whatever the state before.
func SequenceInsert(o *ObjectDef) string {
	cols := make([]string, len(o.Sequence.Columns))
	for i, c := range o.Sequence.Columns {
		cols[i] = sqlquote.Name(c)
	}
	return "INSERT INTO " + o.Qualified() + " (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.Join(o.Sequence.Values, ", ") + ")"
}

// ShowCreateDatabase is a database's CREATE DATABASE on q, as IF NOT
// EXISTS: its character set and collation are the source's, which the
// routines created in it and tables created later without their own take.
func ShowCreateDatabase(ctx context.Context, q Querier, name string) (string, error) {
	var n, create string
	if err := q.QueryRowContext(ctx, "SHOW CREATE DATABASE "+sqlquote.Name(name)).Scan(&n, &create); err != nil {
		return "", fmt.Errorf("read the definition of database %s: %w", sqlquote.Name(name), err)
	}
	if rest, ok := strings.CutPrefix(create, "CREATE DATABASE "); ok && !strings.HasPrefix(rest, "IF NOT EXISTS") {
		create = "CREATE DATABASE IF NOT EXISTS " + rest
	}
	return create, nil
}
