package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sandbox"
)

// TestSnapshotPositions: a snapshot's position is exactly the source's
// binlog state it sees, read the cheap way (the binlog's end, with BINLOG
// MONITOR) or computed by the server (a SELECT-only account), or only its
// coordinate; a write after the snapshot began is not in it.
func TestSnapshotPositions(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "INSERT INTO app.t VALUES (1)",
		"CREATE USER reader@'%' IDENTIFIED BY 'pw'", "GRANT SELECT ON app.* TO reader@'%'")
	ctx := context.Background()
	root := src.OpenT(t, "")
	binlogPos := func() (gtid.Set, string) {
		var pos, file string
		var off uint64
		if err := root.QueryRow("SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
			t.Fatal(err)
		}
		rows, err := root.Query("SHOW MASTER STATUS")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		for i := range vals {
			vals[i] = new(sql.RawBytes)
		}
		vals[0], vals[1] = &file, &off
		rows.Next()
		if err := rows.Scan(vals...); err != nil {
			t.Fatal(err)
		}
		set, _ := gtid.ParseSet(pos)
		return set, file + ":" + strconv.FormatUint(off, 10)
	}
	for i, c := range []struct {
		name string
		db   *sql.DB
	}{
		{"binlane's source account", src.OpenBinlaneT(t, "app")},
		{"SELECT only", func() *sql.DB {
			db, err := sql.Open("mysql", "reader:pw@tcp("+src.Addr()+")/")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}()},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := c.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var cache Cache
			want, coord := binlogPos()
			got, err := Start(ctx, conn, &cache)
			if err != nil || !got.Equal(want) {
				t.Fatalf("Start: %s, %v; want %s", got, err, want)
			}
			if cached, ok := cache.get(coord); !ok || !cached.Equal(want) {
				t.Errorf("cache after Start: %s %v (coordinate %s)", cached, ok, coord)
			}
			// A write after the snapshot began is not in it.
			id := strconv.Itoa(10 + i)
			src.ExecT(t, "INSERT INTO app.t VALUES ("+id+")")
			var n int
			if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.t WHERE id = "+id).Scan(&n); err != nil || n != 0 {
				t.Fatalf("the snapshot sees a later write: %d %v", n, err)
			}
			after, afterCoord := binlogPos()
			p, err := Query{coordinateOnly: true}.Begin(ctx, conn)
			if err != nil || p.HasGTIDs || p.File+":"+strconv.FormatUint(p.Offset, 10) != afterCoord {
				t.Fatalf("StartAt by coordinate: %+v %v, want %s", p, err, afterCoord)
			}
			if got, err := Start(ctx, conn, &cache); err != nil || !got.Equal(after) || got.Equal(want) {
				t.Fatalf("Start after a write: %s %v, want %s", got, err, after)
			}
		})
	}
}

// failingSteps answers the statement fail with err, the others with
// nothing (no rows scanned).
type failingSteps struct {
	fail string
	err  error
}

func (f failingSteps) answer(stmt string) error {
	if stmt == f.fail {
		return f.err
	}
	return nil
}

func (f failingSteps) row(stmt string, _ ...any) error                 { return f.answer(stmt) }
func (f failingSteps) exec(stmt string) error                          { return f.answer(stmt) }
func (f failingSteps) rows(stmt string, _ func(*sql.Rows) error) error { return f.answer(stmt) }

// TestWalkKeepsTheCause: whichever statement of a snapshot fails, the
// error wraps the driver's, so that a stop (context canceled) is seen as
// one by the copy and does not hide the error that stopped it (it did
// for the binlog position's read, which formatted it with %v).
func TestWalkKeepsTheCause(t *testing.T) {
	for _, stmt := range []string{beforeStatement, startStatement, coordStatement} {
		for _, q := range []Query{{}, {coordinateOnly: true}} {
			if q.coordinateOnly && stmt == beforeStatement {
				continue
			}
			_, err := q.walk(failingSteps{stmt, context.Canceled})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("%q fails, coordinateOnly=%v: %v does not wrap context.Canceled", stmt, q.coordinateOnly, err)
			}
		}
	}
}
