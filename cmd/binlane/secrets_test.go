package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// TestNoSecretInAnyOutput plants canary passwords where users put them —
// an address in the config file, the environment, a bad address on the
// command line — and in statements the source binlogs (account
// statements, and a failing DDL whose text holds an address with a
// password), then scans everything binlane prints or stores: the logs and
// errors of replicate, status (text and JSON), the stream's row, the
// metrics endpoint, binlog dump and verify.
func TestNoSecretInAnyOutput(t *testing.T) {
	if testing.Short() {
		t.Skip("needs MariaDB")
	}
	const (
		srcPW   = "SrcCanaryPW1"
		dstPW   = "DstCanaryPW2"
		stmtPW  = "StmtCanaryPW3"
		stmtPW2 = "StmtCanaryPW4"
		urlPW   = "StmtCanaryPW5"
		addrPW  = "AddrCanaryPW6"
	)
	canaries := []string{srcPW, dstPW, stmtPW, stmtPW2, urlPW, addrPW}
	bin := buildBinary(t)
	src := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	dst := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := src.CreateUser(ctx, "canary_src", srcPW, sandbox.RequireNone, "sec", "sec2"); err != nil {
		t.Fatal(err)
	}
	if err := dst.CreateUser(ctx, "canary_dst", dstPW, sandbox.RequireNone, "sec", "sec2"); err != nil {
		t.Fatal(err)
	}
	srcDB, dstDB := src.OpenT(t, ""), dst.OpenT(t, "")
	src.ExecT(t, "CREATE DATABASE marker")
	start := sourcePos(t, srcDB)
	src.ExecT(t, "CREATE DATABASE sec", "CREATE TABLE sec.t (id INT PRIMARY KEY)",
		"CREATE USER app1@'%' IDENTIFIED BY '"+stmtPW+"'",
		"SET PASSWORD FOR app1@'%' = PASSWORD('"+stmtPW2+"')",
		"GRANT SELECT ON sec.* TO app1@'%' IDENTIFIED BY '"+stmtPW+"'",
		"INSERT INTO sec.t VALUES (1)",
		// Created only on the source: on the target the statement fails,
		// and the error quotes it.
		"SET SESSION sql_log_bin = 0", "CREATE DATABASE sec2", "SET SESSION sql_log_bin = 1",
		"CREATE TABLE sec2.fed (id INT PRIMARY KEY) COMMENT 'mysql://app:"+urlPW+"@10.0.0.1:3306/db'")
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "binlane.yaml")
	srcAddr := fmt.Sprintf("mysql://canary_src:%s@%s/", srcPW, src.Addr())
	dstAddr := fmt.Sprintf("mysql://canary_dst@%s/", dst.Addr())
	if err := os.WriteFile(cfgFile, []byte("source: "+srcAddr+"\ntarget: "+dstAddr+"\ndatabases: [sec, sec2]\nstream: sec\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "BINLANE_TARGET_PASSWORD="+dstPW)
	var outputs []string
	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		out, _ := cmd.CombinedOutput()
		outputs = append(outputs, strings.Join(args[:1], " ")+":\n"+string(out))
		return string(out)
	}

	// The stream stops on the DDL the target cannot apply; its error
	// quotes the statement.
	out := run("replicate", "--config", cfgFile, "--start-gtid", start, "--heartbeat", "500ms")
	if !strings.Contains(out, "sec2") {
		t.Fatalf("replicate did not stop on the failing DDL:\n%s", out)
	}
	run("status", "--target", dstAddr)
	run("status", "--target", dstAddr, "--json")
	var message string
	dstDB.QueryRow("SELECT message FROM binlane.streams WHERE name = 'sec'").Scan(&message)
	outputs = append(outputs, "stream row:\n"+message)

	// A running stream: its metrics, while it runs.
	dst.ExecT(t, "CREATE DATABASE sec2") // the repair
	cmd := exec.CommandContext(ctx, bin, "replicate", "--config", cfgFile, "--heartbeat", "500ms", "--metrics-addr", "127.0.0.1:0")
	cmd.Env = env
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrRE := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	waitFor(t, 30*time.Second, "the metrics address", func() bool { return addrRE.MatchString(logs.String()) })
	metricsAddr := addrRE.FindStringSubmatch(logs.String())[1]
	defer func() {
		if t.Failed() {
			t.Logf("running replicate:\n%s", logs.String())
		}
	}()
	waitFor(t, 30*time.Second, "the stream to catch up", func() bool {
		var pos string
		dstDB.QueryRow("SELECT gtid_pos FROM binlane.streams WHERE name = 'sec'").Scan(&pos)
		return pos == sourcePos(t, srcDB)
	})
	for _, path := range []string{"/metrics", "/status", "/healthz", "/"} {
		resp, err := http.Get("http://" + metricsAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		outputs = append(outputs, path+":\n"+string(body))
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	outputs = append(outputs, "replicate (running):\n"+logs.String())

	run("binlog", "dump", "--source", srcAddr, "--from-gtid", start, "--non-blocking")
	run("verify", "--config", cfgFile)
	// A bad address never echoes its password.
	run("status", "--target", "mysql://u:"+addrPW+"@bad host:1/")
	run("status", "--target", "mysql://u:"+addrPW+"%zz@127.0.0.1:1/")

	all := strings.Join(outputs, "\n")
	for _, c := range canaries {
		if strings.Contains(all, c) {
			for _, o := range outputs {
				if strings.Contains(o, c) {
					t.Errorf("canary %s printed in:\n%s", c, o)
				}
			}
		}
	}
	if !strings.Contains(all, "<redacted>") && !strings.Contains(all, "***") {
		t.Errorf("nothing was redacted: did the canaries reach the outputs at all?\n%s", all)
	}
	// With --raw-statements, dump shows what the source wrote.
	if raw := run("binlog", "dump", "--source", srcAddr, "--from-gtid", start, "--non-blocking", "--raw-statements"); !strings.Contains(raw, stmtPW) {
		t.Errorf("--raw-statements hid the statement")
	}
}
