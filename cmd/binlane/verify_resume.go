package main

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/binlane/binlane/internal/verify"
)

// resume is verify's --resume-file: one "schema.table" per line for each
// table found equal, appended as tables finish, so that a run interrupted
// (or stopped by an error) goes on with the tables it had not finished.
type resume struct {
	mu    sync.Mutex
	f     *os.File
	equal map[string]bool
	log   *slog.Logger
}

func openResume(path string, log *slog.Logger) (*resume, error) {
	r := &resume{equal: map[string]bool{}, log: log}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--resume-file: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			r.equal[line] = true
		}
	}
	if len(r.equal) > 0 {
		log.Info("leaving out the tables an earlier run found equal", "file", path, "tables", len(r.equal))
	}
	if r.f, err = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err != nil {
		return nil, fmt.Errorf("--resume-file: %w", err)
	}
	return r, nil
}

func (r *resume) skip(schema, table string) bool { return r.equal[schema+"."+table] }

func (r *resume) record(t verify.TableReport) {
	if !t.Equal() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := fmt.Fprintln(r.f, t.Schema+"."+t.Table); err != nil {
		r.log.Warn("--resume-file: could not record a table", "table", t.Name(), "error", err)
	}
}

func (r *resume) close() { r.f.Close() }
