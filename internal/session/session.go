// Package session gives a target session the context a source statement
// ran in, and judges how the statement ended there against how it ended on
// the source. A statement from the binlog (DDL and the like) must run as
// the source ran it: at the source's clock (CURRENT_TIMESTAMP defaults of
// an ALTER fill existing rows with it), under its sql_mode,
// explicit_defaults_for_timestamp and other session flags, character sets
// and collations, auto-increment settings, time zone and locale, and with
// the insert ids, RAND() seeds and user variables it read — never in the
// applier's own session settings.
//
// The context comes from the statement's query event (its status
// variables and header) and the Intvar, Rand and User_var events logged
// before it, as MariaDB's own replica applies them
// (Query_log_event::do_apply_event). A session entered this way is not
// fit for row changes afterwards: the caller runs the statement on a
// connection it then discards.
//
// The package is pure: it renders SQL and compares error codes; it must
// never talk to a server.
package session

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

// Collation names a collation id of the target: its name and character
// set (ok false when the target does not know it).
type Collation func(id uint16) (name, charset string, ok bool)

// noDirInCreate is sql_mode's NO_DIR_IN_CREATE, which a replica keeps as
// its own (MariaDB's replica does the same): a DATA DIRECTORY of the
// source's disks is the target's operator's business.
const noDirInCreate = 1 << 7

// Enter returns the statements that give a target session the context st
// ran in on the source. coll names the collations of user variables'
// string values.
func Enter(st *txn.Statement, coll Collation) ([]string, error) {
	var b setList
	s := &st.Status
	if st.Timestamp != 0 {
		if s.HasMicros {
			b.add("timestamp=%d.%06d", st.Timestamp, s.Micros)
		} else {
			b.add("timestamp=%d", st.Timestamp)
		}
	}
	if s.HasSQLMode {
		b.add("sql_mode=%d", s.SQLMode&^noDirInCreate)
	}
	b.flags(s)
	if err := b.charsets(s, coll); err != nil {
		return nil, err
	}
	b.intVars(&st.Vars)
	out := []string{"SET SESSION " + strings.Join(b.set, ", ")}
	if len(st.Vars.User) > 0 {
		vars, err := userVars(st.Vars.User, coll)
		if err != nil {
			return nil, err
		}
		out = append(out, vars)
	}
	return out, nil
}

// setList collects the assignments of one SET SESSION.
type setList struct{ set []string }

func (b *setList) add(format string, args ...any) {
	b.set = append(b.set, fmt.Sprintf(format, args...))
}

// flags sets the session flags the event carries, and the auto-increment
// settings.
func (b *setList) flags(s *binlog.QueryStatus) {
	if s.HasFlags2 {
		f := s.Flags2
		b.add("foreign_key_checks=%s", onOff(f&binlog.Flags2NoForeignKeyChecks == 0))
		b.add("unique_checks=%s", onOff(f&binlog.Flags2RelaxedUniqueChecks == 0))
		b.add("sql_auto_is_null=%s", onOff(f&binlog.Flags2AutoIsNull != 0))
		if s.MariaDB {
			b.add("check_constraint_checks=%s", onOff(f&binlog.Flags2NoCheckConstraints == 0))
			b.add("sql_if_exists=%s", onOff(f&binlog.Flags2IfExists != 0))
			b.add("system_versioning_insert_history=%s", onOff(f&binlog.Flags2InsertHistory != 0))
		}
	}
	if s.HasExplicitDefaultsTS {
		b.add("explicit_defaults_for_timestamp=%s", onOff(s.ExplicitDefaultsTS))
	}
	// A source writes the auto-increment settings only when they are not
	// the defaults.
	inc, off := uint16(1), uint16(1)
	if s.AutoIncInc != 0 {
		inc, off = s.AutoIncInc, s.AutoIncOffset
	}
	b.add("auto_increment_increment=%d, auto_increment_offset=%d", inc, off)
}

// charsets sets the character sets, collations, time zone and locale.
func (b *setList) charsets(s *binlog.QueryStatus, coll Collation) error {
	if s.ClientCharset != 0 {
		// The event names the client's character set by a collation id; a
		// number given to character_set_client is taken as a character set's
		// default collation only, so it is named.
		_, cs, ok := coll(s.ClientCharset)
		if !ok {
			return fmt.Errorf("the statement's client character set (collation %d) is unknown to the target", s.ClientCharset)
		}
		b.add("character_set_client=%s, collation_connection=%d", cs, s.ConnCollation)
	}
	if s.ServerCollat != 0 {
		b.add("collation_server=%d", s.ServerCollat)
	}
	// The time zone is written only when the statement used it; the
	// replica's own is the server's default.
	if s.TimeZone != "" {
		tz, err := sqlquote.Setting(s.TimeZone)
		if err != nil {
			return fmt.Errorf("the statement's time_zone %w", err)
		}
		b.add("time_zone=%s", tz)
	} else {
		b.add("time_zone=DEFAULT")
	}
	b.add("lc_time_names=%d", s.LCTimeNames) // 0 is en_US
	// Absent, it is the default database's (the caller's USE set it).
	if s.CharsetDB != 0 {
		b.add("collation_database=%d", s.CharsetDB)
	}
	return nil
}

// intVars sets the values of the Intvar and Rand events before the
// statement.
func (b *setList) intVars(v *txn.Vars) {
	if v.HasInsertID {
		b.add("insert_id=%d", v.InsertID)
	}
	if v.HasLastInsertID {
		b.add("last_insert_id=%d", v.LastInsertID)
	}
	if v.Rand != nil {
		b.add("rand_seed1=%d, rand_seed2=%d", v.Rand.Seed1, v.Rand.Seed2)
	}
}

// userVars renders SET @name:=value for each user variable, typed as the
// source had it.
func userVars(vars []*binlog.UserVarEvent, coll Collation) (string, error) {
	var b strings.Builder
	b.WriteString("SET ")
	for i, u := range vars {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("@" + sqlquote.Name(u.Name) + ":=")
		if u.Null {
			b.WriteString("NULL")
			continue
		}
		switch u.Type {
		case binlog.UserVarInt:
			n, un := u.Int()
			if u.Unsigned {
				b.WriteString(strconv.FormatUint(un, 10))
			} else {
				b.WriteString(strconv.FormatInt(n, 10))
			}
		case binlog.UserVarReal:
			// An exponent makes the literal a DOUBLE, as the variable was.
			b.WriteString(strconv.FormatFloat(u.Real(), 'e', -1, 64))
		case binlog.UserVarDecimal:
			d, err := u.DecimalText()
			if err != nil {
				return "", err
			}
			b.WriteString(d)
		case binlog.UserVarString:
			name, cs, ok := coll(uint16(u.Collation))
			if !ok || u.Collation > 0xffff {
				return "", fmt.Errorf("user variable @%s: the target does not know collation %d", u.Name, u.Collation)
			}
			b.Write(sqlquote.AppendHex(nil, cs, u.Value))
			b.WriteString(" COLLATE " + sqlquote.Name(name))
		default:
			return "", fmt.Errorf("user variable @%s of unknown type %d", u.Name, u.Type)
		}
	}
	return b.String(), nil
}

// Check refuses a statement no replica can reproduce: one the source cut
// short (killed, timed out, shut down) after it did an unknown part of its
// work.
func Check(st *txn.Statement) error {
	if sqlerr.Interrupted(st.ErrorCode) {
		return fmt.Errorf("the statement was interrupted on the source (error %d) after doing an unknown part of its work, "+
			"so the source may hold a partial result no replica can reproduce: check the source, apply the statement's "+
			"effect on the target by hand, then start the stream after this transaction with --start-gtid", st.ErrorCode)
	}
	return nil
}

// Outcome judges how a statement ended on the target (err, nil for
// success) against how it ended on the source (st.ErrorCode). A statement
// logged with an error did part of its work on the source (a multi-table
// DROP stopped at a missing table, a CREATE OR REPLACE that dropped the old
// table and then failed): ending with the same error on the target means it
// did the same part there, and the stream goes on (accepted is set). Any
// other combination stops the stream, naming both errors.
func Outcome(st *txn.Statement, err error) (accepted bool, _ error) {
	got := sqlerr.Code(err)
	switch {
	case st.ErrorCode == 0:
		return false, err
	case err == nil:
		return false, fmt.Errorf("the statement failed on the source with error %d but succeeded on the target: "+
			"the target did more than the source did", st.ErrorCode)
	case got == 0:
		return false, err // not a server's answer: the connection failed
	case sqlerr.SameReplicationError(st.ErrorCode, got):
		return true, nil
	}
	return false, fmt.Errorf("the statement failed on the source with error %d and on the target with a different one: %w",
		st.ErrorCode, err)
}

func onOff(on bool) string {
	if on {
		return "1"
	}
	return "0"
}
