package replica

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/sandbox"
)

// Checksums NONE and CRC32, a real rotate mid-stream, DDL, XA and
// non-blocking mode ending in io.EOF.
func TestStreamChecksumsRotateAndEOF(t *testing.T) {
	for _, checksum := range []string{"CRC32", "NONE"} {
		t.Run(checksum, func(t *testing.T) {
			srv := sandbox.StartT(t, sandbox.Options{Extra: []string{"binlog-checksum=" + checksum}})
			srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v VARCHAR(20))",
				"INSERT INTO d.t VALUES (1, 'a')",
				"XA START 'x'", "INSERT INTO d.t VALUES (2, 'b')", "XA END 'x'", "XA PREPARE 'x'", "XA COMMIT 'x'",
				"FLUSH BINARY LOGS",
				"BEGIN", "INSERT INTO d.t VALUES (3, 'c')", "UPDATE d.t SET v = 'cc' WHERE id = 3", "COMMIT",
				"CREATE TABLE d.u (id INT PRIMARY KEY)", "DELETE FROM d.t WHERE id = 1")
			cfg := baseConfig(t, srv)
			cfg.NonBlocking = true
			s := openT(t, cfg)
			if src := s.Source(); src.Checksum != checksum || src.ServerID != 1 {
				t.Fatalf("source info %+v", src)
			}
			c := newConsumer(t, s)
			for {
				_, err := c.tryNext(30e9)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			c.checkSequence(1, lastSeq(t, srv))
			if c.rotates != 1 {
				t.Errorf("saw %d real rotates, want 1", c.rotates)
			}
			pos := s.Position()
			if !pos.GTIDs.Equal(binlogPos(t, srv)) || pos.File != "binlog.000002" {
				t.Errorf("final position %s (%s:%d), source at %s", pos, pos.File, pos.Pos, binlogPos(t, srv))
			}
			if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("after EOF: %v", err)
			}
		})
	}
}

// A row event of ~20 MiB crosses the 16 MiB packet boundary.
func TestLargeEventArrivesIntact(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.b (id INT PRIMARY KEY, v LONGBLOB)",
		"INSERT INTO d.b VALUES (1, CONCAT(REPEAT('0123456789abcdef', 20*65536), 'END'))")
	cfg := baseConfig(t, srv)
	cfg.NonBlocking = true
	cfg.QueueBytes = 1 << 20 // the big event must pass alone
	c := newConsumer(t, openT(t, cfg))
	var rows *binlog.RowsEvent
	c.until("the rows event", func(m binlog.Message) bool {
		ev := m.Event
		if ev == nil {
			return false
		}
		rows, _ = ev.Data.(*binlog.RowsEvent)
		return rows != nil
	})
	vals, err := rows.AppendRows(nil)
	if err != nil {
		t.Fatal(err)
	}
	want := 20<<20 + 3
	if got := vals[1].B; len(got) != want || string(got[:16]) != "0123456789abcdef" || string(got[len(got)-3:]) != "END" {
		t.Fatalf("blob of %d bytes, want %d", len(got), want)
	}
}

// TestCloseEndsDumpThread: closing a stream ends the source's dump thread
// at once (endDump), as the stream's own account. Left alone, the thread
// waits for the next event or heartbeat to find its connection gone (here
// 30 s), and a replica registering with the same server_id meanwhile
// waited about 100 ms for the source to kill it.
func TestCloseEndsDumpThread(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1)")
	cfg := baseConfig(t, srv)
	cfg.HeartbeatPeriod = 30 * time.Second
	s := openT(t, cfg)
	c := newConsumer(t, s)
	c.untilRows()
	if n := dumpThreads(t, srv); n != 1 {
		t.Fatalf("%d dump threads while streaming, want 1", n)
	}
	s.Close()
	noDumpWithin(t, srv, 500*time.Millisecond, "the closed stream")
}

// TestNothingReadBeforeNext: Open asks for the binlog but reads none of
// it until the first Next (a consumer still setting up keeps its core),
// and a stream closed unread still ends the source's dump thread.
func TestNothingReadBeforeNext(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{})
	srv.ExecT(t, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY)", "INSERT INTO d.t VALUES (1), (2)")
	cfg := baseConfig(t, srv)
	cfg.HeartbeatPeriod = 30 * time.Second
	queued := func(s *Stream) int {
		s.q.mu.Lock()
		defer s.q.mu.Unlock()
		return s.q.bytes
	}
	s := openT(t, cfg)
	time.Sleep(200 * time.Millisecond)
	if n := queued(s); n != 0 {
		t.Errorf("%d bytes of events read before the first Next", n)
	}
	c := newConsumer(t, s)
	c.untilRows()

	s.Close()
	unread := openT(t, cfg)
	dumpThreadID(t, srv) // the source has the unread stream's dump thread
	unread.Close()
	noDumpWithin(t, srv, 500*time.Millisecond, "the closed unread stream")
	if _, err := unread.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: %v, want ErrClosed", err)
	}
}
