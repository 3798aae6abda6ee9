package main

import (
	"context"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/filter"
	"github.com/binlane/binlane/internal/throttle"
)

// pairFlags are the options of the commands that work on a source and a
// target (replicate and copy, verify, cutover): where the two servers are,
// how to log in to them, and which databases and tables the command
// covers. Each of those commands starts the same way (start), so a change
// of how a server is resolved or what the filter takes lands in all of
// them.
type pairFlags struct {
	source, target             string
	sourcePassEnv, sourcePassF string
	targetPassEnv, targetPassF string
	sourceTLS, targetTLS       tlsFlags
	databases, tables, exclude []string
	// sourceDB: the database of the source's address stands for
	// --databases when neither --databases nor --tables is given (verify).
	sourceDB bool
}

// pairHelp is what the pair's options say in one command's help.
type pairHelp struct {
	source, target             string
	databases, tables, exclude string
}

// addPairFlags declares the pair's options.
func addPairFlags(fl *pflag.FlagSet, p *pairFlags, h pairHelp) {
	fl.StringVar(&p.source, "source", "", h.source)
	fl.StringVar(&p.target, "target", "", h.target)
	addPasswordFlags(fl, "source", &p.sourcePassEnv, &p.sourcePassF)
	addPasswordFlags(fl, "target", &p.targetPassEnv, &p.targetPassF)
	addTLSFlags(fl, "source-", "source", &p.sourceTLS)
	addTLSFlags(fl, "target-", "target", &p.targetTLS)
	fl.StringSliceVar(&p.databases, "databases", nil, h.databases)
	fl.StringSliceVar(&p.tables, "tables", nil, h.tables)
	fl.StringSliceVar(&p.exclude, "exclude", nil, h.exclude)
}

// pairStart is what a pair command starts from: its logger, both servers
// resolved (nothing connected yet) and the rules of what it covers.
type pairStart struct {
	log      *slog.Logger
	src, tgt dsn.DSN
	rules    filter.Rules
}

// start is the prologue of a pair command: the logger (its options were
// checked with the others before RunE: see withConfig), then the two
// addresses, then the filter, so that a bad option fails before anything
// connects.
func (p *pairFlags) start(cmd *cobra.Command) (pairStart, error) {
	var s pairStart
	var err error
	if s.log, err = commandLogger(cmd); err != nil {
		return s, err
	}
	if s.src, err = resolveServer("source", p.source, p.sourcePassEnv, p.sourcePassF, p.sourceTLS); err != nil {
		return s, err
	}
	if s.tgt, err = resolveServer("target", p.target, p.targetPassEnv, p.targetPassF, p.targetTLS); err != nil {
		return s, err
	}
	databases := p.databases
	if p.sourceDB && len(databases) == 0 && len(p.tables) == 0 && s.src.DB != "" {
		databases = []string{s.src.DB}
	}
	s.rules, err = filter.New(databases, p.tables, p.exclude)
	return s, err
}

// targetReplica completes a --target-replica address as the target's:
// with the target's password and TLS options.
func (p *pairFlags) targetReplica(addr string) (dsn.DSN, error) {
	return resolveServer("target-replica", addr, p.targetPassEnv, p.targetPassF, p.targetTLS)
}

// startThrottle opens the throttle of the limits (nil when none is set:
// see newThrottle) and reloads them on SIGHUP until stop, which also
// closes the throttle's connections.
func startThrottle(ctx context.Context, cmd *cobra.Command, l limitFlags, p *pairFlags, s pairStart) (
	th *throttle.Throttle, stop func(), err error) {
	th, closeThrottle, err := newThrottle(cmd, l, s.src, p.targetReplica, s.log)
	if err != nil {
		return nil, func() {}, err
	}
	hupCtx, stopHUP := context.WithCancel(ctx)
	var hup sync.WaitGroup
	hup.Go(func() { reloadLimitsOnHUP(hupCtx, cmd, th.Limits(), s.log) })
	return th, func() { stopHUP(); hup.Wait(); closeThrottle() }, nil
}
