package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/config"
	"github.com/binlane/binlane/internal/copier"
)

// reloadLimitsOnHUP reloads the copy's throttle limits (max-threads-running,
// max-replica-lag) from the config file and the environment on SIGHUP, the
// way a DBA turns a copy down without restarting it. A limit given on the
// command line keeps its value (the command line wins, as at start).
func reloadLimitsOnHUP(ctx context.Context, cmd *cobra.Command, limits *copier.Limits, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		threads, lag, err := reloadLimits(cmd)
		if err != nil {
			log.Error("SIGHUP: limits not reloaded", "error", err)
			continue
		}
		limits.Set(threads, lag)
		log.Info("SIGHUP: copy limits reloaded", "max_threads_running", threads, "max_replica_lag", lag)
	}
}

// reloadLimits reads the limits as a fresh start of the same command would.
func reloadLimits(cmd *cobra.Command) (threads int, lag time.Duration, err error) {
	fresh := newReplicateCmd()
	if cmd.Name() == "copy" {
		fresh = newCopyCmd()
	}
	fs, old := fresh.Flags(), cmd.Flags()
	if old.Changed("config") {
		if err := fs.Set("config", old.Lookup("config").Value.String()); err != nil {
			return 0, 0, err
		}
	}
	for _, name := range []string{"max-threads-running", "max-replica-lag"} {
		if old.Changed(name) {
			if err := fs.Set(name, old.Lookup(name).Value.String()); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := config.Load(fs, config.Options{ConfigFlag: "config", EnvPrefix: "BINLANE_"}); err != nil {
		return 0, 0, err
	}
	if threads, err = fs.GetInt("max-threads-running"); err != nil {
		return 0, 0, err
	}
	lag, err = fs.GetDuration("max-replica-lag")
	return threads, lag, err
}
