package dsn

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// OptionFiles says which MySQL option files (my.cnf) complete a server
// address, with the MySQL clients' options of the same names.
type OptionFiles struct {
	// NoDefaults reads no file at all (--no-defaults).
	NoDefaults bool
	// File is read instead of the default files (--defaults-file).
	File string
	// Extra is read after the others (--defaults-extra-file).
	Extra string
	// Home is where ~/.my.cnf is looked for ("": $HOME).
	Home string
}

// defaultOptionFiles are the files the MySQL and MariaDB clients read, in
// their order (a later one wins); missing ones are skipped.
var defaultOptionFiles = []string{"/etc/my.cnf", "/etc/mysql/my.cnf", "~/.my.cnf"}

// clientGroups are the groups every MySQL or MariaDB client reads; binlane
// also reads [binlane] and [binlane-ROLE] (source, target), in that order.
var clientGroups = []string{"client", "client-server", "client-mariadb"}

// optionKeys are what binlane takes from option files. In binlane's own
// groups any other key is an error; the clients' groups hold options of
// every client, and binlane ignores the ones it does not use.
var optionKeys = []string{"user", "password", "host", "port", "socket", "ssl-mode", "ssl-ca", "ssl-cert", "ssl-key"}

// option is a value read from an option file and where it was read.
type option struct{ value, origin string }

// optionReader reads option files for one server role.
type optionReader struct {
	groups []string
	opts   map[string]option
	depth  int
}

// read returns the options of the groups role reads (later files and
// groups win), or none when o says so.
func (o OptionFiles) read(role string) (map[string]option, error) {
	r := &optionReader{groups: append(slices.Clone(clientGroups), "binlane"), opts: map[string]option{}}
	if role != "" {
		r.groups = append(r.groups, "binlane-"+role)
	}
	if o.NoDefaults {
		return r.opts, nil
	}
	home := o.Home
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if o.File != "" {
		if err := r.file(o.File, true); err != nil {
			return nil, err
		}
	} else {
		for _, f := range defaultOptionFiles {
			if strings.HasPrefix(f, "~/") {
				if home == "" {
					continue
				}
				f = filepath.Join(home, f[2:])
			}
			if err := r.file(f, false); err != nil {
				return nil, err
			}
		}
	}
	if o.Extra != "" {
		if err := r.file(o.Extra, true); err != nil {
			return nil, err
		}
	}
	return r.opts, nil
}

// file reads one option file; a missing one is an error only when it was
// asked for by name.
func (r *optionReader) file(path string, must bool) error {
	if r.depth > 10 {
		return fmt.Errorf("option file %s: !include nested too deep", path)
	}
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !must {
		return nil
	}
	if err != nil {
		return fmt.Errorf("option file: %w", err)
	}
	if st.Mode().Perm()&0o002 != 0 {
		// As the MySQL clients: anyone could have put a password or a
		// server there.
		return fmt.Errorf("option file %s is world-writable: fix its permissions (chmod o-w)", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("option file: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	group := ""
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		origin := path + ":" + strconv.Itoa(n)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasPrefix(line, "!include "), strings.HasPrefix(line, "!includedir "):
			if err := r.include(path, line); err != nil {
				return fmt.Errorf("%s: %w", origin, err)
			}
		case line[0] == '[':
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return fmt.Errorf("%s: a group name without its ]", origin)
			}
			group = strings.ToLower(strings.TrimSpace(line[1:end]))
		case slices.Contains(r.groups, group):
			if err := r.set(group, line, origin); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("option file %s: %w", path, err)
	}
	return nil
}

// include reads the files of an !include or !includedir line (the
// directory's *.cnf in name order, as the clients do).
func (r *optionReader) include(from, line string) error {
	verb, arg, _ := strings.Cut(line, " ")
	arg = strings.TrimSpace(arg)
	if !filepath.IsAbs(arg) {
		arg = filepath.Join(filepath.Dir(from), arg)
	}
	r.depth++
	defer func() { r.depth-- }()
	if verb == "!include" {
		return r.file(arg, true)
	}
	names, err := filepath.Glob(filepath.Join(arg, "*.cnf"))
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		if err := r.file(name, true); err != nil {
			return err
		}
	}
	return nil
}

// set reads one "name = value" line of a group binlane reads.
func (r *optionReader) set(group, line, origin string) error {
	name, value, hasValue := strings.Cut(line, "=")
	name = strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), "_", "-")
	loose := strings.HasPrefix(name, "loose-")
	name = strings.TrimPrefix(name, "loose-")
	if !slices.Contains(optionKeys, name) {
		if strings.HasPrefix(group, "binlane") && !loose {
			return fmt.Errorf("%s: [%s] option %q is not one binlane reads (%s)", origin, group, name, strings.Join(optionKeys, ", "))
		}
		return nil // another client's option
	}
	if !hasValue {
		return fmt.Errorf("%s: %s needs a value (%s=...)", origin, name, name)
	}
	v, err := optionValue(strings.TrimSpace(value))
	if err != nil {
		return fmt.Errorf("%s: %s: %w", origin, name, err)
	}
	r.opts[name] = option{value: v, origin: origin}
	return nil
}

// optionValue reads a value as the clients do: quoted with ' or " (with
// backslash escapes), or bare up to a # comment.
func optionValue(v string) (string, error) {
	if v == "" || (v[0] != '\'' && v[0] != '"') {
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i]
		}
		if i := strings.Index(v, "\t#"); i >= 0 {
			v = v[:i]
		}
		return strings.TrimSpace(v), nil
	}
	q := v[0]
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == q:
			return b.String(), nil
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 's':
				b.WriteByte(' ')
			default:
				b.WriteByte(v[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", errors.New("a quoted value without its closing quote")
}
