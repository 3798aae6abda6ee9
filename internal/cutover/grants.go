package cutover

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
)

// account is what the account binlane connects as may do on a server, as
// information_schema shows it: the account's own global and per-schema
// privileges. Privileges granted through a role are not seen: grant them
// to the account (binlane never SETs a role).
type account struct {
	user    string // CURRENT_USER(): user@host
	global  map[string]bool
	schemas []schemaGrant
}

type schemaGrant struct {
	pattern string // as granted: `app`, `app\_%`
	privs   map[string]bool
}

func readAccount(ctx context.Context, db *sql.DB) (*account, error) {
	a := &account{global: map[string]bool{}}
	if err := db.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&a.user); err != nil {
		return nil, fmt.Errorf("read the account's privileges: %w", err)
	}
	grantee := sqlquote.Grantee(sqlquote.SplitAccount(a.user))
	rows, err := db.QueryContext(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?", grantee)
	if err != nil {
		return nil, fmt.Errorf("read the account's privileges: %w", err)
	}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			rows.Close()
			return nil, err
		}
		a.global[strings.ToUpper(p)] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = db.QueryContext(ctx, "SELECT TABLE_SCHEMA, PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ?", grantee)
	if err != nil {
		return nil, fmt.Errorf("read the account's privileges: %w", err)
	}
	defer rows.Close()
	byPattern := map[string]map[string]bool{}
	for rows.Next() {
		var sc, p string
		if err := rows.Scan(&sc, &p); err != nil {
			return nil, err
		}
		if byPattern[sc] == nil {
			byPattern[sc] = map[string]bool{}
			a.schemas = append(a.schemas, schemaGrant{pattern: sc, privs: byPattern[sc]})
		}
		byPattern[sc][strings.ToUpper(p)] = true
	}
	return a, rows.Err()
}

// has reports whether the account holds priv globally or on schema.
func (a *account) has(priv, schema string) bool {
	if a.global[priv] {
		return true
	}
	for _, g := range a.schemas {
		if g.privs[priv] && likeMatch(g.pattern, schema) {
			return true
		}
	}
	return false
}

// missing lists the privileges of privs the account lacks on schema.
func (a *account) missing(schema string, privs ...string) []string {
	var out []string
	for _, p := range privs {
		if !a.has(p, schema) {
			out = append(out, p)
		}
	}
	return out
}

// likeMatch matches a schema name against a GRANT's database pattern (%
// and _ wildcards, \ escapes them).
func likeMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch c := pattern[0]; {
	case c == '%':
		for i := 0; i <= len(s); i++ {
			if likeMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case c == '\\' && len(pattern) > 1:
		return s != "" && s[0] == pattern[1] && likeMatch(pattern[2:], s[1:])
	case s == "":
		return false
	case c == '_' || c == s[0]:
		return likeMatch(pattern[1:], s[1:])
	}
	return false
}

// canSetReadOnly reports whether the account may change read_only
// (MariaDB 10.11: READ_ONLY ADMIN, which SUPER no longer includes; earlier
// MariaDB: SUPER; MySQL: SYSTEM_VARIABLES_ADMIN or SUPER), by setting it to
// the value it has: a change of nothing, which the server checks like any
// other.
func canSetReadOnly(ctx context.Context, db *sql.DB) (bool, error) {
	_, err := db.ExecContext(ctx, "SET GLOBAL read_only = @@global.read_only")
	if sqlerr.Is(err, sqlerr.SpecificAccessDenied) {
		return false, nil
	}
	return err == nil, err
}

// seesTransactions reports whether the account may list the server's
// transactions (PROCESS: information_schema.INNODB_TRX).
func seesTransactions(ctx context.Context, db *sql.DB) (bool, error) {
	var n int
	err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.INNODB_TRX").Scan(&n)
	if sqlerr.Is(err, sqlerr.SpecificAccessDenied) {
		return false, nil
	}
	return err == nil, err
}

// readOnlyPrivilege names what changing read_only needs, per flavor.
func readOnlyPrivilege(mariaDB bool) string {
	if mariaDB {
		return "READ_ONLY ADMIN (MariaDB 10.11 and later; SUPER before 10.11)"
	}
	return "SYSTEM_VARIABLES_ADMIN or SUPER"
}
