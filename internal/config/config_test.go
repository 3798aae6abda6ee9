package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// testFlags is a command's flag set with every kind of option binlane has.
func testFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("config", "", "")
	fs.String("source", "", "")
	fs.String("stream", "default", "")
	fs.String("start-gtid", "", "")
	fs.String("source-password-env", "BINLANE_SOURCE_PASSWORD", "")
	fs.Int("workers", 4, "")
	fs.Int("max-batch", 128, "")
	fs.Uint32("server-id", 0, "")
	fs.Bool("binlog-applied", true, "")
	fs.Duration("heartbeat", 5*time.Second, "")
	fs.StringSlice("databases", nil, "")
	fs.StringSlice("exclude", nil, "")
	fs.String("secret-only", "", "")
	return fs
}

func TestLoad(t *testing.T) {
	oldFormat := `# the format before YAML: name: value lines, quotes, repeated lists

source: mysql://repl@src:3306/
stream: "main"
workers: 6
databases: app, shop
databases: crm
exclude: 'app.audit'
heartbeat: 2s
binlog-applied: false
`
	cases := []struct {
		name    string
		file    string // "" for no --config
		env     []string
		args    []string
		want    map[string]string // flag → Value.String()
		wantErr string
		notErr  string // must not appear in the error (a value)
	}{
		{name: "comment after a value", file: "databases: shop  # main db\nworkers: 3 # more later\n",
			want: map[string]string{"databases": "[shop]", "workers": "3"}},
		{name: "old name: value file", file: oldFormat, want: map[string]string{
			"source": "mysql://repl@src:3306/", "stream": "main", "workers": "6", "databases": "[app,shop,crm]",
			"exclude": "[app.audit]", "heartbeat": "2s", "binlog-applied": "false", "max-batch": "128"}},
		{name: "old name = value line", file: "source: x\ntarget = \"mysql://binlane@dst/\"\n",
			wantErr: `binlane.yaml:2: "target = …" is no longer read: the file is YAML now; write "target: …" instead`},
		{name: "old format only", file: "workers = 6\nstream = s\n",
			wantErr: `binlane.yaml:1: "workers = …" is no longer read`},
		{name: "unknown key", file: "workers: 2\nworkerz: 3\n", wantErr: `binlane.yaml:2: unknown option "workerz"`},
		{name: "underscore key", file: "\nmax_batch: 3\n", wantErr: `binlane.yaml:2: unknown option "max_batch" (did you mean "max-batch"?)`},
		{name: "config in config", file: "config: other.yaml\n", wantErr: `binlane.yaml:1: unknown option "config"`},
		{name: "command-line-only key", file: "secret-only: x\n", wantErr: `binlane.yaml:1: unknown option "secret-only"`},
		{name: "malformed int", file: "stream: s\nworkers: many\n", wantErr: "binlane.yaml:2: workers: not a whole number", notErr: "many"},
		{name: "malformed duration", file: "heartbeat: soon\n", wantErr: "binlane.yaml:1: heartbeat: not a duration", notErr: "soon"},
		{name: "malformed bool", file: "binlog-applied: no\n", wantErr: "binlane.yaml:1: binlog-applied: not true or false"},
		{name: "negative server id", file: "server-id: -1\n", wantErr: "binlane.yaml:1: server-id: not a whole number, 0 or more"},
		{name: "malformed value under a flag", file: "workers: many\n", args: []string{"--workers", "2"},
			wantErr: "binlane.yaml:1: workers: not a whole number"},
		{name: "value on the next line", file: "stream: s\nworkers:\n  many\n", wantErr: "binlane.yaml:3: workers: not a whole number"},
		{name: "no value", file: "workers:\n", wantErr: "binlane.yaml:1: workers: no value"},
		{name: "mapping value", file: "workers:\n  n: 2\n", wantErr: "binlane.yaml:2: workers: want a value or a list, not a mapping"},
		{name: "list for one value", file: "workers: [1, 2]\n", wantErr: "binlane.yaml:1: workers: takes one value, not a list"},
		{name: "given twice", file: "workers: 1\nstream: s\nworkers: 2\n", wantErr: "binlane.yaml:3: workers is given twice (first on line 1)"},
		{name: "second document", file: "workers: 1\n---\nworkers: 2\n", wantErr: "binlane.yaml:2: a second YAML document"},
		{name: "not a mapping", file: "- workers\n", wantErr: "binlane.yaml:1: want one \"name: value\" per line"},
		{name: "yaml syntax", file: "stream: 'open\n", wantErr: "binlane.yaml: yaml: "},
		{name: "empty file", file: "# nothing yet\n", want: map[string]string{"workers": "4", "stream": "default"}},
		{name: "flow list", file: "databases: [app, 'shop']\n", want: map[string]string{"databases": "[app,shop]"}},
		{name: "block list", file: "databases:\n  - app\n  - shop # comment\nexclude: []\n", want: map[string]string{"databases": "[app,shop]", "exclude": "[]"}},
		{name: "comma string", file: "databases: 'app,shop, crm'\n", want: map[string]string{"databases": "[app,shop,crm]"}},
		{name: "repeated list lines", file: "databases: [app]\ndatabases: shop, crm\n", want: map[string]string{"databases": "[app,shop,crm]"}},
		{name: "text kept as written", file: "stream: 0123\nstart-gtid: 0-1-100\nsource: 1.10\n",
			want: map[string]string{"stream": "0123", "start-gtid": "0-1-100", "source": "1.10"}},
		{name: "anchor", file: "stream: &s main\nsource: *s\n", want: map[string]string{"source": "main"}},
		{name: "env overrides file", file: "workers: 6\nstream: fromfile\n", env: []string{"BINLANE_WORKERS=8"},
			want: map[string]string{"workers": "8", "stream": "fromfile"}},
		{name: "flag overrides env", file: "workers: 6\n", env: []string{"BINLANE_WORKERS=8"}, args: []string{"--workers", "2"},
			want: map[string]string{"workers": "2"}},
		{name: "flag overrides file", file: "databases: [a, b]\n", args: []string{"--databases", "c"},
			want: map[string]string{"databases": "[c]"}},
		{name: "env names", env: []string{"BINLANE_MAX_BATCH=7", "BINLANE_SOURCE=mysql://u@h/", "BINLANE_DATABASES=a, b"},
			want: map[string]string{"max-batch": "7", "source": "mysql://u@h/", "databases": "[a,b]"}},
		{name: "env without a flag ignored", env: []string{"BINLANE_SOURCE_PASSWORD=pw", "BINLANE_SKIP_DB=1", "BINLANE_SECRET_ONLY=x", "OTHER_WORKERS=9"},
			want: map[string]string{"source": "", "workers": "4", "secret-only": ""}},
		{name: "malformed env", env: []string{"BINLANE_WORKERS=eight"}, wantErr: "environment variable BINLANE_WORKERS: not a whole number", notErr: "eight"},
		{name: "env names the file", file: "workers: 6\n", env: []string{"BINLANE_CONFIG=$FILE"}, want: map[string]string{"workers": "6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := testFlags()
			args := c.args
			env := c.env
			if c.file != "" {
				path := filepath.Join(t.TempDir(), "binlane.yaml")
				if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(strings.Join(env, " "), "$FILE") {
					env = []string{strings.ReplaceAll(env[0], "$FILE", path)}
				} else {
					args = append(args, "--config", path)
				}
			}
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			err := Load(fs, Options{ConfigFlag: "config", EnvPrefix: "BINLANE_", Environ: func() []string { return env },
				CommandLineOnly: []string{"secret-only"}})
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, c.wantErr)
				}
				if c.notErr != "" && strings.Contains(err.Error(), c.notErr) {
					t.Errorf("the error repeats the value %q: %v", c.notErr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, want := range c.want {
				if got := fs.Lookup(name).Value.String(); got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestLoadMarksChanged: an option from the file or the environment counts
// as given, as commands test with Changed (binlog dump's --from-gtid ”).
func TestLoadMarksChanged(t *testing.T) {
	fs := testFlags()
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("start-gtid: ''\ndatabases: [a]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--config", path}); err != nil {
		t.Fatal(err)
	}
	env := []string{"BINLANE_WORKERS=3"}
	if err := Load(fs, Options{ConfigFlag: "config", EnvPrefix: "BINLANE_", Environ: func() []string { return env }}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"start-gtid": true, "databases": true, "workers": true, "stream": false} {
		if got := fs.Changed(name); got != want {
			t.Errorf("Changed(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestLoadMissingFile(t *testing.T) {
	fs := testFlags()
	if err := fs.Parse([]string{"--config", filepath.Join(t.TempDir(), "absent.yaml")}); err != nil {
		t.Fatal(err)
	}
	err := Load(fs, Options{ConfigFlag: "config", Environ: func() []string { return nil }})
	if err == nil || !strings.HasPrefix(err.Error(), "--config: open ") {
		t.Fatalf("missing file: %v", err)
	}
	// Neither a file nor an environment: nothing changes.
	fs = testFlags()
	if err := Load(fs, Options{}); err != nil || fs.Lookup("workers").Value.String() != "4" {
		t.Fatalf("no sources: %v", err)
	}
}

// TestLoadKnownElsewhere: one file serves every command. A key another
// command has is ignored (a command-line-only option of this command too),
// while a key no command has is still an error with its line.
func TestLoadKnownElsewhere(t *testing.T) {
	known := func(name string) bool { return name == "max-lag" || name == "secret-only" || name == "copy-threads" }
	cases := []struct {
		file, wantErr string
		want          map[string]string
	}{
		{file: "workers: 3\nmax-lag: 10s\nsecret-only: x\n", want: map[string]string{"workers": "3", "secret-only": ""}},
		{file: "max-lag: 10s\nmax-lagg: 3\n", wantErr: `binlane.yaml:2: unknown option "max-lagg"`},
		{file: "copy_threads: 3\n", wantErr: `binlane.yaml:1: unknown option "copy_threads" (did you mean "copy-threads"?)`},
		{file: "config: x.yaml\n", wantErr: `binlane.yaml:1: unknown option "config"`},
	}
	for _, c := range cases {
		fs := testFlags()
		path := filepath.Join(t.TempDir(), "binlane.yaml")
		if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := fs.Parse([]string{"--config", path}); err != nil {
			t.Fatal(err)
		}
		err := Load(fs, Options{ConfigFlag: "config", Environ: func() []string { return nil }, Known: known,
			CommandLineOnly: []string{"secret-only"}})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%q: error %v, want %q", c.file, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", c.file, err)
		}
		for name, want := range c.want {
			if got := fs.Lookup(name).Value.String(); got != want {
				t.Errorf("%q: --%s = %q, want %q", c.file, name, got, want)
			}
		}
	}
}
