// Command binlane replicates a MySQL or MariaDB database into another server
// and keeps it in sync. This package only wires the internal packages to
// the command line; the work happens in internal/.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "binlane",
		Short:         "Replicate a MySQL or MariaDB database into another server, in parallel, exactly once",
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newBinlogCmd(), newReplicateCmd(), newStatusCmd(), newVerifyCmd(), newDemoCmd())
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "binlane:", err)
		os.Exit(1)
	}
}
