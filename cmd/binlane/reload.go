package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/config"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/throttle"
)

// limitFlags are the limits that hold binlane's work back (package
// throttle): the copy's chunks, the applier's next transaction, verify's
// next chunk.
type limitFlags struct {
	maxThreadsRunning int
	maxReplicaLag     time.Duration
	targetReplicas    []string
	heartbeatTable    string
}

// addLimitFlags adds the limits' flags; work names what they hold back.
func addLimitFlags(fl *pflag.FlagSet, l *limitFlags, work string) {
	fl.IntVar(&l.maxThreadsRunning, "max-threads-running", 0,
		"hold "+work+" back while the source's Threads_running is above this, or cannot be read (0: no limit; reloaded on SIGHUP)")
	fl.DurationVar(&l.maxReplicaLag, "max-replica-lag", 0,
		"hold "+work+" back while a --target-replica lags more than this, or its lag cannot be read (0: no limit; reloaded on SIGHUP)")
	fl.StringSliceVar(&l.targetReplicas, "target-replica", nil,
		"a replica of the target, watched for --max-replica-lag (repeatable; the target's password and TLS options apply; "+
			"needs SLAVE MONITOR there, or SELECT on --heartbeat-table)")
	fl.StringVar(&l.heartbeatTable, "heartbeat-table", "",
		"read each --target-replica's lag from this pt-heartbeat table (db.table; run pt-heartbeat --update --utc on the target) "+
			"instead of its replication status")
}

// cmdLineAnnotation lists the options given on the command line, recorded
// before the config file fills in the others: a reload keeps those.
const cmdLineAnnotation = "binlane-command-line"

// recordCommandLine notes which options the command line gave.
func recordCommandLine(cmd *cobra.Command) {
	var given []string
	cmd.Flags().Visit(func(f *pflag.Flag) { given = append(given, f.Name) })
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[cmdLineAnnotation] = strings.Join(given, ",")
}

// newThrottle opens the connections the limits read and returns the
// throttle, or nil when no limit is set and no config file could set one
// on SIGHUP. target is how a --target-replica is completed (the target's
// password and TLS). close releases the connections.
func newThrottle(cmd *cobra.Command, l limitFlags, source dsn.DSN, target func(addr string) (dsn.DSN, error),
	log *slog.Logger) (t *throttle.Throttle, close func(), err error) {
	close = func() {}
	if l.maxThreadsRunning < 0 || l.maxReplicaLag < 0 {
		return nil, close, fmt.Errorf("--max-threads-running and --max-replica-lag must not be negative")
	}
	if (l.maxReplicaLag > 0 || l.heartbeatTable != "") && len(l.targetReplicas) == 0 {
		return nil, close, fmt.Errorf("--max-replica-lag and --heartbeat-table need a --target-replica to watch")
	}
	configured := cmd.Flags().Lookup("config").Value.String() != "" || os.Getenv("BINLANE_CONFIG") != ""
	if l.maxThreadsRunning == 0 && l.maxReplicaLag == 0 && !configured {
		return nil, close, nil
	}
	var pools []*sql.DB
	close = func() {
		for _, p := range pools {
			p.Close()
		}
	}
	open := func(d dsn.DSN) (*sql.DB, error) {
		db, err := d.OpenSession(dsn.ThrottleSession(), "", nil)
		if err == nil {
			db.SetMaxOpenConns(1)
			pools = append(pools, db)
		}
		return db, err
	}
	cfg := throttle.Config{HeartbeatTable: l.heartbeatTable, Limits: throttle.NewLimits(l.maxThreadsRunning, l.maxReplicaLag), Logger: log}
	if cfg.Source, err = open(source); err != nil {
		close()
		return nil, func() {}, fmt.Errorf("--source: %w", err)
	}
	for _, addr := range l.targetReplicas {
		d, err := target(addr)
		if err == nil {
			var db *sql.DB
			if db, err = open(d); err == nil {
				cfg.Replicas = append(cfg.Replicas, throttle.Replica{Name: d.String(), DB: db})
			}
		}
		if err != nil {
			close()
			return nil, func() {}, err
		}
	}
	return throttle.New(cfg), close, nil
}

// reloadLimitsOnHUP reloads the limits (max-threads-running,
// max-replica-lag) from the config file and the environment on SIGHUP, the
// way a DBA turns binlane down without restarting it. A limit given on the
// command line keeps its value (the command line wins, as at start).
func reloadLimitsOnHUP(ctx context.Context, cmd *cobra.Command, limits *throttle.Limits, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if limits == nil {
			log.Warn("SIGHUP: no limits to reload (give --config, or a limit, at start)")
			continue
		}
		threads, lag, err := reloadLimits(cmd)
		if err != nil {
			log.Error("SIGHUP: limits not reloaded", "error", err)
			continue
		}
		limits.Set(threads, lag)
		log.Info("SIGHUP: limits reloaded", "max_threads_running", threads, "max_replica_lag", lag)
	}
}

// reloadLimits reads the limits as a fresh start of the same command line
// would.
func reloadLimits(cmd *cobra.Command) (threads int, lag time.Duration, err error) {
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.String("config", "", "")
	var l limitFlags
	addLimitFlags(fs, &l, "")
	old := cmd.Flags()
	var given []string
	if names, ok := cmd.Annotations[cmdLineAnnotation]; ok {
		given = strings.Split(names, ",")
	} else {
		old.Visit(func(f *pflag.Flag) { given = append(given, f.Name) }) // nothing was loaded from a file yet
	}
	if path := old.Lookup("config").Value.String(); path != "" {
		given = append(given, "config")
	}
	for _, name := range given {
		if name == "config" || name == "max-threads-running" || name == "max-replica-lag" {
			if err := fs.Set(name, old.Lookup(name).Value.String()); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := config.Load(fs, config.Options{ConfigFlag: "config", EnvPrefix: "BINLANE_", Known: knownOption}); err != nil {
		return 0, 0, err
	}
	return l.maxThreadsRunning, l.maxReplicaLag, nil
}
