package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

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

// applyConfigFile reads "name: value" (or "name = value") lines, where
// name is a long flag of cmd, and sets every flag not given on the command
// line: flags win over the file. Lists may repeat a name or use commas.
func applyConfigFile(cmd *cobra.Command, path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	fromFile := map[string]bool{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexAny(line, ":=")
		if i < 0 {
			return fmt.Errorf("%s:%d: want name: value", path, n)
		}
		name, val := strings.TrimSpace(line[:i]), strings.Trim(strings.TrimSpace(line[i+1:]), `"'`)
		fl := cmd.Flags().Lookup(name)
		if fl == nil || name == "config" {
			return fmt.Errorf("%s:%d: unknown option %q", path, n, name)
		}
		if fl.Changed && !fromFile[name] {
			continue // given on the command line
		}
		if err := cmd.Flags().Set(name, val); err != nil {
			return fmt.Errorf("%s:%d: %s: %w", path, n, name, err)
		}
		fromFile[name] = true
	}
	return sc.Err()
}

// addPasswordFlags adds --ROLE-password-env and --ROLE-password-file.
func addPasswordFlags(fl *pflag.FlagSet, role string, env, file *string) {
	fl.StringVar(env, role+"-password-env", "BINLANE_"+strings.ToUpper(role)+"_PASSWORD",
		"environment variable holding the "+role+" password")
	fl.StringVar(file, role+"-password-file", "", "file whose first line is the "+role+" password")
}
