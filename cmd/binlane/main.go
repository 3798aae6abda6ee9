// Command binlane replicates a MySQL or MariaDB database into another server
// and keeps it in sync. This package only wires the internal packages to
// the command line; the work happens in internal/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/binlane/binlane/internal/config"
	"github.com/binlane/binlane/internal/redact"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the process's exit status
// (see exitCode); main is the only place that exits.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil && !errors.Is(err, errReported) {
		// The last line of defence: no secret in what binlane prints, even
		// from an error that embeds a statement or an address.
		msg := redact.Text(err.Error())
		if ctx.Err() != nil && errors.Is(err, context.Canceled) && !strings.Contains(msg, "interrupted") {
			msg = "interrupted: " + msg
		}
		fmt.Fprintln(stderr, "binlane:", msg)
	}
	return exitCode(err)
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "binlane",
		Short:         "Replicate a MySQL or MariaDB database into another server, in parallel, exactly once",
		Long:          "Replicate a MySQL or MariaDB database into another server, in parallel, exactly once.\n\n" + exitHelp,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Bad flags are usage errors: say where the usage is.
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return fmt.Errorf("%w (see %s --help)", config.FlagError(err), c.CommandPath())
	})
	root.AddCommand(newAnalyzeCmd(), newBinlogCmd(), newReplicateCmd(), newCopyCmd(), newStatusCmd(), newVerifyCmd(), newCutoverCmd(),
		newWaitCmd(), newPauseCmd(), newResumeCmd(), newDemoCmd(), newManCmd())
	return root
}
