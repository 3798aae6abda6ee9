package replicate

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/copier"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/keyrange"
	"github.com/binlane/binlane/internal/position"
	"github.com/binlane/binlane/internal/provision"
	"github.com/binlane/binlane/internal/redact"
	"github.com/binlane/binlane/internal/replica"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlerr"
	"github.com/binlane/binlane/internal/txn"
)

// CopyConfig describes the copy of a stream that starts with an empty
// target.
type CopyConfig struct {
	// Mode: "auto" copies when the stream has no position yet (and no
	// --start-gtid); "never" (or "") assumes the target is in sync.
	Mode    string
	Workers int
	// ChunkTime is the time a chunk should take.
	ChunkTime time.Duration
	// MaxChunkBytes is copier.Config.MaxChunkBytes (0: its default; tests
	// make it small, so that a few wide rows reach it).
	MaxChunkBytes int
	// AfterRead is copier.Config.AfterRead (tests).
	AfterRead func(ctx context.Context, schema, table string, rows [][][]byte) error
	// BeforeRead is copier.Config.BeforeRead (tests).
	BeforeRead func(ctx context.Context, schema, table string)
	// AroundListing, when set (tests), runs right before (false) and right
	// after (true) the copy lists the source's tables to pick its start.
	AroundListing func(listed bool)
	// ByCoordinate is copier.Config.ByCoordinate (tests).
	ByCoordinate bool
	// InlineIndexes creates the copied tables with all their indexes,
	// maintained row by row while the rows go in; by default the secondary
	// indexes that can wait are built once a table's rows are in (package
	// provision).
	InlineIndexes bool
	// BeforeBuild, when set (tests), runs before the stream starts when a
	// resumed copy builds the indexes of a table whose rows are copied.
	BeforeBuild func(table string)
	// AfterCreate, when set (tests), runs when a new copy has created the
	// target's tables, before it records its start.
	AfterCreate func()
	// ExitWhenDone ends the run once every table is copied and the target
	// caught up with the source's position at that moment (binlane copy).
	ExitWhenDone bool
	// Objects says how views, sequences, routines and events are created.
	Objects provision.ObjectOptions
}

// copyRun is the copy of one attempt.
type copyRun struct {
	src    *sql.DB
	state  *copier.State
	tables []*copier.Table
	copier *copier.Copier
	merger *copier.Merger
	// readDone is closed when every chunk is read (binlane copy waits for
	// it before it looks for the end).
	readDone chan struct{}
}

func (c *copyRun) close() {
	if c != nil {
		c.src.Close()
	}
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// copyHeartbeat is the longest heartbeat period while a copy runs.
const copyHeartbeat = time.Second

// errCopied ends a run whose copy is done (binlane copy).
var errCopied = errors.New("copy done and caught up")

// prepareCopy starts a new copy (empty target, no position) or resumes an
// unfinished one; nil when the stream does not copy.
func (r *run) prepareCopy(ctx context.Context, rcfg replica.Config) (*copyRun, error) {
	cfg := &r.cfg
	saved, err := position.LoadCopy(ctx, r.meta, cfg.Stream)
	if err != nil {
		return nil, err
	}
	if saved, err = r.undoStoppedStart(ctx, saved); err != nil {
		return nil, err
	}
	unfinished := false
	for _, t := range saved {
		unfinished = unfinished || t.State != position.CopyDone
	}
	if !unfinished {
		if len(saved) > 0 || cfg.Copy.Mode != "auto" || cfg.StartGTID != "" {
			return nil, nil
		}
		st, ok, err := position.Load(ctx, r.meta, cfg.Stream)
		if err != nil {
			return nil, err
		}
		if ok && (st.GTID != "" || st.Applied > 0) {
			return nil, nil // replicating already, without a copy
		}
	} else if cfg.StartGTID != "" {
		return nil, fmt.Errorf("--start-gtid cannot be used while the stream's copy is unfinished (%d tables); "+
			"let it resume, or drop the target's tables and start again", len(saved))
	}
	// The readers send a snapshot's statements with their reads in one
	// round trip.
	src, err := cfg.Source.OpenDBWith("", func(c *mysql.Config) { c.MultiStatements = true })
	if err != nil {
		return nil, err
	}
	src.SetMaxOpenConns(copyReaders(cfg.Copy.Workers) + 3)
	cr := &copyRun{src: src}
	if err := r.setUpCopy(ctx, cr, rcfg, saved, unfinished); err != nil {
		cr.close()
		return nil, err
	}
	return cr, nil
}

// undoStoppedStart drops the tables a copy's start created on the target
// before it was stopped, short of recording the copy (position.CopyCreated),
// that are still empty; and returns the rest of the copy's rows. Left, a
// table the source has dropped since would stay on the target, and the
// stream would fail to create it again.
func (r *run) undoStoppedStart(ctx context.Context, saved []position.CopyTable) ([]position.CopyTable, error) {
	var rest []position.CopyTable
	for _, t := range saved {
		if t.State != position.CopyCreated {
			rest = append(rest, t)
			continue
		}
		dropped, err := provision.DropIfEmpty(ctx, r.meta, t.Schema, t.Table)
		if err != nil {
			return nil, fmt.Errorf("copy: a stopped start's table: %w", err)
		}
		if dropped {
			r.log.Info("dropped a table a stopped copy start created", "table", t.Schema+"."+t.Table)
		}
		if err := position.ForgetCreated(ctx, r.meta, r.cfg.Stream, t.Schema, t.Table); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

func (r *run) setUpCopy(ctx context.Context, cr *copyRun, rcfg replica.Config, saved []position.CopyTable, resume bool) error {
	cfg := &r.cfg
	if resume {
		tables, err := copier.ListTables(ctx, cr.src, cfg.Rules, false)
		if err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		if tables, err = resumeTables(tables, saved); err != nil {
			return err
		}
		r.log.Info("resuming the copy", "tables", len(tables))
		if err := r.buildCopied(ctx, tables, saved); err != nil {
			return err
		}
		cr.state, err = copier.NewState(tables, saved)
		cr.tables = tables
		return err
	}
	if err := waitNoPreparedXA(ctx, cr.src, 30*time.Second, r.log); err != nil {
		return err
	}
	st, err := stableTables(ctx, cr.src, cfg, rcfg, r.log)
	if err != nil {
		return err
	}
	if err := copier.WaitStartCommitted(ctx, cr.src, st.pos, st.file, st.offset, r.log); err != nil {
		return err
	}
	tables, pos := st.tables, st.pos
	if len(tables) == 0 && len(st.objects) == 0 {
		return fmt.Errorf("copy: no source table matches the stream's filters")
	}
	deferred, err := r.createDefinitions(ctx, st)
	if err != nil {
		return fmt.Errorf("copy: %w", err)
	}
	rows := make([]position.CopyTable, len(tables))
	for i, t := range tables {
		t.Build = provision.NewBuild(t.Schema, t.Name, deferred[i], copier.Neighbours(t.Def))
		t.Pending = provision.PendingKeys(deferred[i])
		rows[i] = position.CopyTable{Schema: t.Schema, Table: t.Name, Estimate: t.Rows, OnePass: t.OnePass,
			Deferred: provision.Encode(deferred[i])}
	}
	if cfg.Copy.AfterCreate != nil {
		cfg.Copy.AfterCreate()
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := position.StartCopy(ctx, r.meta, cfg.Stream, r.currentOwner(), pos.String(), rows); err != nil {
		return err
	}
	r.log.Info("copying", "tables", len(tables), "start", pos.String(), "workers", cfg.Copy.Workers)
	cr.tables = tables
	cr.state, err = copier.NewState(tables, rows)
	return err
}

// buildCopied builds, before the stream starts, the deferred indexes of
// the tables a previous run copied every row of (it stopped before it had
// built them, or during the build).
func (r *run) buildCopied(ctx context.Context, tables []*copier.Table, saved []position.CopyTable) error {
	for i, s := range saved {
		if s.State != position.CopyIndexing {
			continue
		}
		t := tables[i]
		if t.Build != nil {
			if r.cfg.Copy.BeforeBuild != nil {
				r.cfg.Copy.BeforeBuild(t.ID())
			}
			conn, err := r.meta.Conn(ctx)
			if err != nil {
				return err
			}
			err = provision.Build(ctx, conn, t.Build, r.log)
			conn.Close()
			if err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			t.Build = nil
		}
		if err := position.CopyBuilt(ctx, r.meta, r.cfg.Stream, t.Schema, t.Name); err != nil {
			return err
		}
		saved[i].State = position.CopyDone
	}
	return nil
}

// setPending tells the target's schema cache the unique keys the copy
// deferred (see schema.Cache.SetPending).
func (cr *copyRun) setPending(cache *schema.Cache) {
	for _, t := range cr.tables {
		if t.Build != nil {
			cache.SetPending(t.Schema, t.Name, t.Pending)
		}
	}
}

// stableTables lists the tables and other objects to copy and the
// source's position, which starts the stream: their definitions as they
// are at that position (listing), the sequences' states after it.
//
// Why they agree: the position from is read before the listing and to
// after it, and the binlog between the two must hold no statement that
// the stream would run (DDL on the selected tables, as the assembler sorts
// statements with the stream's own filter); otherwise all three are read
// again.
//   - DDL binlogged at or before from had changed its tables before the
//     listing began: MariaDB changes a table first and binlogs the
//     statement after, which is when its GTID joins @@gtid_binlog_pos.
//   - None was binlogged between from and to: the tables were the same all
//     along, and the listing shows them as they are at to.
//   - DDL binlogged after to is in the stream, after the start. It did not
//     change what the listing read: the statement keeps the table's
//     metadata lock until it is binlogged, and SHOW CREATE TABLE and the
//     information_schema reads of a table wait for that lock. (Not the
//     listing of names: a table whose DROP is under way from before the
//     listing until after to is read would be left out; the DROP then fails
//     on the target and stops the stream. That needs a DROP slower than the
//     whole listing between its own change and its binlog write; not seen.)
//
// Two listings that agree, with the position read between them, are not
// enough: they agree when a table is created before the position and
// dropped after it (or dropped before it and created again after it)
// while they run; the stream then starts with rows of a table the target
// never got, or with the CREATE of a table it already has.
func stableTables(ctx context.Context, src *sql.DB, cfg *Config, rcfg replica.Config, log *slog.Logger) (*startDefs, error) {
	for attempt := 1; ; attempt++ {
		from, err := replica.CurrentPosition(ctx, rcfg)
		if err != nil {
			return nil, fmt.Errorf("read the source's current position: %w", err)
		}
		if cfg.Copy.AroundListing != nil {
			cfg.Copy.AroundListing(false)
		}
		defs, err := listDefinitions(ctx, src, cfg.Rules)
		if err != nil {
			return nil, fmt.Errorf("copy: %w", err)
		}
		if cfg.Copy.AroundListing != nil {
			cfg.Copy.AroundListing(true)
		}
		to, err := replica.CurrentPosition(ctx, rcfg)
		if err != nil {
			return nil, fmt.Errorf("read the source's current position: %w", err)
		}
		stmt, err := statementBetween(ctx, rcfg, cfg.Rules, from.GTIDs, to.GTIDs)
		var why error
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			// What the binlog holds there is not known (such as an event the
			// stream would refuse, which may come before the start): another
			// try reads another stretch.
			why = fmt.Errorf("read the source's binlog from %s to %s: %w", from.GTIDs, to.GTIDs, err)
			log.Debug("could not read the source's binlog while the tables were listed; listing them again", "attempt", attempt,
				"error", err)
		case stmt == "":
			defs.pos, defs.file, defs.offset = to.GTIDs, to.File, to.Pos
			return defs, readSequences(ctx, src, defs.objects)
		default:
			why = errors.New("the source's tables keep changing (DDL)")
			if stmt = redact.Statement(stmt); len(stmt) > 200 {
				stmt = stmt[:200] + "..."
			}
			log.Debug("the source's tables changed while they were listed; listing them again", "attempt", attempt, "statement", stmt)
		}
		if attempt == 20 {
			return nil, fmt.Errorf("copy: could not find a start: %w", why)
		}
		select {
		case <-time.After(time.Duration(attempt) * 50 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// statementBetween reads the source's binlog after from up to to and
// returns the first statement there that the stream would run (""
// when there is none).
func statementBetween(ctx context.Context, rcfg replica.Config, rules filter.Rules, from, to gtid.Set) (string, error) {
	if from.ContainsSet(to) {
		return "", nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	rcfg.Start, rcfg.Logger = replica.StartAtGTID(from), quiet
	stream, err := replica.Open(ctx, rcfg)
	if err != nil {
		return "", err
	}
	defer stream.Close()
	pipe := txn.NewPipe(0)
	asm := txn.NewAssembler(stream, txn.Config{Rules: rules, MaxTxnBytes: 1 << 20, Start: from, StopAt: to, Logger: quiet})
	done := make(chan error, 1)
	go func() {
		err := asm.Run(ctx, pipe)
		pipe.Close()
		done <- err
	}()
	found := ""
	for p := range pipe.C() {
		pipe.Taken(&p)
		for _, it := range p.Body.Items {
			if it.Kind == txn.ItemStatement && found == "" {
				found = it.Statement.Query
				cancel()
			}
		}
	}
	err = <-done
	switch {
	case found != "":
		return found, nil
	case errors.Is(err, txn.ErrStopped):
		return "", nil
	case err == nil:
		return "", fmt.Errorf("the binlog stream ended before %s", to)
	}
	return "", err
}

// copyReaders is the number of source connections reading chunks for
// --copy-workers chunks written at once: twice as many, so that while a
// chunk waits for the stream to reach its snapshot (the stream lags a busy
// source) or for its commit, another reader's chunk is ready to be
// written; the applier bounds the writes (apply.Config.MaxChunkWrites).
func copyReaders(workers int) int { return 2 * workers }

// begin makes the merger and the copier of a stream starting after start.
func (cr *copyRun) begin(cfg *Config, start gtid.Set, log *slog.Logger) {
	cr.merger = copier.NewMerger(start)
	cr.copier = copier.New(copier.Config{Source: cr.src, Tables: cr.tables, State: cr.state, Merger: cr.merger,
		Readers: copyReaders(cfg.Copy.Workers), ChunkTime: cfg.Copy.ChunkTime, MaxChunkBytes: cfg.Copy.MaxChunkBytes, Throttle: cfg.Throttle, Logger: log,
		AfterRead: cfg.Copy.AfterRead, BeforeRead: cfg.Copy.BeforeRead, ByCoordinate: cfg.Copy.ByCoordinate})
}

// resumeTables keeps the tables of a saved copy; one the source no longer
// has (its DROP is ahead in the stream) keeps its saved key, so that the
// changes before the DROP are still filtered the same way. The indexes a
// table's copy deferred come from its checkpoint, in the same order as
// saved.
func resumeTables(listed []*copier.Table, saved []position.CopyTable) ([]*copier.Table, error) {
	byID := map[string]*copier.Table{}
	for _, t := range listed {
		byID[t.ID()] = t
	}
	var out []*copier.Table
	for _, s := range saved {
		var cov keyrange.Coverage
		if s.Coverage != "" {
			if err := json.Unmarshal([]byte(s.Coverage), &cov); err != nil {
				return nil, fmt.Errorf("the copy checkpoint of %s.%s: %w", s.Schema, s.Table, err)
			}
		}
		t := byID[s.Schema+"."+s.Table]
		switch {
		case t == nil:
			t = &copier.Table{Schema: s.Schema, Name: s.Table, Key: cov.Cols, OnePass: s.OnePass}
		case s.State != position.CopyDone && len(cov.Ranges) > 0 && !keyrange.Same(t.Key, cov.Cols):
			return nil, fmt.Errorf("the chunking key of %s changed since its copy started; drop the target's copy of the "+
				"table and the stream (binlane.copy, binlane.streams) and start the copy again", t.Quoted())
		}
		if s.State != position.CopyDone && cov.Cols != nil && !keyrange.Same(t.Key, cov.Cols) {
			t.Key = cov.Cols // (the listed key, the same, also knows its columns' charsets)
		}
		if s.State != position.CopyDone {
			ixs, err := provision.Decode(s.Deferred)
			if err != nil {
				return nil, fmt.Errorf("the copy checkpoint of %s.%s: %w", s.Schema, s.Table, err)
			}
			var neighbours []txn.TableName
			if t.Def != nil {
				neighbours = copier.Neighbours(t.Def)
			}
			t.Build = provision.NewBuild(t.Schema, t.Name, ixs, neighbours)
			t.Pending = provision.PendingKeys(ixs)
		}
		out = append(out, t)
	}
	return out, nil
}

// waitCopied ends the run (errCopied) once the copy is done and the target
// has applied everything the source had committed by then.
func (r *run) waitCopied(ctx context.Context, cr *copyRun, rcfg replica.Config, done <-chan struct{}) error {
	select {
	case <-done:
	case <-ctx.Done():
		return nil
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var target gtid.Set
	have := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if cr != nil && !cr.state.Done() {
			continue
		}
		if !have {
			pos, err := replica.CurrentPosition(ctx, rcfg)
			if err != nil {
				return fmt.Errorf("read the source's current position: %w", err)
			}
			target, have = pos.GTIDs, true
		}
		st, _, err := position.Load(ctx, r.meta, r.cfg.Stream)
		if err != nil {
			return err
		}
		applied, err := gtid.ParseSet(st.GTID)
		if err != nil {
			return err
		}
		if applied.ContainsSet(target) && copyFinished(ctx, r.meta, r.cfg.Stream) {
			args := []any{"position", target.String()}
			if cr != nil {
				st := cr.copier.Stats()
				args = append(args, "chunks", st.Chunks.Load(), "source_round_trips", st.RoundTrips.Load(),
					"chunks_binlog_still", st.StillChunks.Load(), "round_trips_binlog_still", st.StillTrips.Load(),
					"snapshots_behind_stream", st.Behind.Load())
			}
			r.log.Info("copy done; the target has caught up", args...)
			return errCopied
		}
	}
}

// copyFinished reports whether every table's copy is committed as done.
func copyFinished(ctx context.Context, meta *sql.DB, stream string) bool {
	tables, err := position.LoadCopy(ctx, meta, stream)
	if err != nil {
		return false
	}
	for _, t := range tables {
		if t.State != position.CopyDone {
			return false
		}
	}
	return true
}

// runCopy puts the merger between the assembler's pipe and the applier and
// starts the copier's readers. copyErr, called once the applier returned,
// reports a failure of either; stop ends the readers and waits for them.
func runCopy(ctx, applyCtx context.Context, cfg Config, cr *copyRun, from *txn.Pipe, stopSource context.CancelFunc) (
	out *txn.Pipe, copyErr func() error, stop func()) {
	out = txn.NewPipe(cfg.PipeBytes)
	mergeErr := make(chan error, 1)
	mergeCtx, cancelMerge := context.WithCancel(applyCtx)
	go func() {
		// The merger lives as long as the applier: a stop closes the
		// assembler's pipe, the merger passes that on, the applier drains.
		err := cr.merger.Run(mergeCtx, from, out)
		out.Close()
		if err != nil {
			stopSource()
		}
		mergeErr <- err
	}()
	copyCtx, cancelCopy := context.WithCancel(ctx)
	readErr := make(chan error, 1)
	go func() {
		err := cr.copier.Run(copyCtx)
		if err == nil && cr.readDone != nil {
			close(cr.readDone)
		}
		if err != nil && copyCtx.Err() == nil {
			stopSource() // the stream stops; the applier drains what is merged
		}
		readErr <- err
	}()
	var readRes error
	waited := false
	wait := func() {
		if !waited {
			cancelCopy()
			readRes, waited = <-readErr, true
		}
	}
	copyErr = func() error {
		// The applier returned: nothing reads what the merger sends.
		cancelMerge()
		if err := <-mergeErr; err != nil && !errors.Is(err, context.Canceled) {
			wait()
			return fmt.Errorf("copy: %w", err)
		}
		if copyCtx.Err() == nil {
			// Still reading: a failure of the readers already stopped the stream.
			select {
			case err := <-readErr:
				readRes, waited = err, true
			default:
			}
		}
		wait()
		if readRes != nil && !errors.Is(readRes, context.Canceled) && !copier.IsStopped(readRes) {
			return fmt.Errorf("copy: %w", readRes)
		}
		return nil
	}
	return out, copyErr, wait
}

// waitNoPreparedXA waits until no XA transaction is prepared on the source,
// for up to wait. The copy's snapshot cannot see the rows of one, and its
// XA PREPARE would come before the stream's start: when its XA COMMIT
// came, the target would lack them (the stream stops there rather than
// lose them). Where the source does not let binlane list them (MySQL
// without XA_RECOVER_ADMIN), the stream's own check is what is left.
func waitNoPreparedXA(ctx context.Context, src *sql.DB, wait time.Duration, log *slog.Logger) error {
	deadline := time.Now().Add(wait)
	for warned := false; ; {
		n, err := preparedXA(ctx, src)
		if err != nil && sqlerr.Code(err) == 0 {
			// No answer at all (the source is down): the attempt fails and
			// is retried, with no warning about XA for a first contact.
			return fmt.Errorf("copy: the source: %w", err)
		}
		if err != nil {
			log.Warn("cannot list the source's prepared XA transactions; a copy started while one is prepared stops at its XA COMMIT",
				"error", err)
			return nil
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("copy: %d XA transactions stay prepared on the source (XA RECOVER): a copy cannot include their rows; "+
				"commit or roll them back on the source, then start again", n)
		}
		if !warned {
			log.Info("waiting for XA transactions prepared on the source to finish before the copy starts", "prepared", n)
			warned = true
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func preparedXA(ctx context.Context, src *sql.DB) (int, error) {
	rows, err := src.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n, rows.Err()
}
