// Package config gives a command's options three more sources besides its
// command line: a YAML file (--config FILE) and BINLANE_* environment
// variables, merged by koanf with the precedence command line >
// environment > file > the flags' defaults. Every key is a long flag of
// some command, so one file serves every command of a stream: a key the
// command at hand does not have is ignored when another command has it
// (Options.Known).
//
// A supervisor must be able to rely on the result: a key that no command
// has, a value the flag cannot take, or a line in the old "name = value"
// format is an error naming the file and line (or the variable), never
// ignored.
// Environment variables that name no flag are ignored: BINLANE_* also
// holds passwords (BINLANE_SOURCE_PASSWORD) and test settings.
//
// The package owns reading and checking these sources. It must never
// connect anywhere, never define options of its own, and never print a
// value it reads (a value may be a server address with a password).
package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"
)

// Options say where a command's options may come from.
type Options struct {
	// ConfigFlag names the flag holding the file's path ("config"). The
	// path may also come from the environment (BINLANE_CONFIG), not from
	// the file itself. Empty: no file.
	ConfigFlag string
	// EnvPrefix starts the environment variables read ("BINLANE_"):
	// BINLANE_MAX_BATCH sets --max-batch. Empty: no environment.
	EnvPrefix string
	// Environ lists the environment as KEY=value; nil means os.Environ.
	Environ func() []string
	// CommandLineOnly lists flags that neither the file nor the
	// environment may set; help and version always are.
	CommandLineOnly []string
	// Known reports whether some other command has an option name: one
	// file serves every command, so a key this command lacks is ignored
	// when another command reads it, and is an error only when no command
	// knows it. nil: only this command's flags are known.
	Known func(name string) bool
}

// Load sets every flag of fs that the command line did not give from the
// environment or, failing that, the file. Call it after fs was parsed (in a
// cobra PreRunE). A flag it sets counts as given (Changed).
func Load(fs *pflag.FlagSet, o Options) error {
	if o.Environ == nil {
		o.Environ = os.Environ
	}
	l := &loader{fs: fs, o: o}
	var envK, fileK *koanf.Koanf
	var err error
	if envK, err = l.loadEnv(); err != nil {
		return err
	}
	path, err := l.configPath()
	if err != nil {
		return err
	}
	if path != "" {
		if fileK, err = l.loadFile(path); err != nil {
			return err
		}
	} else {
		fileK = koanf.New(".")
	}
	// One merge, lowest precedence first; the flags come last: changed ones
	// override, defaults fill only keys nobody else set.
	k := koanf.New(".")
	if err := k.Merge(fileK); err != nil {
		return err
	}
	if err := k.Merge(envK); err != nil {
		return err
	}
	if err := k.Load(posflag.Provider(fs, ".", k), nil); err != nil {
		return fmt.Errorf("command line: %w", err)
	}
	for _, key := range k.Keys() {
		fl := fs.Lookup(key)
		if fl == nil || fl.Changed {
			continue // the command line's own value
		}
		var origin string
		switch {
		case envK.Exists(key):
			origin = "environment variable " + l.envName(key)
		case fileK.Exists(key):
			origin = l.fileOrigin(path, key)
		default:
			continue // the flag's default
		}
		if err := set(fs, fl, k.Get(key)); err != nil {
			return fmt.Errorf("%s: %s: %w", origin, key, err)
		}
	}
	return nil
}

type loader struct {
	fs    *pflag.FlagSet
	o     Options
	lines map[string]int // file key → line
}

// settable reports whether the file or environment may set flag name.
func (l *loader) settable(name string) bool {
	return name != "help" && name != "version" && name != l.o.ConfigFlag && !slices.Contains(l.o.CommandLineOnly, name)
}

// known reports whether some command of the program has option name.
func (l *loader) known(name string) bool { return l.o.Known != nil && l.o.Known(name) }

func (l *loader) envName(key string) string {
	return l.o.EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

func (l *loader) fileOrigin(path, key string) string {
	return path + ":" + strconv.Itoa(l.lines[key])
}

// loadEnv reads the BINLANE_* variables that name a settable flag, each
// checked against its flag.
func (l *loader) loadEnv() (*koanf.Koanf, error) {
	k := koanf.New(".")
	if l.o.EnvPrefix == "" {
		return k, nil
	}
	var bad error
	p := env.Provider("", env.Opt{
		Prefix:      l.o.EnvPrefix,
		EnvironFunc: l.o.Environ,
		TransformFunc: func(name, value string) (string, any) {
			key := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, l.o.EnvPrefix)), "_", "-")
			fl := l.fs.Lookup(key)
			if fl == nil || !l.settable(key) {
				return "", nil // not ours: passwords, test settings
			}
			v, err := check(fl, value)
			if err != nil && bad == nil {
				bad = fmt.Errorf("environment variable %s: %w", name, err)
			}
			return key, v
		},
	})
	if err := k.Load(p, nil); err != nil {
		return nil, err
	}
	if bad != nil {
		return nil, bad
	}
	return k, nil
}

func envValue(environ []string, name string) (string, bool) {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// configPath is the file to read: --config, else BINLANE_CONFIG, else
// the flag's default.
func (l *loader) configPath() (string, error) {
	if l.o.ConfigFlag == "" {
		return "", nil
	}
	fl := l.fs.Lookup(l.o.ConfigFlag)
	if fl == nil {
		return "", fmt.Errorf("config: the command has no --%s flag", l.o.ConfigFlag)
	}
	if !fl.Changed && l.o.EnvPrefix != "" {
		if path, ok := envValue(l.o.Environ(), l.envName(l.o.ConfigFlag)); ok {
			return path, nil
		}
	}
	return fl.Value.String(), nil
}

// loadFile reads and checks the YAML file.
func (l *loader) loadFile(path string) (*koanf.Koanf, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", l.o.ConfigFlag, err)
	}
	p := &yamlParser{path: path, l: l}
	k := koanf.New(".")
	if err := k.Load(bytesProvider(data), p); err != nil {
		return nil, err
	}
	l.lines = p.lines
	return k, nil
}

// bytesProvider hands koanf the file's bytes for yamlParser.
type bytesProvider []byte

func (b bytesProvider) ReadBytes() ([]byte, error) { return b, nil }

func (b bytesProvider) Read() (map[string]any, error) {
	return nil, errors.New("config: bytesProvider needs a parser")
}

// check parses text as flag fl would, on a scratch value of the same type
// so that a value the command line overrides is still checked. It returns
// what set takes: the text, or the items of a list flag.
func check(fl *pflag.Flag, text string) (any, error) {
	v := scratch(fl)
	if v == nil {
		return text, nil // an unknown type: set checks it
	}
	if err := v.Set(text); err != nil {
		return nil, valueError(fl, err)
	}
	if sv, ok := v.(pflag.SliceValue); ok {
		items := sv.GetSlice()
		for i := range items {
			items[i] = strings.TrimSpace(items[i]) // "app, shop" means [app shop]
		}
		return items, nil
	}
	return text, nil
}

// checkList checks the items of a YAML list for a list flag.
func checkList(fl *pflag.Flag, items []string) ([]string, error) {
	v := scratch(fl)
	if v == nil {
		return items, nil
	}
	sv, ok := v.(pflag.SliceValue)
	if !ok {
		return nil, errors.New("takes one value, not a list")
	}
	if err := sv.Replace(items); err != nil {
		return nil, valueError(fl, err)
	}
	return sv.GetSlice(), nil
}

// set gives flag fl the merged value v: text as on the command line, or a
// list's items.
func set(fs *pflag.FlagSet, fl *pflag.Flag, v any) error {
	switch v := v.(type) {
	case string:
		if err := fs.Set(fl.Name, v); err != nil {
			return valueError(fl, err)
		}
		return nil
	case []string:
		return setList(fl, v)
	case []any:
		items := make([]string, len(v))
		for i, x := range v {
			items[i] = fmt.Sprint(x)
		}
		return setList(fl, items)
	}
	return fmt.Errorf("unexpected value of type %T", v)
}

func setList(fl *pflag.Flag, items []string) error {
	sv, ok := fl.Value.(pflag.SliceValue)
	if !ok {
		return errors.New("takes one value, not a list")
	}
	if err := sv.Replace(items); err != nil {
		return valueError(fl, err)
	}
	fl.Changed = true
	return nil
}

// scratch returns a fresh value of fl's type, or nil for a type it does
// not know. A value type of the program's own gives one by a Fresh method.
func scratch(fl *pflag.Flag) pflag.Value {
	if c, ok := fl.Value.(interface{ Fresh() pflag.Value }); ok {
		return c.Fresh() // a value type of the command's own (sizes)
	}
	fs := pflag.NewFlagSet("scratch", pflag.ContinueOnError)
	switch fl.Value.Type() {
	case "string":
		fs.String("v", "", "")
	case "bool":
		fs.Bool("v", false, "")
	case "int":
		fs.Int("v", 0, "")
	case "int8":
		fs.Int8("v", 0, "")
	case "int16":
		fs.Int16("v", 0, "")
	case "int32":
		fs.Int32("v", 0, "")
	case "int64":
		fs.Int64("v", 0, "")
	case "uint":
		fs.Uint("v", 0, "")
	case "uint8":
		fs.Uint8("v", 0, "")
	case "uint16":
		fs.Uint16("v", 0, "")
	case "uint32":
		fs.Uint32("v", 0, "")
	case "uint64":
		fs.Uint64("v", 0, "")
	case "float32":
		fs.Float32("v", 0, "")
	case "float64":
		fs.Float64("v", 0, "")
	case "duration":
		fs.Duration("v", 0, "")
	case "stringSlice":
		fs.StringSlice("v", nil, "")
	case "stringArray":
		fs.StringArray("v", nil, "")
	case "intSlice":
		fs.IntSlice("v", nil, "")
	case "durationSlice":
		fs.DurationSlice("v", nil, "")
	default:
		return nil
	}
	return fs.Lookup("v").Value
}

// FlagError is err, an error of parsing the command line, with a bad value
// said the way valueError says it: "--threads: not a whole number", not
// pflag's `invalid argument "many" for "--threads" flag: strconv.ParseInt:
// parsing "many": invalid syntax`. Other errors are returned as they are.
func FlagError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	return fmt.Errorf("--%s: %w", ive.GetFlag().Name, valueError(ive.GetFlag(), errors.Unwrap(ive)))
}

// valueError says what fl wants without repeating the value given, which
// may be a secret put under the wrong name. Types it does not know keep
// their own message.
func valueError(fl *pflag.Flag, err error) error {
	if _, own := fl.Value.(interface{ Fresh() pflag.Value }); own {
		return err // a value type of the command's own says what it wants
	}
	var want string
	switch t := fl.Value.Type(); t {
	case "bool":
		want = "true or false"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		want = "a whole number"
		if strings.HasPrefix(t, "uint") {
			want = "a whole number, 0 or more"
		}
	case "float32", "float64":
		want = "a number"
	case "duration":
		want = "a duration such as 500ms, 30s or 1m30s"
	case "intSlice":
		want = "whole numbers"
	case "durationSlice":
		want = "durations such as 30s"
	default:
		return err
	}
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return fmt.Errorf("out of range: want %s", want)
	}
	return fmt.Errorf("not %s", want)
}
