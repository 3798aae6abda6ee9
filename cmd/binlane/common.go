package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/config"
	"github.com/binlane/binlane/internal/dsn"
)

// resolveServer parses a server address given for role ("source",
// "target"), fills in its password from the environment or a file, and
// applies the TLS flags, which win over the address's parameters.
func resolveServer(role, addr, passEnv, passFile string, tf tlsFlags) (dsn.DSN, error) {
	if addr == "" {
		return dsn.DSN{}, fmt.Errorf("--%s is required", role)
	}
	d, err := dsn.Parse(addr)
	if err != nil {
		return dsn.DSN{}, fmt.Errorf("--%s: %w", role, err)
	}
	if err := d.ResolvePassword(passEnv, passFile); err != nil {
		return dsn.DSN{}, fmt.Errorf("--%s: %w", role, err)
	}
	over := dsn.TLSOptions{CA: tf.ca, Cert: tf.cert, Key: tf.key}
	if tf.mode != "" {
		if over.Mode, err = dsn.ParseSSLMode(tf.mode); err != nil {
			return dsn.DSN{}, fmt.Errorf("--%sssl-mode: %w", tf.prefix, err)
		}
	}
	d.TLS.Override(over)
	return d, nil
}

// serverError puts the role and the address (password hidden) before err,
// unless err is a *dsn.TLSError, which names the address itself.
func serverError(role string, d dsn.DSN, err error) error {
	var te *dsn.TLSError
	if errors.As(err, &te) {
		return fmt.Errorf("%s: %w", role, err)
	}
	return fmt.Errorf("%s %s: %w", role, d, err)
}

// tlsFlags are a server's --PREFIX-ssl-* flags; the ones given override
// what the address says.
type tlsFlags struct {
	prefix              string // "source-", "target-", or "" for binlog dump
	mode, ca, cert, key string
}

// addTLSFlags adds --PREFIXssl-mode, -ssl-ca, -ssl-cert and -ssl-key for
// the server called role.
func addTLSFlags(fl *pflag.FlagSet, prefix, role string, t *tlsFlags) {
	t.prefix = prefix
	fl.StringVar(&t.mode, prefix+"ssl-mode", "",
		"TLS for the "+role+": disabled, preferred, required, verify-ca or verify-identity "+
			"(default: the address's ssl-mode or tls, else preferred, or verify-ca when a CA is given)")
	fl.StringVar(&t.ca, prefix+"ssl-ca", "", "PEM file of the CA(s) the "+role+"'s certificate is checked against (default: the system's)")
	fl.StringVar(&t.cert, prefix+"ssl-cert", "", "PEM client certificate for the "+role+" (accounts that REQUIRE X509)")
	fl.StringVar(&t.key, prefix+"ssl-key", "", "PEM private key of --"+prefix+"ssl-cert")
}

// newLogger builds the command's logger: text or JSON on stderr.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// withConfig lets every option of cmd also come from a YAML file named by
// --config and from BINLANE_* environment variables (BINLANE_MAX_BATCH for
// --max-batch), merged by internal/config: command line > environment >
// file > defaults. They are read before RunE, in PreRunE.
func withConfig(cmd *cobra.Command) *cobra.Command {
	cmd.Flags().String("config", "", "YAML file of options, one \"name: value\" per line (also $BINLANE_CONFIG)")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		return config.Load(cmd.Flags(), config.Options{ConfigFlag: "config", EnvPrefix: "BINLANE_"})
	}
	return cmd
}

// configHelp ends the help of commands that use withConfig.
const configHelp = `Every option can also come from a YAML file given with --config (or
$BINLANE_CONFIG), one "name: value" per line, lists as [a, b] or "a, b",
comments after #; and from environment variables BINLANE_NAME
(BINLANE_MAX_BATCH for --max-batch). The command line wins over the
environment, which wins over the file. Unknown names and values a flag
cannot take are errors that name the file and line.`

// addPasswordFlags adds --ROLE-password-env and --ROLE-password-file.
func addPasswordFlags(fl *pflag.FlagSet, role string, env, file *string) {
	fl.StringVar(env, role+"-password-env", "BINLANE_"+strings.ToUpper(role)+"_PASSWORD",
		"environment variable holding the "+role+" password")
	fl.StringVar(file, role+"-password-file", "", "file whose first line is the "+role+" password")
}
