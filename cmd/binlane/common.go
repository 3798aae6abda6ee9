package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/gtid"
)

// resolveServer parses a server address given for role ("source",
// "target", "target-replica"), and completes it as the MySQL clients do
// (dsn.ResolveAddr): what the address leaves out from the option files,
// the password from a file or the environment, the TLS flags winning over
// the address's parameters.
func resolveServer(role, addr, passEnv, passFile string, tf tlsFlags) (dsn.DSN, error) {
	if addr == "" {
		return dsn.DSN{}, fmt.Errorf("--%s is required", role)
	}
	over := dsn.TLSOptions{CA: tf.ca, Cert: tf.cert, Key: tf.key}
	if tf.mode != "" {
		var err error
		if over.Mode, err = dsn.ParseSSLMode(tf.mode); err != nil {
			return dsn.DSN{}, fmt.Errorf("--%sssl-mode: %w", tf.prefix, err)
		}
	}
	r := dsn.Resolve{Role: strings.TrimSuffix(role, "-replica"), PasswordEnv: passEnv, PasswordFile: passFile, TLS: over}
	if tf.files != nil {
		r.Files = *tf.files
	}
	d, err := dsn.ResolveAddr(addr, r)
	if err != nil {
		return dsn.DSN{}, fmt.Errorf("--%s: %w", role, err)
	}
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
// what the address says. files are the command's option-file flags,
// shared by its servers.
type tlsFlags struct {
	prefix              string // "source-", "target-"
	mode, ca, cert, key string
	files               *dsn.OptionFiles
}

// addTLSFlags adds --PREFIXssl-mode, -ssl-ca, -ssl-cert and -ssl-key for
// the server called role, and the command's option-file flags
// (--defaults-file, --defaults-extra-file, --no-defaults) if it has none
// yet: every command that connects somewhere reads option files.
func addTLSFlags(fl *pflag.FlagSet, prefix, role string, t *tlsFlags) {
	t.prefix = prefix
	t.files = addOptionFileFlags(fl)
	fl.StringVar(&t.mode, prefix+"ssl-mode", "",
		"TLS for the "+role+": disabled, preferred, required, verify-ca or verify-identity "+
			"(default: the address's ssl-mode or tls, else preferred, or verify-ca when a CA is given)")
	fl.StringVar(&t.ca, prefix+"ssl-ca", "", "PEM file of the CA(s) the "+role+"'s certificate is checked against (default: the system's)")
	fl.StringVar(&t.cert, prefix+"ssl-cert", "", "PEM client certificate for the "+role+" (accounts that REQUIRE X509)")
	fl.StringVar(&t.key, prefix+"ssl-key", "", "PEM private key of --"+prefix+"ssl-cert")
}

// optionFileFlag is a flag of the option files: it keeps the struct the
// command's servers share.
type optionFileFlag struct {
	pflag.Value
	files *dsn.OptionFiles
}

// addOptionFileFlags adds the flags naming MySQL option files, once per
// command, and returns what they set.
func addOptionFileFlags(fl *pflag.FlagSet) *dsn.OptionFiles {
	if f := fl.Lookup("defaults-file"); f != nil {
		return f.Value.(optionFileFlag).files
	}
	files := &dsn.OptionFiles{}
	scratch := pflag.NewFlagSet("", pflag.ContinueOnError)
	scratch.StringVar(&files.File, "defaults-file", "", "read this MySQL option file instead of /etc/my.cnf, /etc/mysql/my.cnf and ~/.my.cnf "+
		"(groups [client], [client-server], [client-mariadb], [binlane], [binlane-source], [binlane-target])")
	scratch.StringVar(&files.Extra, "defaults-extra-file", "", "read this MySQL option file after the others")
	scratch.BoolVar(&files.NoDefaults, "no-defaults", false, "read no MySQL option file")
	scratch.VisitAll(func(f *pflag.Flag) {
		f.Value = optionFileFlag{Value: f.Value, files: files}
		fl.AddFlag(f)
	})
	return files
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

// addPasswordFlags adds --ROLE-password-env and --ROLE-password-file.
func addPasswordFlags(fl *pflag.FlagSet, role string, env, file *string) {
	fl.StringVar(env, role+"-password-env", "BINLANE_"+strings.ToUpper(role)+"_PASSWORD",
		"environment variable holding the "+role+" password")
	fl.StringVar(file, role+"-password-file", "", "file whose first line is the "+role+" password")
}

// gtidForms ends the error of a GTID option that is not one: the parser's
// own message says what is wrong, this what would be right.
const gtidForms = "a position is MariaDB's domain-server-sequence, one per domain, comma-separated (0-1-100,1-2-5), " +
	"or a MySQL GTID set (3E11FA47-71CA-11E1-9E33-C80AA9429562:1-100)"

// parseGTIDFlag reads the position given with --name, before anything
// connects: a typo there is a usage error, not a failed stream.
func parseGTIDFlag(name, value string) (gtid.Set, error) {
	set, err := gtid.ParseSet(value)
	return set, gtidFlagError(name, err)
}

// gtidFlagError names the option and the accepted forms in a parse error
// (nil stays nil); tagged GTIDs have their own message.
func gtidFlagError(name string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, gtid.ErrTagged):
		return fmt.Errorf("--%s: %w", name, err)
	}
	return fmt.Errorf("--%s: %w; %s", name, err, gtidForms)
}
