package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "2c40c00e1234567890abcdef"}, {Key: "vcs.time", Value: "2026-11-25T14:18:13Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := describeBuild("dev", bi), "dev (commit 2c40c00e1234+modified, 2026-11-25T14:18:13Z), built with go1.26.8"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	bi.Main.Version, bi.Settings = "v1.2.0", nil
	if got := describeBuild("dev", bi); got != "v1.2.0, built with go1.26.8" {
		t.Errorf("go install: %q", got)
	}
	bi.Main.Version = "v0.0.0-20261125180521-a2859cdf32b4+dirty"
	if got := describeBuild("dev", bi); got != "dev, built with go1.26.8" {
		t.Errorf("untagged: %q", got)
	}
	if got := describeBuild("v1.3.0", nil); got != "v1.3.0" {
		t.Errorf("no build info: %q", got)
	}
}

// TestVersionShowsCommit builds the binary as a user would and checks that
// --version names the commit it was built from.
func TestVersionShowsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	// Go stamps the commit only where .git is a folder, not in a git
	// worktree (where it is a file): build a clone of HEAD there.
	dir := "."
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !st.IsDir() {
		clone := filepath.Join(t.TempDir(), "src")
		if out, err := exec.Command("git", "clone", "-q", "--shared", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
			t.Fatalf("git clone: %v\n%s", err, out)
		}
		if out, err := exec.Command("git", "-C", clone, "checkout", "-q", strings.TrimSpace(string(head))).CombinedOutput(); err != nil {
			t.Fatalf("git checkout: %v\n%s", err, out)
		}
		dir = filepath.Join(clone, "cmd", "binlane")
	}
	bin := filepath.Join(t.TempDir(), "binlane")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := `^binlane version dev \(commit ` + strings.TrimSpace(string(head))[:12] + `(\+modified)?, \S+\), built with go\S+\n$`
	if !regexp.MustCompile(want).Match(out) {
		t.Errorf("--version: %q, want %s", out, want)
	}
}
