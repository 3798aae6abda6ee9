package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestManPages: the man pages in docs/man are those the command
// definitions give (run `make man` after changing a command).
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	root := newRootCmd()
	root.SetArgs([]string{"man", dir})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	date := regexp.MustCompile(`(?m)^\.TH .*$`)
	files, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if len(files) < 10 {
		t.Fatalf("%d man pages", len(files))
	}
	for _, f := range files {
		got, _ := os.ReadFile(f)
		want, err := os.ReadFile(filepath.Join("..", "..", "docs", "man", filepath.Base(f)))
		if err != nil {
			t.Errorf("docs/man lacks %s: run make man", filepath.Base(f))
			continue
		}
		if date.ReplaceAllString(string(got), "") != date.ReplaceAllString(string(want), "") {
			t.Errorf("docs/man/%s is out of date: run make man", filepath.Base(f))
		}
	}
}
