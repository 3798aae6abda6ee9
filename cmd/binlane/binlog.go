package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/eventfmt"
	"github.com/binlane/binlane/internal/replica"
)

func newBinlogCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "binlog", Short: "Read binary logs"}
	cmd.AddCommand(newBinlogDumpCmd())
	return cmd
}

type dumpOptions struct {
	source, passwordEnv, passwordFile string
	file                              string
	fromGTID, fromFile                string
	fromPos                           uint64
	serverID                          uint32
	json, nonBlocking                 bool
	rawStatements                     bool
	fromGTIDSet                       bool // --from-gtid was given, possibly empty
	tls                               tlsFlags
	log                               *slog.Logger
}

func newBinlogDumpCmd() *cobra.Command {
	var o dumpOptions
	cmd := &cobra.Command{
		Use:   "dump (--source DSN | --file PATH)",
		Short: "Print binlog events like mariadb-binlog -vv, streamed from a server or read from a file",
		Long: "Print binlog events like mariadb-binlog -vv, streamed from a server (as a replica) or read from a file.\n" +
			"Without --from-gtid or --from-file, streaming starts at the source's current position;\n" +
			"--from-gtid '' starts at the oldest binlog the source has. Passwords in statements\n" +
			"(CREATE USER … IDENTIFIED BY, SET PASSWORD, CHANGE MASTER TO …) are shown as '<redacted>'\n" +
			"unless --raw-statements is given.\n\n" +
			"--file reads binlog and relay-log files of MySQL 5.0 to 9.x and MariaDB 5.5 and later (tagged\n" +
			"GTIDs print as uuid:tag:N, VECTOR values as [1.1,2.2]; --json lists a compressed\n" +
			"transaction's events under \"events\"). It refuses, naming the event: binlog formats before\n" +
			"v4 (MySQL 3.23 to 4.1), the row events of MySQL 5.1 betas, statement-based LOAD DATA of\n" +
			"MySQL before 5.0.3 and encrypted MariaDB binlogs (read those with --source). MySQL partial\n" +
			"JSON updates print an error in place of their rows. A stream (--source) stops at a\n" +
			"transaction with a tagged GTID.\n\n" +
			"Exit status: 0 at the end of the file or binlog (--non-blocking) or on Ctrl-C/SIGTERM,\n" +
			"which is how a streaming dump ends; 2 error or bad options.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.fromGTIDSet = cmd.Flags().Changed("from-gtid")
			if !cmd.Flags().Changed("log-level") {
				_ = cmd.Flags().Set("log-level", "warn") // the events are the output
			}
			var err error
			if o.log, err = commandLogger(cmd); err != nil {
				return err
			}
			err = runDump(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
			if err != nil && cmd.Context().Err() != nil {
				return nil // Ctrl-C is how a dump ends, even while it connects
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.source, "source", "", "source server: mysql://user[:pass]@host:port/ or user:pass@tcp(host:port)/")
	addPasswordFlags(f, "source", &o.passwordEnv, &o.passwordFile)
	deprecatedAlias(f, "password-env", "source-password-env")
	deprecatedAlias(f, "password-file", "source-password-file")
	addTLSFlags(f, "source-", "source", &o.tls)
	for _, name := range []string{"ssl-mode", "ssl-ca", "ssl-cert", "ssl-key"} {
		deprecatedAlias(f, name, "source-"+name)
	}
	f.StringVar(&o.file, "file", "", "read this binlog file instead of a server")
	f.StringVar(&o.fromGTID, "from-gtid", "", "start after this GTID position (MariaDB D-S-N,… or a MySQL GTID set)")
	f.StringVar(&o.fromFile, "from-file", "", "start in this binlog file")
	f.Uint64Var(&o.fromPos, "from-pos", 4, "start at this offset of --from-file")
	f.Uint32Var(&o.serverID, "server-id", 0, "replica server id to register with (default: random, above 2^30)")
	f.BoolVar(&o.json, "json", false, "print one JSON object per event")
	f.BoolVar(&o.nonBlocking, "non-blocking", false, "stop at the end of the source's binlog instead of waiting")
	f.BoolVar(&o.rawStatements, "raw-statements", false, "print statements as logged, passwords included (by default they are hidden)")
	// A stream's server-id would clash with the running stream.
	return withConfig(cmd, "server-id")
}

func runDump(ctx context.Context, out, errOut io.Writer, o dumpOptions) error {
	w := bufio.NewWriterSize(out, 64<<10)
	defer w.Flush()
	var opts []eventfmt.Option
	if o.rawStatements {
		opts = append(opts, eventfmt.RawStatements())
	}
	p := eventfmt.NewText(w, opts...)
	if o.json {
		p = eventfmt.NewJSON(w, opts...)
	}
	switch {
	case (o.source == "") == (o.file == ""):
		return errors.New("give exactly one of --source and --file")
	case o.file != "":
		return dumpFile(ctx, p, o.file)
	}
	d, err := resolveServer("source", o.source, o.passwordEnv, o.passwordFile, o.tls)
	if err != nil {
		return err
	}
	cfg, err := dumpConfig(ctx, d, o, errOut)
	if err != nil {
		return d.AnnotateTLS(err)
	}
	s, err := replica.Open(ctx, cfg)
	if err != nil {
		return d.AnnotateTLS(err)
	}
	defer s.Close()
	for {
		m, err := s.Next(ctx)
		switch {
		case errors.Is(err, io.EOF), ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		if err := p.PrintMessage(m); err != nil {
			return err
		}
		// Streaming: show each event as it comes.
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

func dumpFile(ctx context.Context, p *eventfmt.Printer, path string) error {
	r, err := binlog.OpenFile(path)
	if err != nil {
		return err
	}
	defer r.Close()
	for ctx.Err() == nil {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := p.Print(ev); err != nil {
			return err
		}
	}
	return nil
}

// dumpConfig turns the flags into a stream configuration.
func dumpConfig(ctx context.Context, d dsn.DSN, o dumpOptions, errOut io.Writer) (replica.Config, error) {
	wc, err := d.WireConfig()
	if err != nil {
		return replica.Config{}, err
	}
	cfg := replica.Config{Config: wc, ServerID: o.serverID, NonBlocking: o.nonBlocking, AnnotateRows: true}
	cfg.Logger = cmp.Or(o.log, slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if cfg.ServerID == 0 {
		// Far above ids people give real replicas: a collision would make
		// the source end another replica's dump.
		cfg.ServerID = 1<<30 + rand.Uint32N(1<<30)
	}
	cfg.Start, err = dumpStart(ctx, o, cfg)
	return cfg, err
}

func dumpStart(ctx context.Context, o dumpOptions, cfg replica.Config) (replica.Position, error) {
	switch {
	case o.fromGTIDSet && o.fromFile != "":
		return replica.Position{}, errors.New("give --from-gtid or --from-file, not both")
	case o.fromGTIDSet:
		set, err := parseGTIDFlag("from-gtid", o.fromGTID)
		if err != nil {
			return replica.Position{}, err
		}
		return replica.StartAtGTID(set), nil
	case o.fromFile != "":
		return replica.StartAtFile(o.fromFile, o.fromPos), nil
	}
	return replica.CurrentPosition(ctx, cfg)
}
