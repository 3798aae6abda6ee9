package replica

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/wire"
	"github.com/binlane/binlane/internal/wire/wiretest"
)

// The MySQL code paths run against wiretest's fake server: no MySQL server
// can be installed here. They are unverified against a real MySQL 8.0/8.4.

var mysqlVars = map[string]string{
	"log_bin": "1", "binlog_format": "ROW", "binlog_row_image": "FULL", "binlog_row_metadata": "FULL",
	"binlog_checksum": "CRC32", "server_id": "1", "gtid_executed": "", "gtid_mode": "ON",
	"server_uuid": "01020300-0000-0000-0000-000000000000", "binlog_transaction_compression": "0",
	"binlog_row_value_options": "",
}

var selectVarRE = regexp.MustCompile(`@@global\.(\w+)`)

// mysqlQueries answers the preflight like a MySQL 8.0 source would.
func mysqlQueries(vars map[string]string) func(string) (*wiretest.Result, error) {
	return func(q string) (*wiretest.Result, error) {
		switch {
		case strings.HasPrefix(q, "SET "):
			return nil, nil
		case strings.HasPrefix(q, "SELECT @@global."):
			res := &wiretest.Result{Rows: [][]*string{{}}}
			for _, m := range selectVarRE.FindAllStringSubmatch(q, -1) {
				v, ok := vars[m[1]]
				if !ok {
					return nil, &wiretest.SQLError{Code: 1193, State: "HY000", Message: fmt.Sprintf("Unknown system variable '%s'", m[1])}
				}
				res.Columns = append(res.Columns, m[0])
				res.Rows[0] = append(res.Rows[0], &v)
			}
			return res, nil
		}
		return nil, &wiretest.SQLError{Code: 1064, State: "42000", Message: "You have an error in your SQL syntax"}
	}
}

// serveFile streams a fixture file, skipping groups already in the
// requested set as MySQL does; it cuts the connection after cutAfter events
// of the transaction whose GTID sequence number is cutSeq.
func serveFile(f *binlogFile, cutSeq uint64, cutAfter int) func(*wiretest.Dump, *wiretest.Stream) error {
	return func(d *wiretest.Dump, s *wiretest.Stream) error {
		var have gtid.Set
		if d.Command == 0x1e {
			var err error
			if have, err = gtid.DecodeMySQL(d.GTIDData); err != nil {
				return s.Error(1236, err.Error())
			}
		}
		evs := append([][]byte{fakeRotate(f.name, 4)}, f.header...)
		for _, g := range f.groups {
			if have.Contains(g.gtid) {
				continue
			}
			for i, ev := range g.events {
				if g.gtid.Seq == cutSeq && i == cutAfter {
					evs = append(evs, nil) // cut here
					break
				}
				evs = append(evs, ev)
			}
		}
		for _, ev := range evs {
			if ev == nil {
				return s.Conn().Close()
			}
			if err := s.Event(ev); err != nil {
				return err
			}
		}
		if d.Flags&1 != 0 {
			return s.EOF()
		}
		for {
			time.Sleep(50 * time.Millisecond)
			if err := s.Event(f.heartbeat()); err != nil {
				return err
			}
		}
	}
}

func mysqlGTIDn(n uint64) gtid.GTID { return gtid.GTID{Flavor: gtid.MySQL, SID: sid, Seq: n} }

func TestMySQLStreamResumesByGTIDSet(t *testing.T) {
	f := newBinlogFile("binlog.000001", true)
	for i := uint64(1); i <= 4; i++ {
		f.addInsert(mysqlGTIDn(i), int32(i), fmt.Sprintf("row %d", i))
	}
	cut := true
	srv := wiretest.Start(t, wiretest.Config{User: "repl", Password: "pw", Query: mysqlQueries(mysqlVars),
		Dump: func(d *wiretest.Dump, s *wiretest.Stream) error {
			if cut {
				cut = false
				return serveFile(f, 3, 4)(d, s) // drop the line before transaction 3's XID
			}
			return serveFile(f, 0, 0)(d, s)
		}})
	cfg := Config{Config: wire.Config{Addr: srv.Addr(), User: "repl", Password: "pw"}, ServerID: 1001, Start: StartAtGTID(gtid.Set{}),
		HeartbeatPeriod: 100 * time.Millisecond, MinBackoff: 10 * time.Millisecond, Logger: testutil.LoggerAt(t, slog.LevelDebug)}
	s := openT(t, cfg)
	if src := s.Source(); src.Flavor != gtid.MySQL || src.ServerUUID != mysqlVars["server_uuid"] || src.Checksum != "CRC32" {
		t.Fatalf("source %+v", src)
	}
	c := newConsumer(t, s)
	var names []string
	c.until("transaction 4", func(m binlog.Message) bool {
		ev := m.Event
		if ev == nil {
			return false
		}
		if r, ok := ev.Data.(*binlog.RowsEvent); ok {
			vals, err := r.AppendRows(nil)
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, fmt.Sprintf("%s=%d %s=%s", r.Table.Columns[0].Name, vals[0].Int(), r.Table.Columns[1].Name, vals[1].B))
		}
		return len(c.gtids) == 4
	})
	for i, g := range c.gtids {
		if g != mysqlGTIDn(uint64(i+1)) {
			t.Fatalf("transactions %v", c.gtids)
		}
	}
	if len(c.restarts) != 1 || c.partial != 1 {
		t.Fatalf("%d restarts (%d partial)", len(c.restarts), c.partial)
	}
	if want := "id=3 name=row 3"; len(names) != 5 || names[2] != want || names[3] != want {
		t.Errorf("rows %q: transaction 3's row should appear twice (partial, then whole)", names)
	}
	dumps := srv.Dumps()
	if len(dumps) != 2 {
		t.Fatalf("%d dumps", len(dumps))
	}
	first, second := dumps[0], dumps[1]
	if first.Command != 0x1e || first.Flags != 0 || first.ServerID != 1001 || first.File != "" || first.Pos != 4 ||
		!bytes.Equal(first.GTIDData, make([]byte, 8)) {
		t.Errorf("first dump request %+v", first)
	}
	want := mustSet(t, sid.String()+":1-2").EncodeMySQL()
	if !bytes.Equal(second.GTIDData, want) {
		t.Errorf("resumed with %x, want the executed set %x", second.GTIDData, want)
	}
	joined := strings.Join(first.Queries, "\n")
	for _, q := range []string{"@source_binlog_checksum = 'NONE'", "@master_binlog_checksum = 'NONE'",
		"@source_heartbeat_period = 100000000", "@replica_uuid = '", "net_write_timeout = 3600"} {
		if !strings.Contains(joined, q) {
			t.Errorf("session setup lacks %q:\n%s", q, joined)
		}
	}
	uuid := regexp.MustCompile(`@replica_uuid = '([^']+)'`)
	if a, b := uuid.FindStringSubmatch(joined), uuid.FindStringSubmatch(strings.Join(second.Queries, "\n")); a[1] != b[len(b)-1] {
		t.Errorf("replica uuid changed across reconnects")
	}
	if pos := s.Position(); pos.GTIDs.String() != sid.String()+":1-4" {
		t.Errorf("position %s", pos)
	}
}

func TestMySQLFilePositionNonBlocking(t *testing.T) {
	f := newBinlogFile("binlog.000009", false)
	f.addInsert(mysqlGTIDn(1), 1, "x")
	srv := wiretest.Start(t, wiretest.Config{User: "repl", Password: "pw", Query: mysqlQueries(mysqlVars), Dump: serveFile(f, 0, 0)})
	cfg := Config{Config: wire.Config{Addr: srv.Addr(), User: "repl", Password: "pw"}, ServerID: 5, Start: StartAtFile("binlog.000009", 4), NonBlocking: true}
	c := newConsumer(t, openT(t, cfg))
	for {
		_, err := c.tryNext(10 * time.Second)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	d := srv.Dumps()[0]
	if d.Command != 0x12 || d.Flags != 1 || d.File != "binlog.000009" || d.Pos != 4 || d.ServerID != 5 {
		t.Fatalf("dump request %+v", d)
	}
	if pos := c.s.Position(); pos.File != "binlog.000009" || pos.Pos != uint64(f.pos) || len(c.gtids) != 1 {
		t.Fatalf("position %s:%d after %v, file ends at %d", pos.File, pos.Pos, c.gtids, f.pos)
	}
}

func TestMySQLErrors(t *testing.T) {
	srv := wiretest.Start(t, wiretest.Config{User: "repl", Password: "pw", Query: mysqlQueries(mysqlVars),
		Dump: func(_ *wiretest.Dump, s *wiretest.Stream) error {
			return s.Error(1236, "Cannot replicate because the source purged required binary logs.")
		}})
	cfg := Config{Config: wire.Config{Addr: srv.Addr(), User: "repl", Password: "pw"}, ServerID: 5, Start: StartAtGTID(mustSet(t, sid.String()+":1-9"))}
	_, err := newConsumer(t, openT(t, cfg)).tryNext(10 * time.Second)
	if !errors.Is(err, ErrPositionUnavailable) || !strings.Contains(err.Error(), sid.String()+":1-9") {
		t.Fatalf("got %v", err)
	}

	vars := map[string]string{}
	for k, v := range mysqlVars {
		vars[k] = v
	}
	vars["binlog_row_metadata"], vars["gtid_mode"], vars["binlog_transaction_compression"] = "MINIMAL", "OFF", "1"
	delete(vars, "binlog_row_value_options") // older 8.0: the variable does not exist
	srv2 := wiretest.Start(t, wiretest.Config{User: "repl", Password: "pw", Query: mysqlQueries(vars)})
	cfg.Addr = srv2.Addr()
	_, err = Open(context.Background(), cfg)
	var pfe *PreflightError
	// Compressed transactions are decoded: binlog_transaction_compression is
	// no problem (it once was).
	if !errors.As(err, &pfe) || len(pfe.Problems) != 2 || strings.Contains(err.Error(), "compression") {
		t.Fatalf("got %v", err)
	}
	for _, want := range []string{"binlog_row_metadata", "@@gtid_mode is OFF"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
}

// TestMySQLOptionalSettings: the preflight's decision on the settings only
// some MySQL versions have.
func TestMySQLOptionalSettings(t *testing.T) {
	cases := []struct {
		name, value string
		refused     bool
	}{
		{"binlog_transaction_compression", "ON", false},
		{"binlog_transaction_compression", "1", false},
		{"binlog_transaction_compression", "OFF", false},
		{"binlog_row_value_options", "PARTIAL_JSON", true},
		{"binlog_row_value_options", "partial_json", true},
		{"binlog_row_value_options", "", false},
	}
	for _, c := range cases {
		p := mysqlOptionalProblem(c.name, c.value)
		if (p != "") != c.refused || c.refused && !strings.Contains(p, "@@"+c.name) {
			t.Errorf("@@%s = %q: problem %q, want refused %v", c.name, c.value, p, c.refused)
		}
	}
}
