package main

import (
	"reflect"
	"testing"
)

// mariadb-binlog's output for a format description, a DDL and two
// transactions of row events (abridged base64).
const binlogOutput = `/*!50530 SET @@SESSION.PSEUDO_SLAVE_MODE=1*/;
DELIMITER /*!*/;
# at 4
#261126 10:45:16 server id 1  end_log_pos 256 CRC32 0x7bbf0d94 	Start: binlog v 4
BINLOG '
wA0Iaw8BAAAA/AAAAAABAAABAAQAMTAuMTEu
AAAAAAAAAAAEEwQADQgICAoKCgGjskLW
'/*!*/;
# at 300
/*M!100001 SET @@session.gtid_domain_id=0*//*!*/;
CREATE TABLE t (id INT PRIMARY KEY)
/*!*/;
# at 400
START TRANSACTION
/*!*/;
# at 450
#261126 10:45:16 server id 1  end_log_pos 513 CRC32 0x1 	Table_map: ` + "`d`.`t`" + ` mapped to number 18
# at 513
#261126 10:45:16 server id 1  end_log_pos 558 CRC32 0x2 	Write_rows: table id 18 flags: STMT_END_F
BINLOG '
wA0IaxMBAAAAPwAAABADAAAAABIAAAAAAAEAAWQAAXQAAwMPAwKQAQYBAQACAS0EBwJpZAF2AW4I
wA0IaxcBAAAALQAAAD0DAAAAABIAAAAAAAEAAwf4AQAAAAEAeAEAAACcbgD7
'/*!*/;
# at 558
#261126 10:45:16 server id 1  end_log_pos 589 CRC32 0x3 	Xid = 12
COMMIT/*!*/;
# at 589
BEGIN
/*!*/;
BINLOG '
AAAA
'/*!*/;
BINLOG '
BBBB
'/*!*/;
COMMIT/*!*/;
DELIMITER ;
# End of log file
`

func TestBinlogStatements(t *testing.T) {
	fde, txns, err := binlogStatements([]byte(binlogOutput))
	if err != nil {
		t.Fatal(err)
	}
	if want := "BINLOG '\nwA0Iaw8BAAAA/AAAAAABAAABAAQAMTAuMTEu\nAAAAAAAAAAAEEwQADQgICAoKCgGjskLW\n'"; fde != want {
		t.Errorf("format description %q, want %q", fde, want)
	}
	want := [][]string{
		{"wA0IaxMBAAAAPwAAABADAAAAABIAAAAAAAEAAWQAAXQAAwMPAwKQAQYBAQACAS0EBwJpZAF2AW4I\n" +
			"wA0IaxcBAAAALQAAAD0DAAAAABIAAAAAAAEAAwf4AQAAAAEAeAEAAACcbgD7\n"},
		{"AAAA\n", "BBBB\n"},
	}
	if !reflect.DeepEqual(txns, want) {
		t.Errorf("transactions %q, want %q", txns, want)
	}
	if _, _, err := binlogStatements([]byte("DELIMITER /*!*/;\nCOMMIT/*!*/;\n")); err == nil {
		t.Error("a COMMIT outside a transaction and no format description: no error")
	}
}
