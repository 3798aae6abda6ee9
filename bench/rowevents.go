package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/binlane/binlane/internal/sandbox"
)

// The "rowevents" reference replays the source's own row events on the
// target as BINLOG statements, one connection, transactions grouped into
// target commits of rowEventsBatch like binlane's: what the target's CPU
// costs when rows arrive through the handler API (as on MariaDB's
// replica) instead of as SQL text, with none of the replica's relay log
// and coordination. It is a measuring stick, not a contender: serial, no
// position saved, root's BINLOG privilege.
const rowEventsBatch = 126

// rowEventsPerStatement bounds the transactions of one BINLOG statement:
// the server's cost per event grows with the events of its statement
// (measured on 10.11 with small transactions: 80-100 µs each at one per
// statement, 20-40 at 5-20, 80-100 at 100, 260-320 at 500).
const rowEventsPerStatement = 8

// runRowEvents prints the backlog's events with mariadb-binlog (untimed,
// like the native replica's relay fetch), then times sending them.
func runRowEvents(ctx context.Context, b *backlog, dst *sandbox.Server) (drained, error) {
	files, _ := filepath.Glob(filepath.Join(b.src.DataDir(), "binlog.[0-9]*")) // the pattern is valid
	if len(files) == 0 {
		return drained{}, fmt.Errorf("no binlog files in %s", b.src.DataDir())
	}
	sort.Strings(files)
	args := append([]string{"--start-position=" + b.start, "--stop-position=" + b.end}, files...)
	out, err := exec.CommandContext(ctx, "mariadb-binlog", args...).Output()
	if err != nil {
		return drained{}, fmt.Errorf("mariadb-binlog: %w", err)
	}
	fde, txns, err := binlogStatements(out)
	if err != nil {
		return drained{}, err
	}
	if len(txns) != b.txns {
		return drained{}, fmt.Errorf("mariadb-binlog printed %d transactions, the backlog has %d", len(txns), b.txns)
	}
	cfg, err := mysql.ParseDSN(dst.DSN(""))
	if err != nil {
		return drained{}, err
	}
	cfg.MultiStatements = true
	cfg.MaxAllowedPacket = 0
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return drained{}, err
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	// One session throughout: the format description lives in it.
	conn1, err := db.Conn(ctx)
	if err != nil {
		return drained{}, err
	}
	defer conn1.Close()
	if _, err := conn1.ExecContext(ctx, fde); err != nil {
		return drained{}, fmt.Errorf("format description: %w", err)
	}
	meter := startCPU(dst, b.src)
	t0 := time.Now()
	samples, err := replayRowEvents(ctx, conn1, txns, func(done int) sample {
		return sample{time.Since(t0), seqOf(b.start) + int64(done)}
	})
	if err != nil {
		return drained{}, err
	}
	elapsed := time.Since(t0)
	cpu := meter.stop(0)
	return drained{elapsed: elapsed, detail: fmt.Sprintf("%d trx per target commit; CPU s: target %.1f", rowEventsBatch,
		cpu.Target.Seconds()), samples: samples, cpu: cpu}, nil
}

// replayRowEvents sends the transactions' events, rowEventsBatch per
// target commit, and returns a sample (from at) after each commit.
func replayRowEvents(ctx context.Context, conn *sql.Conn, txns [][]string, at func(done int) sample) ([]sample, error) {
	// A BINLOG statement must end its round trip (the server's answer to
	// it drops the more-results flag), so every round trip is one BINLOG
	// statement of several transactions' events, after the statements that
	// close the last commit and open the next.
	var drained []sample
	var trip strings.Builder
	prefix := "BEGIN"
	send := func() error {
		_, err := conn.ExecContext(ctx, prefix+";BINLOG '"+trip.String()+"'")
		trip.Reset()
		prefix = "DO 0"
		return err
	}
	for i := 0; i < len(txns); i += rowEventsBatch {
		end := min(i+rowEventsBatch, len(txns))
		for k, events := range txns[i:end] {
			if k > 0 && k%rowEventsPerStatement == 0 || trip.Len() > 256<<10 {
				if err := send(); err != nil {
					return nil, fmt.Errorf("transactions from %d: %w", i+1, err)
				}
			}
			for _, e := range events {
				trip.WriteString(e)
			}
		}
		if err := send(); err != nil {
			return nil, fmt.Errorf("transactions from %d: %w", i+1, err)
		}
		prefix = "COMMIT;BEGIN"
		drained = append(drained, at(end))
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return nil, err
	}
	return drained, nil
}

// binlogStatements splits mariadb-binlog's output into the format
// description's BINLOG statement and, per transaction, the text of its
// events in base64 (everything else it prints sets session state the row
// events do not need).
func binlogStatements(out []byte) (fde string, txns [][]string, err error) {
	var cur []string
	inTxn := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var stmt strings.Builder
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "DELIMITER") {
			stmt.Reset() // what came before ended with ';' and set session state
			continue
		}
		if strings.HasPrefix(line, "#") {
			continue
		}
		text, end := strings.CutSuffix(line, "/*!*/;")
		stmt.WriteString(text)
		stmt.WriteByte('\n')
		if !end {
			continue
		}
		s := strings.TrimSpace(stmt.String())
		stmt.Reset()
		switch {
		case s == "START TRANSACTION" || s == "BEGIN":
			inTxn, cur = true, nil
		case s == "COMMIT":
			if !inTxn {
				return "", nil, fmt.Errorf("COMMIT outside a transaction")
			}
			txns, inTxn = append(txns, cur), false
		case strings.HasPrefix(s, "BINLOG"):
			if inTxn {
				body := strings.TrimSuffix(strings.TrimPrefix(s, "BINLOG '"), "'")
				cur = append(cur, strings.TrimSpace(body)+"\n")
			} else if fde == "" {
				fde = s
			}
		}
	}
	if fde == "" {
		return "", nil, fmt.Errorf("no format description in mariadb-binlog's output")
	}
	return fde, txns, sc.Err()
}
