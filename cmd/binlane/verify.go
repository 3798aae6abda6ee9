package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/pause"
	"github.com/binlane/binlane/internal/verify"
)

// verifyFlags are the options of `binlane verify`.
type verifyFlags struct {
	pairFlags
	chunkRows, threads   int
	maxDiffs             int
	json, verbose        bool
	online               bool
	handedOver, rowsOnly bool
	ignoreDefiners       bool
	stream               string
	resumeFile           string
	limits               limitFlags
}

func newVerifyCmd() *cobra.Command {
	f := verifyFlags{pairFlags: pairFlags{sourceDB: true}}
	cmd := &cobra.Command{
		Use:   "verify --source DSN --target DSN",
		Short: "Compare the tables and schema objects of two servers",
		Long: `Compare the selected tables of the source and the target row by row and
report every difference: tables missing on either side, columns that differ,
and rows missing, extra or changed, with their keys.

It also compares the definitions of the selected tables, views, sequences
(with their state), stored procedures and functions, events and triggers, as
SHOW CREATE shows them, less what legitimately differs: a table's
AUTO_INCREMENT counter and engine, and the spelling of a definer. A trigger or event the
target lacks is deferred to the cut-over, and an event the target holds
DISABLE ON SLAVE equals the source's ENABLE, unless --handed-over says the
target has taken over. --rows-only leaves the objects out.

Run it at a consistent point: writes to the source stopped and the target
caught up (for example after binlane replicate --stop-at-gtid). It only reads:
its sessions are read-only. It needs SELECT, SHOW VIEW, TRIGGER and EVENT on
the compared databases and SELECT on mysql.proc (see the README).

With --online it compares while the source takes writes and the stream
(--stream) runs: each pair of sessions takes a consistent snapshot on the
source at a known binlog position, asks the stream to hold exactly there,
takes a snapshot of the target, and lets the stream go on; the rows are then
compared inside the two snapshots. The stream holds for a moment per pair
(--threads pairs). This needs a MariaDB source with its binlog on, a
running stream less than a couple of minutes behind, and on the target
SELECT and UPDATE on binlane.streams (the pause request).

DSN is mysql://user[:password]@host:port[/db] or user[:password]@tcp(host:port)/[db].
A database in the source DSN selects that database when neither --databases
nor --tables is given. Passwords can come from the environment or a file
instead of the DSN.

Exit status: 0 the tables are equal, 1 differences found (in rows or
objects: the report lists them), 2 error, a table or object that could not
be compared, or interrupted (SIGINT/SIGTERM: no report is printed).

` + configHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runVerify(cmd, f) },
	}
	fl := cmd.Flags()
	addPairFlags(fl, &f.pairFlags, pairHelp{
		source:    "source server address (required: here, in --config or in $BINLANE_SOURCE)",
		target:    "target server address (required: here, in --config or in $BINLANE_TARGET)",
		databases: "databases to compare (comma-separated, wildcards allowed)",
		tables:    "tables to compare, as db.table (comma-separated, wildcards allowed)",
		exclude:   "databases or db.tables to skip",
	})
	fl.IntVar(&f.chunkRows, "chunk-rows", verify.DefaultChunkRows, "source rows per checksummed chunk")
	fl.IntVar(&f.threads, "threads", verify.DefaultParallel, "chunks compared at once (a session on each server per chunk)")
	deprecatedAlias(fl, "parallel", "threads")
	fl.IntVar(&f.maxDiffs, "max-diffs", verify.DefaultMaxDiffs, "differing rows listed per table")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "log every chunk (--log-level debug)")
	fl.BoolVar(&f.online, "online", false, "compare while the source takes writes, pausing --stream at each snapshot's position")
	fl.StringVar(&f.stream, "stream", "default", "the stream to pause (with --online)")
	fl.BoolVar(&f.handedOver, "handed-over", false, "the target has taken over (after binlane cutover): its triggers and events must match the source's")
	fl.BoolVar(&f.ignoreDefiners, "ignore-definers", false, "do not compare the definers of views, routines, events and triggers (after a copy with --definer=current)")
	fl.BoolVar(&f.rowsOnly, "rows-only", false, "compare the tables' rows only, not the definitions of tables, views, routines, events, triggers and sequences")
	fl.StringVar(&f.resumeFile, "resume-file", "", "record the tables found equal in this file, and leave out those it lists (run again after an interruption)")
	addLimitFlags(fl, &f.limits, "the comparison")
	// --source and --target may come from the file or the environment:
	// cobra's required-flag check runs before them, so resolveServer
	// checks (pairFlags.start).
	return withConfig(cmd)
}

func runVerify(cmd *cobra.Command, f verifyFlags) error {
	if f.verbose {
		if err := cmd.Flags().Set("log-level", "debug"); err != nil {
			return err
		}
	}
	s, err := f.start(cmd)
	if err != nil {
		return err
	}
	log := s.log
	src, err := openServer(cmd.Context(), "source", s.src, f.threads)
	if err != nil {
		return err
	}
	defer src.db.Close()
	tgt, err := openServer(cmd.Context(), "target", s.tgt, f.threads)
	if err != nil {
		return err
	}
	defer tgt.db.Close()
	th, stopThrottle, err := startThrottle(cmd.Context(), cmd, f.limits, &f.pairFlags, s)
	if err != nil {
		return err
	}
	defer stopThrottle()
	vcfg := verify.Config{Source: src.db, Target: tgt.db, Rules: s.rules,
		ChunkRows: f.chunkRows, Parallel: f.threads, MaxDiffs: f.maxDiffs, Logger: log, HandedOver: f.handedOver,
		AnyDefiner: f.ignoreDefiners}
	if f.rowsOnly {
		vcfg.Scope = verify.ScopeRows
	}
	if th != nil {
		vcfg.Hold = th.Wait
	}
	if f.online {
		// Pause requests go through a pool of their own: the comparison's
		// pool may be all taken by sessions waiting for a pair.
		meta, err := tgt.dsn.OpenDB("")
		if err != nil {
			return fmt.Errorf("--target: %w", err)
		}
		defer meta.Close()
		vcfg.Pair = (&pause.Pairer{Target: meta, Stream: f.stream, Logger: log}).Start
	}
	if f.resumeFile != "" {
		done, err := openResume(f.resumeFile, log)
		if err != nil {
			return err
		}
		defer done.close()
		vcfg.Skip, vcfg.TableDone = done.skip, done.record
	}
	rep, err := verify.Run(cmd.Context(), vcfg)
	if err != nil {
		if cmd.Context().Err() != nil {
			// No report: a partial one would read as equal for the tables
			// not compared yet.
			return fmt.Errorf("verify interrupted before the comparison finished; no report: %w", err)
		}
		return fmt.Errorf("verify %s against %s: %w", src.dsn, tgt.dsn, err)
	}
	out := cmd.OutOrStdout()
	if f.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.Format(out)
	}
	if err != nil {
		return err
	}
	return verdict(rep)
}

// verdict is verify's result: nil when equal, exit status 1 for
// differences, and 2 when a table or object could not be compared (its
// differences, if any, are unknown).
func verdict(rep *verify.Report) error {
	failed, failedObjects := 0, 0
	for _, t := range rep.Tables {
		if t.Status == verify.StatusError {
			failed++
		}
	}
	for _, o := range rep.Objects {
		if o.Status == verify.ObjectError {
			failedObjects++
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("verify: %d of %d tables could not be compared", failed, len(rep.Tables))
	case failedObjects > 0:
		return fmt.Errorf("verify: the definitions of %d of %d objects could not be read", failedObjects, len(rep.Objects))
	case !rep.Equal():
		var parts []string
		if n := len(rep.Differing()); n > 0 || len(rep.DifferingObjects()) == 0 {
			parts = append(parts, fmt.Sprintf("%d of %d tables differ", n, len(rep.Tables)))
		}
		if n := len(rep.DifferingObjects()); n > 0 {
			parts = append(parts, fmt.Sprintf("%d of %d objects differ", n, len(rep.Objects)))
		}
		return withExitCode(exitDiffer, fmt.Errorf("verify: %s", strings.Join(parts, ", ")))
	}
	return nil
}

type server struct {
	dsn dsn.DSN
	db  *sql.DB
}

// openServer opens a pool to a resolved address, sized for the run.
// Errors show the address with its password hidden.
func openServer(ctx context.Context, role string, d dsn.DSN, parallel int) (server, error) {
	db, err := d.OpenDB("")
	if err != nil {
		return server{}, fmt.Errorf("%s: %w", role, err)
	}
	// verify uses up to parallel+1 sessions per server.
	db.SetMaxOpenConns(max(parallel, 1) + 2)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return server{}, serverError(role, d, err)
	}
	return server{dsn: d, db: db}, nil
}
