package sqlerr

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"
)

type wireErr struct{ code uint16 }

func (e *wireErr) Error() string      { return fmt.Sprintf("server error %d", e.code) }
func (e *wireErr) ServerCode() uint16 { return e.code }

func my(code uint16) error {
	return fmt.Errorf("wrapped: %w", &mysql.MySQLError{Number: code, Message: "x"})
}

func TestClassify(t *testing.T) {
	cases := []struct {
		name                      string
		err                       error
		flavor                    Flavor
		lost, transient, mismatch bool
	}{
		{"deadlock", my(Deadlock), MariaDB, false, true, false},
		{"lock wait timeout", my(LockWaitTimeout), MySQL, false, true, false},
		{"killed query", my(QueryInterrupted), MariaDB, false, true, false},
		{"server shutdown", my(ServerShutdown), MariaDB, true, false, false},
		{"connection killed (MariaDB)", my(ConnectionKilled), MariaDB, true, false, false},
		// 4031: a dropped idle client on MySQL, a trigger DDL error on
		// MariaDB, where retrying would loop forever.
		{"4031 on MySQL", my(Code4031), MySQL, true, false, false},
		{"4031 on MariaDB", my(Code4031), MariaDB, false, false, false},
		{"4031 unknown flavor", my(Code4031), Unknown, false, false, false},
		{"no such table", my(NoSuchTable), MariaDB, false, false, true},
		{"duplicate", my(DupEntry), MariaDB, false, false, true},
		{"bad conn", driver.ErrBadConn, MariaDB, true, false, false},
		{"EOF", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), MariaDB, true, false, false},
		{"wire error code", &wireErr{ServerShutdown}, MariaDB, true, false, false},
		{"plain error", errors.New("boom"), MariaDB, false, false, false},
	}
	for _, c := range cases {
		if got := ConnectionLost(c.err, c.flavor); got != c.lost {
			t.Errorf("%s: ConnectionLost = %v", c.name, got)
		}
		if got := Transient(c.err); got != c.transient {
			t.Errorf("%s: Transient = %v", c.name, got)
		}
		if got := SchemaMismatch(c.err); got != c.mismatch {
			t.Errorf("%s: SchemaMismatch = %v", c.name, got)
		}
	}
	if Code(&wireErr{1236}) != MasterFatalReading || Code(nil) != 0 || !Is(my(1062), DupEntry, NoSuchTable) {
		t.Error("Code/Is")
	}
	if !PrivilegeMissing(my(SpecificAccessDenied)) || PrivilegeMissing(my(Deadlock)) {
		t.Error("PrivilegeMissing")
	}
}
