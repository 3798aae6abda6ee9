package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile holds the pid of the process that created a sandbox folder, so
// a later run can remove folders whose owner died without cleaning up.
const ownerFile = "owner.pid"

type binaries struct {
	server    string // mariadbd
	installDB string // mariadb-install-db
	version   string
}

func findBinaries() (binaries, error) {
	var b binaries
	for _, name := range []string{"mariadbd", "/usr/sbin/mariadbd", "mysqld"} {
		if p, err := exec.LookPath(name); err == nil {
			b.server = p
			break
		}
	}
	if b.server == "" {
		return b, errNotInstalled
	}
	for _, name := range []string{"mariadb-install-db", "mysql_install_db"} {
		if p, err := exec.LookPath(name); err == nil {
			b.installDB = p
			break
		}
	}
	if b.installDB == "" {
		return b, errNotInstalled
	}
	out, err := exec.Command(b.server, "--version").Output()
	if err != nil {
		return b, fmt.Errorf("sandbox: %s --version: %w", b.server, err)
	}
	b.version = strings.TrimSpace(string(out))
	return b, nil
}

// templateDir returns a freshly installed, never started data directory
// shared by every sandbox of this MariaDB version. It is built once per
// machine (under a file lock) and copied for each server, which makes a
// start take a fraction of a second instead of a full install.
func templateDir(ctx context.Context, bin binaries) (string, error) {
	sum := sha256.Sum256([]byte(bin.version + bin.server))
	root := filepath.Join(os.TempDir(), "binlane-sandbox-template-"+hex.EncodeToString(sum[:6]))
	data := filepath.Join(root, "data")
	if _, err := os.Stat(filepath.Join(root, "ready")); err == nil {
		return data, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("sandbox: template folder: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(root, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", fmt.Errorf("sandbox: template lock: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("sandbox: template lock: %w", err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(filepath.Join(root, "ready")); err == nil {
		return data, nil
	}
	os.RemoveAll(data)
	args := []string{"--no-defaults", "--datadir=" + data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--innodb-log-file-size=32M"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.CommandContext(ctx, bin.installDB, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sandbox: %s failed: %v\n%s", bin.installDB, err, out)
	}
	if err := os.WriteFile(filepath.Join(root, "ready"), []byte(bin.version), 0o644); err != nil {
		return "", err
	}
	return data, nil
}

// serverArgs builds the mariadbd command line for a server.
func serverArgs(server string, s *Server, opts Options) []string {
	args := []string{server, "--no-defaults",
		"--datadir=" + filepath.Join(s.Dir, "data"),
		"--port=" + strconv.Itoa(s.Port),
		"--bind-address=127.0.0.1",
		"--socket=" + filepath.Join(s.Dir, "mysqld.sock"),
		"--pid-file=" + filepath.Join(s.Dir, "mysqld.pid"),
		"--log-error=" + s.ErrorLog(),
		// Own temporary folder: servers side by side never share temp files.
		"--tmpdir=" + filepath.Join(s.Dir, "tmp"),
		"--server-id=" + strconv.FormatUint(uint64(opts.ServerID), 10),
		"--skip-name-resolve",
		"--performance-schema=OFF",
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--max-allowed-packet=1G",
		"--max-connections=500",
		"--innodb-buffer-pool-size=128M",
		"--innodb-log-file-size=128M",
		"--log-bin=binlog",
		"--binlog-format=ROW",
		"--binlog-row-image=FULL",
		"--binlog-row-metadata=FULL",
		"--gtid-strict-mode=ON",
		"--log-slave-updates=ON",
		"--skip-slave-start",
		"--innodb-fast-shutdown=1",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if opts.Durable {
		args = append(args, "--innodb-flush-log-at-trx-commit=1", "--sync-binlog=1")
	} else {
		args = append(args, "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--innodb-doublewrite=0")
	}
	if s.certs != nil {
		args = append(args, s.certs.tlsArgs()...)
	}
	for _, e := range opts.Extra {
		if !strings.HasPrefix(e, "--") {
			e = "--" + e
		}
		args = append(args, e)
	}
	return args
}

// sweepStale removes sandbox folders left behind by processes that died
// without cleaning up (SIGKILL of a test binary), stopping their server if
// it is still running. Only folders carrying our owner file are touched.
func sweepStale() {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "binlane-sandbox-*"))
	for _, dir := range matches {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		if pb, err := os.ReadFile(filepath.Join(dir, "mysqld.pid")); err == nil {
			if spid, err := strconv.Atoi(strings.TrimSpace(string(pb))); err == nil && processAlive(spid) {
				if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", spid)); strings.Contains(exe, "mariadbd") || strings.Contains(exe, "mysqld") {
					_ = syscall.Kill(spid, syscall.SIGKILL)
				}
			}
		}
		os.RemoveAll(dir)
	}
}

func processAlive(pid int) bool {
	return syscall.Kill(pid, 0) == nil
}
