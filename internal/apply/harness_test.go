package apply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/scheduler"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/testutil"
	"github.com/binlane/binlane/internal/txn"
)

// newFileSource replays a server's binlog files in order.
func newFileSource(t *testing.T, s *sandbox.Server) *binlog.Files {
	t.Helper()
	ctx := context.Background()
	if err := s.Exec(ctx, "FLUSH BINARY LOGS"); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(s.Dir, "data", "binlog.[0-9]*"))
	sort.Strings(files)
	return binlog.NewFiles(files[:len(files)-1]) // the last one is empty and still open
}

// pair is a source and target server for a test.
type pair struct {
	src, dst *sandbox.Server
}

func newPair(t *testing.T) *pair {
	return &pair{
		src: sandbox.StartT(t, sandbox.Options{Role: sandbox.Source}),
		dst: sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}),
	}
}

type runOpts struct {
	workers  int
	mode     scheduler.Mode
	maxBatch int
	rules    filter.Rules
	start    gtid.Set
	maxTxn   int
	// maxBatchBytes bounds a merged batch (Config.MaxBatchBytes).
	maxBatchBytes int
	// allowTriggers and source: see Config; process grants the target
	// account PROCESS (the lock-wait monitor then sees who waits for whom).
	allowTriggers bool
	process       bool
	source        SourceTables
	// lockWait is Config.LockWaitTimeout (seconds; 0: its default).
	lockWait int
	// maxRoundTrip is Config.MaxRoundTrip (0: its default).
	maxRoundTrip int
	// ready is Start.Ready.
	ready func()
}

const testOwner = "test/1/0"

// replay applies the source's whole binlog (from start) to the target.
func (p *pair) replay(t *testing.T, o runOpts) (*Stats, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	d, meta, builder, start := p.binlaneTarget(t, ctx, o.process, o.allowTriggers, o.start, "app", "dl", "uq", "wl")
	defer meta.Close()
	a := New(Config{Stream: "test", Owner: testOwner, Target: d, Workers: max(1, o.workers), Mode: o.mode, MaxBatch: o.maxBatch,
		MaxBatchBytes: o.maxBatchBytes, LockWaitTimeout: o.lockWait, MaxRoundTrip: o.maxRoundTrip,
		Logger: testutil.Logger(t), Source: o.source, Flavor: sqlerr.MariaDB}, builder, meta)
	src := &skipSource{inner: newFileSource(t, p.src), skip: start}
	asm := txn.NewAssembler(src, txn.Config{Rules: o.rules, MaxTxnBytes: o.maxTxn})
	pipe := txn.NewPipe(0)
	asmErr := make(chan error, 1)
	go func() {
		err := asm.Run(ctx, pipe)
		pipe.Close()
		asmErr <- err
	}()
	err := a.Run(ctx, pipe, Start{GTID: start, FirstSeq: 1, Ready: o.ready})
	for p := range pipe.C() {
		pipe.Taken(&p)
	}
	if aerr := <-asmErr; err == nil && !errors.Is(aerr, io.EOF) {
		err = aerr
	}
	// Every transaction binlane opened must be over: a leaked one would
	// hold row locks. (InnoDB refreshes INNODB_TRX only when it was not read
	// for 100 ms; the lock monitor may just have read it.)
	time.Sleep(250 * time.Millisecond)
	rows, qerr := p.dst.OpenT(t, "").Query(`SELECT t.trx_mysql_thread_id, t.trx_started, t.trx_rows_modified, t.trx_rows_locked,
		COALESCE(p.COMMAND,''), COALESCE(p.INFO,'') FROM information_schema.INNODB_TRX t
		LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id`)
	if qerr != nil {
		t.Fatal(qerr)
	}
	for rows.Next() {
		var id, mod, locked int64
		var started, cmd, info string
		rows.Scan(&id, &started, &mod, &locked, &cmd, &info)
		t.Errorf("after the run: transaction still open on the target: conn %d started %s modified %d locked %d command %s info %q",
			id, started, mod, locked, cmd, info)
	}
	rows.Close()
	return a.Stats(), err
}

// binlaneTarget sets up binlane's side of the target for the stream
// "test": the documented least-privilege account on dbs (the harness
// itself, root, only checks what is left open afterwards), the position
// table with the stream's saved position or start, owned by testOwner, and
// a plan builder. It returns the account's DSN, its metadata connection
// pool (the caller closes it), the builder and where the stream starts.
func (p *pair) binlaneTarget(t *testing.T, ctx context.Context, process, allowTriggers bool, start gtid.Set,
	dbs ...string) (dsn.DSN, *sql.DB, *plan.Builder, gtid.Set) {
	t.Helper()
	url, err := p.dst.GrantBinlane(ctx, process, dbs...)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dsn.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := d.OpenDB("")
	if err != nil {
		t.Fatal(err)
	}
	if err := position.Ensure(ctx, meta); err != nil {
		t.Fatal(err)
	}
	st, ok, err := position.Load(ctx, meta, "test")
	if err != nil {
		t.Fatal(err)
	}
	if ok && st.GTID != "" {
		if start, err = gtid.ParseSet(st.GTID); err != nil {
			t.Fatal(err)
		}
	} else if _, err := position.Create(ctx, meta, position.State{Name: "test", GTID: start.String()}); err != nil {
		t.Fatal(err)
	}
	if err := position.TakeOver(ctx, meta, "test", testOwner); err != nil {
		t.Fatal(err)
	}
	colls, err := schema.LoadCollations(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := schema.NewCache(ctx, meta)
	if err != nil {
		t.Fatal(err)
	}
	return d, meta, plan.NewBuilder(cache, colls, plan.Options{AllowTriggers: allowTriggers}), start
}

// skipSource drops the groups a start position already contains, as a
// source does when a replica connects with a GTID position.
type skipSource struct {
	inner    txn.Source
	skip     gtid.Set
	skipping bool
}

func (s *skipSource) Next(ctx context.Context) (binlog.Message, error) {
	for {
		m, err := s.inner.Next(ctx)
		if err != nil || m.Event == nil {
			return m, err
		}
		ev := m.Event
		if g, ok := ev.Data.(*binlog.MariaGTIDEvent); ok {
			s.skipping = s.skip.Contains(g.GTID)
		}
		if !s.skipping {
			return m, nil
		}
		switch ev.Data.(type) {
		case *binlog.FormatDescriptionEvent, *binlog.RotateEvent, *binlog.TableMap:
			return m, nil
		}
	}
}

// compare checks that every table of the given schemas holds the same rows
// on both servers (row by row, every column, byte for byte).
func (p *pair) compare(t *testing.T, schemas ...string) {
	t.Helper()
	src, dst := p.src.OpenT(t, ""), p.dst.OpenT(t, "")
	for _, db := range schemas {
		tables := listTables(t, src, db)
		if got := listTables(t, dst, db); strings.Join(got, ",") != strings.Join(tables, ",") {
			t.Fatalf("schema %s: tables differ: source %v, target %v", db, tables, got)
		}
		for _, tbl := range tables {
			a, b := dumpTable(t, src, db, tbl), dumpTable(t, dst, db, tbl)
			if len(a) != len(b) {
				t.Fatalf("%s.%s: %d rows on the source, %d on the target", db, tbl, len(a), len(b))
			}
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("%s.%s row %d differs:\nsource %q\ntarget %q", db, tbl, i, a[i], b[i])
				}
			}
		}
	}
}

func listTables(t *testing.T, db *sql.DB, schemaName string) []string {
	rows, err := db.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA=? AND TABLE_TYPE='BASE TABLE' ORDER BY 1", schemaName)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		out = append(out, n)
	}
	return out
}

// dumpTable returns every row as text, sorted, with binary-safe hex for
// every column.
func dumpTable(t *testing.T, db *sql.DB, schemaName, table string) []string {
	cols := []string{}
	rows, err := db.Query("SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA=? AND TABLE_NAME=? ORDER BY ORDINAL_POSITION", schemaName, table)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, fmt.Sprintf("COALESCE(HEX(`%s`),'<NULL>')", c))
	}
	rows.Close()
	q := fmt.Sprintf("SELECT CONCAT_WS('|', %s) FROM `%s`.`%s`", strings.Join(cols, ","), schemaName, table)
	rows, err = db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func writeFile(t *testing.T, path, content string) {
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
