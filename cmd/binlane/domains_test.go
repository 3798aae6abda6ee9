package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/streamstatus"
)

// TestDomainsCommitIndependently: a MariaDB source writes in two GTID
// domains; a 300,000-row UPDATE in domain 1 takes seconds to apply on the
// target while domain 2 keeps committing small transactions. Domain 2's
// transactions committed on the source after the big one must commit on
// the target before it does, with a lag far below its apply time (the lags
// are logged). Then binlane is killed with SIGKILL at random moments while
// both domains write (big updates in domain 1, small transactions in both,
// rows of a table without a key that a transaction applied twice would
// duplicate), restarted each time from the position saved in the target,
// and the target must end equal to the source row by row.
//
// BINLANE_TEST_BINARY runs another build of binlane (an older one, to
// measure its lag): the lag is then only logged.
func TestDomainsCommitIndependently(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	bin, other := os.Getenv("BINLANE_TEST_BINARY"), true
	if bin == "" {
		bin, other = buildBinary(t), false
	}
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	src.ExecT(t, "CREATE DATABASE marker")
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	srcDB.SetMaxOpenConns(8)
	start := sourcePos(t, srcDB)
	const bigRows = 300000
	src.ExecT(t, "CREATE DATABASE wl",
		"CREATE TABLE wl.big (id INT PRIMARY KEY, v INT NOT NULL)",
		fmt.Sprintf("INSERT INTO wl.big SELECT seq, 0 FROM wl.seq_1_to_%d", bigRows),
		"CREATE TABLE wl.small (id INT PRIMARY KEY, dom INT NOT NULL, at DATETIME(6) NOT NULL)",
		"CREATE TABLE wl.ledger (dom INT NOT NULL, n INT NOT NULL)")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	target := binlaneURL(t, dst, "wl")
	args := []string{"replicate", "--source", binlaneURL(t, src, "wl"), "--target", target, "--stream", "crash",
		"--workers", "8", "--heartbeat", "500ms", "--databases", "wl"}
	if os.Getenv("BINLANE_TEST_DEBUG") != "" {
		args = append(args, "--log-level", "debug")
	}
	var logs bytes.Buffer
	var logMu sync.Mutex
	run := func(extra ...string) (*exec.Cmd, <-chan error) {
		cmd := exec.CommandContext(ctx, bin, slices.Concat(args, extra)...)
		w := lockedWriter{&logs, &logMu}
		cmd.Stdout, cmd.Stderr = w, w
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		return cmd, exited
	}
	dump := func() string { logMu.Lock(); defer logMu.Unlock(); return tail(logs.String(), 1<<20) }
	cmd, exited := run("--start-gtid", start)
	waitPos(t, ctx, dstDB, sourcePos(t, srcDB), exited, dump)

	// Phase 1: the lag of domain 2 while domain 1 applies a long UPDATE.
	d1, d2 := domainConn(t, ctx, srcDB, 1), domainConn(t, ctx, srcDB, 2)
	var mu sync.Mutex
	committed, seen := map[int]time.Time{}, map[int]time.Time{}
	var bigSeen time.Time
	stopWriter, stopPoll := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-stopWriter:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := d2.ExecContext(ctx, "INSERT INTO wl.small VALUES (?, 2, NOW(6))", i); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			committed[i] = time.Now()
			mu.Unlock()
		}
	})
	wg.Go(func() {
		last := 0
		for {
			select {
			case <-stopPoll:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var top, v int
			if err := dstDB.QueryRowContext(ctx, "SELECT COALESCE(MAX(id), 0) FROM wl.small").Scan(&top); err != nil {
				continue
			}
			if err := dstDB.QueryRowContext(ctx, "SELECT v FROM wl.big WHERE id = 1").Scan(&v); err != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			for ; last < top; last++ {
				seen[last+1] = now
			}
			if v == 1 && bigSeen.IsZero() {
				bigSeen = now
			}
			mu.Unlock()
		}
	})
	time.Sleep(time.Second)
	if _, err := d1.ExecContext(ctx, "UPDATE wl.big SET v = v + 1"); err != nil {
		t.Fatal(err)
	}
	bigDone := time.Now()
	for {
		mu.Lock()
		done := !bigSeen.IsZero()
		mu.Unlock()
		if done || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	close(stopWriter)
	waitPos(t, ctx, dstDB, sourcePos(t, srcDB), exited, dump)
	close(stopPoll)
	wg.Wait()
	var lags []time.Duration
	before := 0
	for i, at := range committed {
		if at.Before(bigDone) || at.After(bigSeen) {
			continue
		}
		lags = append(lags, seen[i].Sub(at))
		if seen[i].Before(bigSeen) {
			before++
		}
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	bigApply := bigSeen.Sub(bigDone)
	if len(lags) == 0 {
		t.Fatalf("no transaction of domain 2 committed on the source while the big one applied (%s)", bigApply)
	}
	t.Logf("big UPDATE (domain 1): %s from its source commit to the target's; domain 2 meanwhile: %d transactions, %d committed on the target first, lag p50 %s, max %s",
		bigApply.Round(time.Millisecond), len(lags), before, lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
	if !other && (before == 0 || lags[len(lags)/2] > bigApply/2) {
		os.WriteFile(filepath.Join(os.TempDir(), "binlane-domains-test.log"), []byte(dump()), 0o644)
		t.Errorf("domain 2 waited for domain 1's long transaction (binlane's log: %s)", filepath.Join(os.TempDir(), "binlane-domains-test.log"))
	}

	if !other {
		checkDomainStatus(t, ctx, bin, target)
	}

	// Phase 2: SIGKILL at random moments while both domains write.
	load, stopLoad := context.WithCancel(ctx)
	loadErr := make(chan error, 2)
	go func() { loadErr <- domainLoad(load, d1, 1, true) }()
	go func() { loadErr <- domainLoad(load, d2, 2, false) }()
	rng := rand.New(rand.NewPCG(31, 2))
	kills := 0
	for ; kills < 8; kills++ {
		select {
		case err := <-exited:
			t.Fatalf("binlane stopped by itself: %v\n%s", err, dump())
		case <-time.After(time.Duration(300+rng.IntN(1500)) * time.Millisecond):
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		t.Logf("kill %d: saved position %s", kills+1, streamRow(t, dstDB).pos)
		// The killed process's connections end when the server next reads
		// from them (after a statement it is running): until then they
		// hold the stream's lock, and a new process would be refused.
		waitGone(t, dstDB)
		cmd, exited = run()
	}
	stopLoad()
	for range 2 {
		if err := <-loadErr; err != nil {
			t.Fatalf("load: %v", err)
		}
	}
	waitPos(t, ctx, dstDB, sourcePos(t, srcDB), exited, dump)
	cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	verifyEqual(t, srcDB, dstDB, "wl")
}

// checkDomainStatus: `binlane status --json` shows the position and the
// lag of each of the stream's three domains (0: the setup; 1, 2).
func checkDomainStatus(t *testing.T, ctx context.Context, bin, target string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := exec.CommandContext(ctx, bin, "status", "--target", target, "--stream", "crash", "--json").Output()
		if err != nil {
			t.Fatalf("binlane status: %v", err)
		}
		var docs []streamstatus.Stream
		if err := json.Unmarshal(out, &docs); err != nil {
			t.Fatalf("binlane status --json: %v\n%s", err, out)
		}
		ok := len(docs) == 1 && len(docs[0].Domains) == 3
		for _, d := range docs[0].Domains {
			ok = ok && d.LagSeconds != nil && d.GTID != ""
		}
		if ok {
			for _, d := range docs[0].Domains {
				t.Logf("status: domain %d at %s, lag %.3fs", d.Domain, d.GTID, *d.LagSeconds)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("binlane status does not show the three domains with their lag:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitGone waits until binlane has no connection left on the target.
func waitGone(t *testing.T, db *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", sandbox.TargetUser).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of a killed binlane still on the target after a minute", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// domainConn is a source session writing in a GTID domain.
func domainConn(t *testing.T, ctx context.Context, db *sql.DB, domain int) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.ExecContext(ctx, fmt.Sprintf("SET SESSION gtid_domain_id = %d", domain)); err != nil {
		t.Fatal(err)
	}
	return c
}

// domainLoad writes in one domain until ctx ends: ledger rows (a table
// without a key: one applied twice shows), updates of wl.small's rows of
// its domain and, with big, UPDATEs of 50,000 rows of wl.big.
func domainLoad(ctx context.Context, c *sql.Conn, domain int, big bool) error {
	for n := 1; ctx.Err() == nil; n++ {
		q := []string{fmt.Sprintf("INSERT INTO wl.ledger VALUES (%d, %d)", domain, n)}
		switch {
		case big && n%40 == 0:
			lo := (n / 40 % 6) * 50000
			q = append(q, fmt.Sprintf("UPDATE wl.big SET v = v + 1 WHERE id > %d AND id <= %d", lo, lo+50000))
		case n%3 == 0:
			q = append(q, fmt.Sprintf("INSERT INTO wl.small VALUES (%d, %d, NOW(6))", 1000000*domain+n, domain))
		}
		if _, err := c.ExecContext(ctx, "BEGIN"); err != nil {
			return ignoreEnd(ctx, err)
		}
		for _, s := range q {
			if _, err := c.ExecContext(ctx, s); err != nil {
				return ignoreEnd(ctx, err)
			}
		}
		if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
			return ignoreEnd(ctx, err)
		}
	}
	return nil
}

func ignoreEnd(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// waitPos waits until the stream's saved position contains want.
func waitPos(t *testing.T, ctx context.Context, db *sql.DB, want string, exited <-chan error, dump func() string) {
	t.Helper()
	w, err := gtid.ParseSet(want)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got, _ := gtid.ParseSet(streamRow(t, db).pos)
		if got.ContainsSet(w) {
			return
		}
		select {
		case err := <-exited:
			t.Fatalf("binlane stopped: %v\n%s", err, dump())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("not caught up: at %s, want %s\n%s", streamRow(t, db).pos, want, dump())
		}
	}
}
