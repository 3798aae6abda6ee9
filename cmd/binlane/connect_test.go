package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestOneConfigFileOverSockets runs copy, replicate, status and verify
// with one config file, as a DBA would keep a stream's settings: the
// addresses go through the servers' Unix sockets (both address forms), the
// accounts and passwords come from a MySQL option file (--defaults-file,
// [binlane-source] and [binlane-target]), and keys a command does not use
// are ignored by it.
func TestOneConfigFileOverSockets(t *testing.T) {
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO app.t SELECT seq, CONCAT('row ', seq) FROM app.seq_1_to_3000")
	binlaneURL(t, src, "app")
	binlaneURL(t, dst, "app")
	dir := t.TempDir()
	cnf := filepath.Join(dir, "binlane.cnf")
	write := func(path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cnf, fmt.Sprintf(`[client]
user = nobody
[binlane-source]
user = %s
password = "%s"
socket = %s
[binlane-target]
user = %s
password = %s
`, sandbox.SourceUser, sandbox.AccountPassword, src.Socket(), sandbox.TargetUser, sandbox.AccountPassword))
	conf := filepath.Join(dir, "stream.yaml")
	write(conf, fmt.Sprintf(`# the stream "orders", for every command
source: mysql://localhost/
target: unix(%s)/
defaults-file: %s
stream: orders
databases: [app]
threads: 2
copy-threads: 2
chunk-time: 100ms
max-memory: 256MiB
lock-wait-timeout: 30s
status-interval: 1m
max-lag: 1m
json: false
`, dst.Socket(), cnf))

	cmd := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != want {
			t.Fatalf("binlane %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	log := cmd(0, "copy", "--config", conf)
	if !strings.Contains(log, "copy done; the target has caught up") || !strings.Contains(log, "socket="+src.Socket()) {
		t.Errorf("copy log:\n%s", log)
	}
	src.ExecT(t, "UPDATE app.t SET v = 'changed' WHERE id <= 100", "DELETE FROM app.t WHERE id > 2900")
	cmd(0, "replicate", "--config", conf, "--stop-at-gtid", sourcePos(t, src.OpenT(t, "")))
	if out := cmd(0, "status", "--config", conf); !strings.HasPrefix(out, "stream orders: stopped (") {
		t.Errorf("status:\n%s", out)
	}
	cmd(1, "status", "--config", conf, "--check") // stopped: a warning
	if out := cmd(0, "verify", "--config", conf); !strings.Contains(out, "equal") {
		t.Errorf("verify:\n%s", out)
	}
	// The same stream in the other address forms: a URL with ?socket= for
	// the target, the driver form with unix() for the source.
	if out := cmd(0, "verify", "--config", conf, "--target", "mysql://localhost/?socket="+dst.Socket(),
		"--source", "@unix("+src.Socket()+")/"); !strings.Contains(out, "equal") {
		t.Errorf("verify:\n%s", out)
	}
	// verify is held back by the same limits as the copy and the applier:
	// an unreachable replica holds it (fails closed) until it is stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var vout syncBuffer
	v := newVerifyCmd()
	v.SilenceUsage, v.SilenceErrors = true, true
	v.SetOut(&vout)
	v.SetErr(&vout)
	v.SetArgs([]string{"--config", conf, "--max-replica-lag", "5s", "--target-replica", "mysql://watch@127.0.0.1:1/"})
	if err := v.ExecuteContext(ctx); err == nil || !strings.Contains(err.Error(), "interrupted") ||
		!strings.Contains(vout.String(), `msg="work held back" reason="replica mysql://watch:***@127.0.0.1:1/: lag unreadable (limit 5s)`) ||
		strings.Contains(vout.String(), "status=equal") {
		t.Errorf("verify under an unreadable limit: %v\n%s", err, vout.String())
	}
	// Without the option file, [client]'s user would be refused; an
	// explicit password file wins over the environment's password.
	pw := filepath.Join(dir, "pw")
	write(pw, sandbox.AccountPassword+"\n")
	t.Setenv("BINLANE_TARGET_PASSWORD", "wrong")
	cmd(0, "status", "--config", conf, "--target", fmt.Sprintf("%s@tcp(127.0.0.1:%d)/", sandbox.TargetUser, dst.Port),
		"--target-password-file", pw)
	if out := cmd(2, "status", "--config", conf, "--target", fmt.Sprintf("%s@tcp(127.0.0.1:%d)/", sandbox.TargetUser, dst.Port)); !strings.Contains(out, "Access denied") {
		t.Errorf("the environment's password was not used without the file:\n%s", out)
	}
	// A key no command knows stops every command with its line.
	write(conf, "source: mysql://localhost/\nthreds: 2\n")
	if out := cmd(2, "status", "--config", conf); !strings.Contains(out, `stream.yaml:2: unknown option "threds"`) {
		t.Errorf("unknown key:\n%s", out)
	}
}
