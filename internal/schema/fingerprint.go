package schema

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// Querier is a pool or a connection.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Object names what a statement changes: a table (or view, sequence), or a
// whole schema when Table is empty.
type Object struct{ Schema, Table string }

// autoIncrement is left out of a fingerprint: the counter moves with every
// insert (ours and, wrongly but commonly, other writers'), and the only
// statements that change nothing but it (TRUNCATE, ALTER ... AUTO_INCREMENT)
// can safely run twice.
var autoIncrement = regexp.MustCompile(` AUTO_INCREMENT=[0-9]+`)

// Fingerprint digests the target's definition of the objects a DDL
// statement changes: SHOW CREATE of each table (or its absence) and of each
// schema, and, for a schema whose statement could not be read (wholeSchema),
// the list of its tables, views and routines. A DDL statement that ran
// changes the fingerprint of what it names; one that did not leaves it as it
// was (MariaDB 10.6+ and MySQL 8 DDL is atomic, also across a crash), which
// is how a restart tells one from the other.
func Fingerprint(ctx context.Context, q Querier, objects []Object, wholeSchema []string) (string, error) {
	var parts []string
	for _, o := range objects {
		var s string
		var err error
		if o.Table == "" {
			s, err = showCreate(ctx, q, "DATABASE "+sqlquote.Name(o.Schema))
		} else {
			s, err = showCreate(ctx, q, "TABLE "+sqlquote.Qualified(o.Schema, o.Table))
		}
		if err != nil {
			return "", err
		}
		parts = append(parts, o.Schema+"."+o.Table+"="+autoIncrement.ReplaceAllString(s, ""))
	}
	for _, sc := range wholeSchema {
		s, err := schemaObjects(ctx, q, sc)
		if err != nil {
			return "", err
		}
		parts = append(parts, sc+".*="+s)
	}
	sort.Strings(parts)
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:]), nil
}

// showCreate returns the definition, or "absent".
func showCreate(ctx context.Context, q Querier, what string) (string, error) {
	rows, err := q.QueryContext(ctx, "SHOW CREATE "+what)
	if sqlerr.Is(err, sqlerr.NoSuchTable, sqlerr.UnknownDB, sqlerr.UnknownTable) {
		return "absent", nil
	}
	if err != nil {
		return "", fmt.Errorf("SHOW CREATE %s: %w", what, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var out []string
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		for _, v := range vals[1:] {
			out = append(out, string(v))
		}
	}
	if err := rows.Err(); sqlerr.Is(err, sqlerr.NoSuchTable, sqlerr.UnknownDB) {
		return "absent", nil
	} else if err != nil {
		return "", err
	}
	return strings.Join(out, "\x01"), nil
}

// schemaObjects lists a schema's tables, views, routines and events with
// what changes when one is created, altered or dropped.
func schemaObjects(ctx context.Context, q Querier, schemaName string) (string, error) {
	queries := []string{
		`SELECT CONCAT(TABLE_NAME, ':', TABLE_TYPE, ':', COALESCE(CREATE_TIME, '')) FROM information_schema.TABLES
			WHERE TABLE_SCHEMA = ? ORDER BY 1`,
		`SELECT CONCAT(TABLE_NAME, ':', COLUMN_NAME, ':', COLUMN_TYPE) FROM information_schema.COLUMNS
			WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
		`SELECT CONCAT(ROUTINE_TYPE, ':', ROUTINE_NAME, ':', LAST_ALTERED) FROM information_schema.ROUTINES
			WHERE ROUTINE_SCHEMA = ? ORDER BY 1`,
		`SELECT CONCAT(EVENT_NAME, ':', LAST_ALTERED) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = ? ORDER BY 1`,
	}
	h := sha256.New()
	for _, qs := range queries {
		rows, err := q.QueryContext(ctx, qs, schemaName)
		if err != nil {
			return "", fmt.Errorf("list objects of schema %s: %w", sqlquote.Name(schemaName), err)
		}
		for rows.Next() {
			var line sql.NullString
			if err := rows.Scan(&line); err != nil {
				rows.Close()
				return "", err
			}
			h.Write([]byte(line.String))
			h.Write([]byte{0})
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", err
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
