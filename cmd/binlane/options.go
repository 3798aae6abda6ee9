package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/binlane/binlane/internal/config"
)

// The options every command shares. A command gets them by calling
// withConfig once it declared its own flags or before: --config (one file
// for every command of a stream), --log-level and --log-format. A command
// added later plugs in the same way and only declares its own flags; the
// config file then accepts them and ignores them for the other commands.

// withConfig gives cmd --config, --log-level and --log-format, and reads
// every option of cmd also from the YAML file named by --config and from
// BINLANE_* environment variables (BINLANE_MAX_BATCH for --max-batch),
// merged by internal/config: command line > environment > file >
// defaults. They are read before RunE, in PreRunE. cmdLineOnly lists
// options the file and the environment must not set for this command
// (they mean something else here than for the stream's other commands).
func withConfig(cmd *cobra.Command, cmdLineOnly ...string) *cobra.Command {
	fl := cmd.Flags()
	fl.String("config", "", "YAML file of options, one \"name: value\" per line, shared by every command of a stream (also $BINLANE_CONFIG)")
	fl.String("log-level", "info", "debug, info, warn or error")
	fl.String("log-format", "text", "text or json")
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error { return loadOptions(cmd, cmdLineOnly) }
	return cmd
}

// loadOptions fills cmd's options from the file and the environment and
// checks the logging options.
func loadOptions(cmd *cobra.Command, cmdLineOnly []string) error {
	fl := cmd.Flags()
	syncAliases(fl)
	recordCommandLine(cmd)
	err := config.Load(fl, config.Options{ConfigFlag: "config", EnvPrefix: "BINLANE_", Known: knownOption,
		CommandLineOnly: cmdLineOnly})
	if err != nil {
		return err
	}
	for _, old := range syncAliases(fl) {
		// On stderr: stdout may be JSON a script reads. "binlane: " starts
		// the line of an error that ends the command: a notice must not
		// look like one.
		fmt.Fprintf(cmd.ErrOrStderr(), "note: --%s is an old name of --%s; it still works\n", old, fl.Lookup(old).Annotations[aliasOf][0])
	}
	_, err = commandLogger(cmd)
	return err
}

// knownOption reports whether any binlane command has option name: the
// config file is checked against all of them.
func knownOption(name string) bool {
	found := false
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup(name) != nil || c.PersistentFlags().Lookup(name) != nil {
			found = true
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	return found
}

// configHelp ends the help of commands that use withConfig.
const configHelp = `Every option can also come from a YAML file given with --config (or
$BINLANE_CONFIG), one "name: value" per line, lists as [a, b] or "a, b",
comments after #; and from environment variables BINLANE_NAME
(BINLANE_MAX_BATCH for --max-batch). The command line wins over the
environment, which wins over the file. One file serves every command of a
stream: an option another command has is ignored here. Names no command
has and values a flag cannot take are errors that name the file and line.`

// commandLogger builds the command's logger from --log-level and
// --log-format, writing to the command's error output.
func commandLogger(cmd *cobra.Command) (*slog.Logger, error) {
	level, _ := cmd.Flags().GetString("log-level")
	format, _ := cmd.Flags().GetString("log-format")
	return newLogger(cmd.ErrOrStderr(), level, format)
}

// aliasOf is the annotation naming the option an old name stands for.
const aliasOf = "binlane-alias-of"

// deprecatedAlias makes --old another name of --name: it sets the same
// value, help leaves it out, and using it prints a notice on stderr (not
// pflag's, which cobra prints on stdout). Old names stay so that scripts
// and config files keep working.
func deprecatedAlias(fl *pflag.FlagSet, old, name string) {
	f := fl.Lookup(name)
	fl.AddFlag(&pflag.Flag{Name: old, Usage: f.Usage + " (deprecated: use --" + name + ")", Value: f.Value, DefValue: f.DefValue,
		NoOptDefVal: f.NoOptDefVal, Hidden: true, Annotations: map[string][]string{aliasOf: {name}}})
}

// syncAliases marks an option given by its old name as given, so that the
// file or the environment never overrides the command line's value, and
// returns the old names used.
func syncAliases(fl *pflag.FlagSet) []string {
	var used []string
	fl.VisitAll(func(f *pflag.Flag) {
		if to := f.Annotations[aliasOf]; len(to) == 1 && f.Changed {
			fl.Lookup(to[0]).Changed = true
			used = append(used, f.Name)
		}
	})
	return used
}

// byteSize is a size option: a number of bytes, or one with a unit as the
// MySQL options take them (K, M, G, T; KiB and KB the same: powers of
// 1024): 512MiB, 64K, 4194304.
type byteSize int64

// sizeVar adds a size option stored in *p.
func sizeVar(fl *pflag.FlagSet, p *int, name string, def int, usage string) {
	*p = def
	fl.Var(&intSize{p}, name, usage)
}

// intSize is a byteSize stored in an int.
type intSize struct{ p *int }

func (s *intSize) String() string { return byteSize(*s.p).String() }
func (s *intSize) Type() string   { return "size" }
func (s *intSize) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.p = int(n)
	return nil
}

// Fresh gives internal/config a scratch value to check text against.
func (s *intSize) Fresh() pflag.Value { return &intSize{new(int)} }

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"tib", 40}, {"gib", 30}, {"mib", 20}, {"kib", 10}, {"tb", 40}, {"gb", 30}, {"mb", 20}, {"kb", 10},
	{"t", 40}, {"g", 30}, {"m", 20}, {"k", 10}, {"b", 0}}

var errSize = errors.New("want a size such as 512MiB, 64K or 4194304 (bytes; K, M, G, T are powers of 1024)")

// parseSize reads a size.
func parseSize(text string) (int64, error) {
	s := strings.ToLower(strings.TrimSpace(text))
	shift := uint(0)
	for _, u := range sizeUnits {
		if strings.HasSuffix(s, u.suffix) {
			s, shift = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, errSize
	}
	return n << shift, nil
}

// String formats a size with the largest unit it is a whole number of.
func (b byteSize) String() string {
	n := int64(b)
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// secondsVar adds a duration option that also takes a bare number of
// seconds, as the option did before it took units (--lock-wait-timeout 50).
func secondsVar(fl *pflag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fl.Var(&seconds{p}, name, usage)
}

type seconds struct{ p *time.Duration }

func (s *seconds) String() string { return s.p.String() }
func (s *seconds) Type() string   { return "duration" }
func (s *seconds) Set(v string) error {
	v = strings.TrimSpace(v)
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		*s.p = time.Duration(n) * time.Second
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 50s or 2m (a bare number is seconds)")
	}
	*s.p = d
	return nil
}

// Fresh gives internal/config a scratch value to check text against.
func (s *seconds) Fresh() pflag.Value { return &seconds{new(time.Duration)} }
