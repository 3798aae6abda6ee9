package session

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/sqlquote"
	"github.com/binlane/binlane/internal/txn"
)

func names(id uint16) (string, string, bool) {
	switch id {
	case 8:
		return "latin1_swedish_ci", "latin1", true
	case 45:
		return "utf8mb4_general_ci", "utf8mb4", true
	case 224:
		return "utf8mb4_unicode_ci", "utf8mb4", true
	}
	return "", "", false
}

func TestEnter(t *testing.T) {
	maria := binlog.QueryStatus{HasFlags2: true, Flags2: binlog.Flags2ExplicitDefaultsTS, HasSQLMode: true, SQLMode: 1411383296 | noDirInCreate,
		ClientCharset: 45, ConnCollation: 45, ServerCollat: 45, MariaDB: true, HasExplicitDefaultsTS: true, ExplicitDefaultsTS: true}
	cases := []struct {
		name string
		st   txn.Statement
		want []string // substrings of the statements, in order
		not  []string
	}{
		{"MariaDB defaults", txn.Statement{Status: maria, Timestamp: 1795628197},
			[]string{"SET SESSION timestamp=1795628197, sql_mode=1411383296, foreign_key_checks=1, unique_checks=1, sql_auto_is_null=0, " +
				"check_constraint_checks=1, sql_if_exists=0, system_versioning_insert_history=0, explicit_defaults_for_timestamp=1, " +
				"auto_increment_increment=1, auto_increment_offset=1, character_set_client=utf8mb4, collation_connection=45, collation_server=45, " +
				"time_zone=DEFAULT, lc_time_names=0"}, []string{"collation_database"}},
		{"A: explicit_defaults_for_timestamp off", txn.Statement{Status: func() binlog.QueryStatus {
			s := maria
			s.Flags2, s.ExplicitDefaultsTS = 0, false
			return s
		}()}, []string{"explicit_defaults_for_timestamp=0"}, []string{"SESSION timestamp="}},
		{"B: the event's clock, microseconds too", txn.Statement{Status: func() binlog.QueryStatus {
			s := maria
			s.HasMicros, s.Micros = true, 4552
			return s
		}(), Timestamp: 1}, []string{"timestamp=1.004552,"}, nil},
		{"session flags", txn.Statement{Status: binlog.QueryStatus{HasFlags2: true, MariaDB: true, Flags2: binlog.Flags2NoForeignKeyChecks |
			binlog.Flags2RelaxedUniqueChecks | binlog.Flags2AutoIsNull | binlog.Flags2NoCheckConstraints | binlog.Flags2IfExists |
			binlog.Flags2InsertHistory}},
			[]string{"foreign_key_checks=0, unique_checks=0, sql_auto_is_null=1, check_constraint_checks=0, sql_if_exists=1, system_versioning_insert_history=1"},
			[]string{"explicit_defaults"}},
		{"MySQL: no MariaDB-only variables", txn.Statement{Status: binlog.QueryStatus{HasFlags2: true, HasExplicitDefaultsTS: true}},
			[]string{"explicit_defaults_for_timestamp=0"}, []string{"sql_if_exists", "check_constraint", "insert_history"}},
		{"a client collation that is not its character set's default", txn.Statement{Status: binlog.QueryStatus{ClientCharset: 224,
			ConnCollation: 224, ServerCollat: 8}}, []string{"character_set_client=utf8mb4, collation_connection=224, collation_server=8"}, nil},
		{"zone, locale, database collation, auto-increment", txn.Statement{Status: binlog.QueryStatus{TimeZone: "+05:30", LCTimeNames: 4,
			CharsetDB: 8, AutoIncInc: 3, AutoIncOffset: 2}},
			[]string{"auto_increment_increment=3, auto_increment_offset=2", "time_zone='+05:30', lc_time_names=4, collation_database=8"}, nil},
		{"context events", txn.Statement{Vars: txn.Vars{HasInsertID: true, InsertID: 10, HasLastInsertID: true, LastInsertID: 9,
			Rand: &binlog.RandEvent{Seed1: 1, Seed2: 2}, User: []*binlog.UserVarEvent{
				{Name: "s", Type: binlog.UserVarString, Collation: 8, Value: []byte{0x83}},
				{Name: "n", Null: true},
				{Name: "i", Type: binlog.UserVarInt, Value: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
				{Name: "u", Type: binlog.UserVarInt, Unsigned: true, Value: []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
				{Name: "r", Type: binlog.UserVarReal, Value: []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}},
				{Name: "d", Type: binlog.UserVarDecimal, Value: []byte{5, 2, 0x80, 0x7b, 0x2d}},
				{Name: "we`ird", Type: binlog.UserVarInt, Value: make([]byte, 8)},
			}}},
			[]string{"insert_id=10, last_insert_id=9, rand_seed1=1, rand_seed2=2",
				"SET @`s`:=_latin1 X'83' COLLATE `latin1_swedish_ci`, @`n`:=NULL, @`i`:=-1, @`u`:=18446744073709551615, " +
					"@`r`:=1.5e+00, @`d`:=123.45, @`we``ird`:=0"}, nil},
	}
	for _, c := range cases {
		got, err := Enter(&c.st, names)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		all := strings.Join(got, ";\n")
		at := 0
		for _, w := range c.want {
			i := strings.Index(all[at:], w)
			if i < 0 {
				t.Errorf("%s: %q lacks %q (in order)", c.name, all, w)
				break
			}
			at += i + len(w)
		}
		for _, n := range c.not {
			if strings.Contains(all, n) {
				t.Errorf("%s: %q has %q", c.name, all, n)
			}
		}
	}
	_, err := Enter(&txn.Statement{Vars: txn.Vars{User: []*binlog.UserVarEvent{{Name: "s", Type: binlog.UserVarString, Collation: 999}}}}, names)
	if err == nil {
		t.Fatal("a user variable in an unknown collation was rendered")
	}
	// A time zone comes from the binlog: one that is not a plain name must
	// not become SQL.
	_, err = Enter(&txn.Statement{Status: binlog.QueryStatus{TimeZone: `+00:00', sql_log_bin=0, time_zone='\`}}, names)
	if !errors.Is(err, sqlquote.ErrNotPlain) || !strings.Contains(err.Error(), "time_zone") {
		t.Fatalf("a crafted time zone: %v", err)
	}
}

func TestOutcome(t *testing.T) {
	dup := &mysql.MySQLError{Number: 1586, Message: "Duplicate entry"}
	unknown := &mysql.MySQLError{Number: 4092, Message: "Unknown VIEW"}
	other := &mysql.MySQLError{Number: 1146, Message: "no such table"}
	cases := []struct {
		name     string
		code     uint16
		err      error
		accepted bool
		fails    string
	}{
		{"no error, none expected", 0, nil, false, ""},
		{"error, none expected", 0, other, false, "no such table"},
		{"D: the same error", 1113, &mysql.MySQLError{Number: 1113}, true, ""},
		{"C: DROP VIEW v1, v_missing", 4092, unknown, true, ""},
		{"duplicate-key errors are one", 1062, dup, true, ""},
		{"expected, but succeeded", 1113, nil, false, "succeeded on the target"},
		{"a different error", 4092, other, false, "error 4092 and on the target with a different one"},
		{"connection error", 1113, errors.New("broken pipe"), false, "broken pipe"},
	}
	for _, c := range cases {
		accepted, err := Outcome(&txn.Statement{ErrorCode: c.code}, c.err)
		if accepted != c.accepted || (err == nil) != (c.fails == "") || err != nil && !strings.Contains(err.Error(), c.fails) {
			t.Errorf("%s: accepted %v err %v", c.name, accepted, err)
		}
	}
	if err := Check(&txn.Statement{ErrorCode: 1317}); err == nil || !strings.Contains(err.Error(), "interrupted on the source") {
		t.Errorf("a statement killed on the source: %v", err)
	}
	if err := Check(&txn.Statement{ErrorCode: 1113}); err != nil {
		t.Error(err)
	}
}
