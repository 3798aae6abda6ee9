// Package sandbox starts throwaway MariaDB servers for tests, the demo and
// the benchmarks: a fresh data directory in a temporary folder, a free port
// on 127.0.0.1, its own socket and pid file, removed again when the caller is
// done.
//
// The package owns only servers it started itself. It must never connect to,
// stop or change a server it did not start (such as a system MariaDB on 3306).
package sandbox

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Role selects the server options a sandbox starts with.
type Role int

const (
	// Source is a binlogging primary in the format binlane requires: ROW
	// events, FULL images, FULL table-map metadata, strict GTIDs.
	Source Role = iota
	// Target is a server binlane writes into. It binlogs too, so a target
	// can have replicas of its own (and so it can act as a native replica
	// in the benchmarks).
	Target
)

func (r Role) String() string {
	if r == Source {
		return "source"
	}
	return "target"
}

// Options describe one server to start.
type Options struct {
	Role Role
	// ServerID defaults to 1 for a source and 2 for a target.
	ServerID uint32
	// Durable turns on innodb_flush_log_at_trx_commit=1 and sync_binlog=1.
	// Off by default: tests need speed, not crash safety of the host.
	Durable bool
	// Extra server options, each "--name=value" or "name=value"; they come
	// last and so win over the defaults.
	Extra []string
	// Name is a label used in the data directory name and in errors.
	Name string
	// DataFrom, when set, is a data directory (of a stopped server) to copy
	// instead of a fresh one: benchmarks start every contender from the
	// same state this way.
	DataFrom string
	// TLS, when set, makes the server offer TLS with certificates
	// generated for it (Server.Certs).
	TLS *TLS
}

// Server is a running sandbox server.
type Server struct {
	Name    string
	Port    int
	Dir     string // root folder: data/, error log, socket, pid file
	opts    Options
	args    []string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd exits
	exitErr error
	// signalled is set when we stopped the server; an exit without it is
	// a crash, whose error log Close keeps.
	signalled bool
	crashed   bool
	certs     *Certs // nil without Options.TLS
}

// Start creates a data directory from the cached template and starts a
// server on a free port. The caller must Close it.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	sweepStale()
	tmpl := opts.DataFrom
	if tmpl == "" {
		if tmpl, err = templateDir(ctx, bin); err != nil {
			return nil, err
		}
	}
	if opts.ServerID == 0 {
		opts.ServerID = 1
		if opts.Role == Target {
			opts.ServerID = 2
		}
	}
	if opts.Name == "" {
		opts.Name = opts.Role.String()
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("binlane-sandbox-%s-", sanitize(opts.Name)))
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: create folder: %w", opts.Name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox %s: %w", opts.Name, err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox %s: %w", opts.Name, err)
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", tmpl, filepath.Join(dir, "data")).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("sandbox %s: copy template datadir: %v: %s", opts.Name, err, out)
	}
	s := &Server{Name: opts.Name, Dir: dir, opts: opts}
	if opts.TLS != nil {
		if s.certs, err = NewCerts(filepath.Join(dir, "tls"), opts.TLS.ServerNames); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("sandbox %s: %w", opts.Name, err)
		}
	}
	// A port picked from a closed listener can be taken by someone else
	// before mariadbd binds it; try a few.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.Port = port
		s.args = serverArgs(bin.server, s, opts)
		err = s.launch(ctx)
		if err == nil {
			return s, nil
		}
		if attempt >= 3 || !strings.Contains(err.Error(), "Address already in use") {
			s.Close()
			return nil, err
		}
	}
}

// launch starts the mariadbd process and waits until it accepts connections.
func (s *Server) launch(ctx context.Context) error {
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Dir = s.Dir
	// The server dies with us even on SIGKILL of the test binary.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	logf, err := os.OpenFile(filepath.Join(s.Dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("sandbox %s: start mariadbd: %w", s.Name, err)
	}
	exited := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.exited, s.exitErr = cmd, exited, nil
	s.mu.Unlock()
	s.signalled = false
	go func() {
		err := cmd.Wait()
		logf.Close()
		s.mu.Lock()
		s.exitErr = err
		if !s.signalled {
			s.crashed = true
		}
		s.mu.Unlock()
		close(exited)
	}()
	return s.waitReady(ctx, exited)
}

func (s *Server) waitReady(ctx context.Context, exited chan struct{}) error {
	deadline := time.Now().Add(90 * time.Second)
	for {
		db, err := sql.Open("mysql", s.DSN(""))
		if err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.mu.Lock()
			status := s.exitErr
			s.mu.Unlock()
			return fmt.Errorf("sandbox %s: mariadbd exited during start-up (%v): %s", s.Name, status, s.errorLogTail(20))
		case <-ctx.Done():
			return fmt.Errorf("sandbox %s: waiting for start-up: %w", s.Name, ctx.Err())
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandbox %s: not accepting connections after 90s: %v: %s", s.Name, err, s.errorLogTail(20))
		}
	}
}

// DSN returns the go-sql-driver form for database db (may be empty).
func (s *Server) DSN(db string) string {
	cfg := mysql.NewConfig()
	cfg.User = "root"
	cfg.Net = "tcp"
	cfg.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
	cfg.DBName = db
	cfg.Params = map[string]string{"charset": "utf8mb4"}
	cfg.Timeout = 10 * time.Second
	return cfg.FormatDSN()
}

// URL returns the mysql:// form of the server's address.
func (s *Server) URL() string {
	return fmt.Sprintf("mysql://root@127.0.0.1:%d/", s.Port)
}

// Addr returns host:port.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))
}

// Open returns a new connection pool to the server.
func (s *Server) Open(db string) (*sql.DB, error) {
	return sql.Open("mysql", s.DSN(db))
}

// Exec runs statements on a fresh connection with multi-statements enabled:
// a convenience for tests and the demo.
func (s *Server) Exec(ctx context.Context, stmts ...string) error {
	cfg, err := mysql.ParseDSN(s.DSN(""))
	if err != nil {
		return err
	}
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, q := range stmts {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("sandbox %s: %s: %w", s.Name, abbreviate(q, 200), err)
		}
	}
	return nil
}

// Stop shuts the server down cleanly and waits for it to exit.
func (s *Server) Stop() error {
	return s.signal(syscall.SIGTERM, 120*time.Second)
}

// Kill sends SIGKILL: a crash as far as the server is concerned.
func (s *Server) Kill() error {
	return s.signal(syscall.SIGKILL, 30*time.Second)
}

func (s *Server) signal(sig syscall.Signal, wait time.Duration) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.signalled = true
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-exited:
		return nil
	default:
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
		return nil
	case <-time.After(wait):
		_ = cmd.Process.Kill()
		<-exited
		return fmt.Errorf("sandbox %s: did not stop within %s after %s", s.Name, wait, sig)
	}
}

// Restart stops the server (cleanly unless it is already down) and starts
// it again on the same port with the same data directory.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Start starts a stopped server again on the same port and datadir.
func (s *Server) Start(ctx context.Context) error {
	if s.Running() {
		return nil
	}
	return s.launch(ctx)
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exited == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// Close stops the server and removes its folder. Safe to call twice. When
// the server had crashed on its own, its error log is kept in the temporary
// folder and the error says where.
func (s *Server) Close() error {
	err := s.signal(syscall.SIGTERM, 60*time.Second)
	s.mu.Lock()
	crashed := s.crashed
	s.mu.Unlock()
	if crashed {
		keep := filepath.Join(os.TempDir(), fmt.Sprintf("binlane-sandbox-crash-%s-%d.log", sanitize(s.Name), time.Now().UnixNano()))
		if b, rerr := os.ReadFile(s.ErrorLog()); rerr == nil && os.WriteFile(keep, b, 0o644) == nil {
			err = errors.Join(err, fmt.Errorf("sandbox %s: mariadbd crashed during the run; error log kept in %s", s.Name, keep))
		}
	}
	if os.Getenv("BINLANE_KEEP_SANDBOX") != "" {
		os.Remove(filepath.Join(s.Dir, ownerFile)) // kept: later sweeps leave it alone
		return err
	}
	if rerr := os.RemoveAll(s.Dir); rerr != nil && err == nil {
		err = rerr
	}
	return err
}

// PID returns the server process id (0 when it is not running).
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Socket returns the path of the server's Unix socket.
func (s *Server) Socket() string { return filepath.Join(s.Dir, "mysqld.sock") }

// DataDir returns the server's data directory.
func (s *Server) DataDir() string { return filepath.Join(s.Dir, "data") }

// ErrorLog returns the path of the server's error log.
func (s *Server) ErrorLog() string { return filepath.Join(s.Dir, "error.log") }

func (s *Server) errorLogTail(n int) string {
	b, err := os.ReadFile(s.ErrorLog())
	if err != nil {
		// Dead before it opened its error log: what it printed, if anything.
		out, _ := os.ReadFile(filepath.Join(s.Dir, "stdout.log"))
		if len(bytes.TrimSpace(out)) == 0 {
			return "(no error log, no output)"
		}
		b = append([]byte("(no error log; its output:)\n"), out...)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sandbox: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

var errNotInstalled = errors.New("mariadbd is not installed: run `sudo apt-get install -y mariadb-server` (or `make deps`)")
