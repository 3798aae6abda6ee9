package sandbox

import (
	"context"
	"database/sql"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/sqlquote"
)

// The accounts binlane runs as in tests and the demo: least privilege, with
// exactly the grants the README documents (TestReadmeGrants keeps the two
// in step). Nothing in a test may run binlane as root.
const (
	SourceUser = "binlane_src"
	TargetUser = "binlane_dst"
	// CutoverUser is the account of binlane cutover on either server (see
	// CutoverGrants).
	CutoverUser = "binlane_cut"
	// AccountPassword is the password of both accounts (throwaway servers).
	AccountPassword = "Bl4ne-sandbox"
)

// SourceGrants are the privileges binlane needs on a MariaDB source, for
// user (an account name such as 'binlane'@'%') and the replicated
// databases: the replication stream, reading the current binlog position,
// and SELECT for the copy, verify and the table engines of transactions
// that roll back to a savepoint; TRIGGER shows the tables' triggers (a
// statement-logged DML statement on a table with triggers is refused);
// SHOW VIEW, EVENT and SELECT on mysql.proc
// let the copy read the definitions of views, events and stored routines
// (MariaDB 10.11 shows a routine's body only to its definer and to an
// account that can read mysql.proc).
func SourceGrants(user string, dbs ...string) []string {
	out := []string{"GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO " + user}
	for _, db := range dbs {
		out = append(out, "GRANT SELECT, SHOW VIEW, TRIGGER, EVENT ON "+sqlquote.Name(db)+".* TO "+user)
	}
	return append(out, "GRANT SELECT ON `mysql`.`proc` TO "+user)
}

// TargetGrants are the privileges binlane needs on a MariaDB target: on each
// replicated database, writing rows and replaying the source's DDL (tables,
// indexes, views, routines; EVENT for the events a copy creates), and
// TRIGGER, without which information_schema
// hides a table's triggers from binlane (it never creates one: trigger DDL
// from the source is kept for cut-over), and CREATE TEMPORARY TABLES for
// the source sessions' temporary tables (statement-logged DML that reads
// them); everything on its own binlane
// schema; SELECT on mysql.proc lets verify read the bodies of the
// target's stored routines it compares with the source's. PROCESS is
// optional (see TargetOptionalGrants).
func TargetGrants(user string, dbs ...string) []string {
	var out []string
	for _, db := range dbs {
		out = append(out, "GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, ALTER, INDEX, REFERENCES, "+
			"CREATE VIEW, SHOW VIEW, CREATE ROUTINE, ALTER ROUTINE, EVENT, TRIGGER, CREATE TEMPORARY TABLES ON "+sqlquote.Name(db)+".* TO "+user)
	}
	return append(out, "GRANT SELECT ON `mysql`.`proc` TO "+user, "GRANT ALL PRIVILEGES ON `binlane`.* TO "+user)
}

// TargetOptionalGrants make binlane faster or enable options: PROCESS lets
// it see which of its transactions waits for which (lock waits resolved in
// ~150 ms instead of after --lock-blind-after), BINLOG ADMIN allows
// --binlog-applied=false, SET USER creates copied views, routines and
// events (and replays their DDL) with the source's DEFINER.
func TargetOptionalGrants(user string) []string {
	return []string{"GRANT PROCESS, BINLOG ADMIN, SET USER ON *.* TO " + user}
}

// CutoverGrants are what binlane cutover needs beyond the stream's grants.
// The cut-over's account on each server holds both the source's and the
// target's grants (the reverse stream and a cut-over back swap the roles)
// and these: READ_ONLY ADMIN sets read_only on the source (--freeze
// read-only) and on the target, and lets the reverse stream write into the
// old source, which stays read-only (SUPER no longer includes it in
// MariaDB 10.11); PROCESS shows the transactions in flight the freeze
// waits for; EVENT (with the target grants' TRIGGER) reads the triggers
// and events that move to the new primary and creates them there; SET USER
// creates them with their DEFINER; SELECT on mysql.proc lets the verify at
// the switch point read the bodies of stored routines (see VerifyGrants).
func CutoverGrants(user string, dbs ...string) []string {
	out := []string{"GRANT READ_ONLY ADMIN, PROCESS, SET USER ON *.* TO " + user, "GRANT SELECT ON `mysql`.`proc` TO " + user}
	for _, db := range dbs {
		out = append(out, "GRANT EVENT ON "+sqlquote.Name(db)+".* TO "+user)
	}
	return out
}

// VerifyGrants are what binlane verify needs on either server to compare
// the databases dbs: SELECT reads the rows and the tables' and sequences'
// definitions; SHOW VIEW the views'; TRIGGER and EVENT make
// information_schema and SHOW CREATE show the triggers and events (verify
// creates none: its sessions only read); SELECT on mysql.proc shows the
// bodies of stored procedures and functions (MariaDB before 11.3, which
// has no SHOW CREATE ROUTINE privilege).
func VerifyGrants(user string, dbs ...string) []string {
	var out []string
	for _, db := range dbs {
		out = append(out, "GRANT SELECT, SHOW VIEW, TRIGGER, EVENT ON "+sqlquote.Name(db)+".* TO "+user)
	}
	return append(out, "GRANT SELECT ON `mysql`.`proc` TO "+user)
}

// GrantCutover creates binlane cutover's account (if it does not exist
// yet) with the source's, the target's and the cut-over's grants on dbs,
// and returns its address.
func (s *Server) GrantCutover(ctx context.Context, dbs ...string) (string, error) {
	acct := account(CutoverUser)
	grants := append(SourceGrants(acct, dbs...), TargetGrants(acct, dbs...)...)
	grants = append(grants, CutoverGrants(acct, dbs...)...)
	create := fmt.Sprintf("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s", acct, sqlquote.String(AccountPassword))
	if err := s.Exec(ctx, append([]string{"SET SESSION sql_log_bin = 0", create}, grants...)...); err != nil {
		return "", err
	}
	return s.UserURL(CutoverUser, AccountPassword), nil
}

func account(user string) string { return sqlquote.Account(user, "%") }

// GrantBinlane creates the binlane account of the server's role (if it
// does not exist yet) and grants it the documented privileges on dbs;
// optional adds the optional target grants. It returns the account's
// address.
func (s *Server) GrantBinlane(ctx context.Context, optional bool, dbs ...string) (string, error) {
	user := SourceUser
	grants := SourceGrants(account(user), dbs...)
	if s.opts.Role == Target {
		user = TargetUser
		grants = TargetGrants(account(user), dbs...)
		if optional {
			grants = append(grants, TargetOptionalGrants(account(user))...)
		}
	}
	create := fmt.Sprintf("CREATE USER IF NOT EXISTS %s IDENTIFIED BY %s", account(user), sqlquote.String(AccountPassword))
	// Test set-up, not data: kept out of the binlog, so streams and their
	// expected transaction counts do not see it.
	if err := s.Exec(ctx, append([]string{"SET SESSION sql_log_bin = 0", create}, grants...)...); err != nil {
		return "", err
	}
	return s.UserURL(user, AccountPassword), nil
}

// UserURL returns the mysql:// address of the server for an account.
func (s *Server) UserURL(user, password string) string {
	return fmt.Sprintf("mysql://%s:%s@127.0.0.1:%d/", user, password, s.Port)
}

// OpenBinlane opens a pool as binlane's account of the server's role, with
// the documented grants on dbs: what binlane code under test must use.
func (s *Server) OpenBinlane(ctx context.Context, dbs ...string) (*sql.DB, error) {
	if _, err := s.GrantBinlane(ctx, false, dbs...); err != nil {
		return nil, err
	}
	user := SourceUser
	if s.opts.Role == Target {
		user = TargetUser
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, AccountPassword
	cfg.Net, cfg.Addr = "tcp", s.Addr()
	if err := cfg.Apply(mysql.Charset("utf8mb4", "")); err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// OpenBinlaneT is OpenBinlane for a test: the pool closes when it ends.
func (s *Server) OpenBinlaneT(t testing.TB, dbs ...string) *sql.DB {
	t.Helper()
	db, err := s.OpenBinlane(context.Background(), dbs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
