package apply

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/binlane/binlane/internal/dsn"
	"github.com/binlane/binlane/internal/sandbox"
)

// BenchmarkChunkShapes measures what a copied chunk costs the target in
// each shape it could be sent in: 5,000 sysbench rows into a growing,
// durable table (binlog on), one transaction per chunk, as the copy does.
// The shapes: multi-row INSERTs as binlane rendered them (charset
// introducers, a per-statement sql_mode), the same without either, and
// LOAD DATA LOCAL INFILE streamed from memory. The target is CPU-bound in
// a copy, so the metric that matters is target-CPU-µs/row (read from
// /proc), not ns/op on a shared machine.
//
//	go test -run '^$' -bench ChunkShapes -benchtime 100x ./internal/apply
func BenchmarkChunkShapes(b *testing.B) {
	s := sandbox.StartT(b, sandbox.Options{Role: sandbox.Target, Durable: true, Extra: []string{"innodb-buffer-pool-size=1G"}})
	ctx := context.Background()
	target, _ := dsn.Parse(s.URL())
	pool, err := OpenPool(target, 2, dsn.ApplySession(true, 50))
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const rows = 5000
	c := strings.Repeat("83868641912-28773972837-60736120486-75162659906-", 3)[:119]
	pad := strings.Repeat("67847967377-", 5)[:59]
	var next atomic.Int64
	shapes := []struct {
		name   string
		render func(id0 int) (string, []byte)
	}{
		{"insert-introducers-setstatement", func(id0 int) (string, []byte) {
			return insertChunk(id0, rows, c, pad, "_utf8mb4", "SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION' FOR "), nil
		}},
		{"insert-plain", func(id0 int) (string, []byte) { return insertChunk(id0, rows, c, pad, "", ""), nil }},
		{"load-data-local", func(id0 int) (string, []byte) {
			var buf bytes.Buffer
			for i := range rows {
				fmt.Fprintf(&buf, "%d\t%d\t%s\t%s\n", id0+i, (id0+i)*7919%250000, c, pad)
			}
			return "LOAD DATA LOCAL INFILE 'Reader::chunkshapes' INTO TABLE d.%s CHARACTER SET binary (id,k,c,pad)", buf.Bytes()
		}},
	}
	for i, sh := range shapes {
		table := fmt.Sprintf("t%d", i)
		if _, err := conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS d"); err != nil {
			b.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "CREATE TABLE d."+table+` (id INT PRIMARY KEY, k INT NOT NULL DEFAULT 0,
			c CHAR(120) NOT NULL DEFAULT '', pad CHAR(60) NOT NULL DEFAULT '', KEY k_1(k))`); err != nil {
			b.Fatal(err)
		}
		b.Run(sh.name, func(b *testing.B) {
			cpu0 := procCPU(b, s.PID())
			for b.Loop() {
				q, file := sh.render(int(next.Add(rows)))
				if file != nil {
					q = fmt.Sprintf(q, table)
				} else {
					q = strings.ReplaceAll(q, "d.t ", "d."+table+" ")
				}
				files := map[string][]byte{"Reader::chunkshapes": file}
				if err := runWithFiles(ctx, conn, "START TRANSACTION;"+q+";COMMIT", files); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(procCPU(b, s.PID())-cpu0)*1e6/100/float64(b.N*rows), "target-CPU-µs/row")
		})
	}
}

// insertChunk renders rows sysbench rows from id0 as INSERTs of up to
// 1 MiB, each string with the given introducer and each statement with
// the given prefix.
func insertChunk(id0, rows int, c, pad, introducer, prefix string) string {
	var q strings.Builder
	start := 0
	for i := range rows {
		if i == 0 || q.Len()-start > 1<<20 {
			if i > 0 {
				q.WriteString(";")
			}
			start = q.Len()
			q.WriteString(prefix + "INSERT INTO d.t (id,k,c,pad) VALUES ")
		} else {
			q.WriteByte(',')
		}
		fmt.Fprintf(&q, "(%d,%d,%s'%s',%s'%s')", id0+i, (id0+i)*7919%250000, introducer, c, introducer, pad)
	}
	return q.String()
}

// txnCPU runs txn between START TRANSACTION and COMMIT on conn as the
// sub-benchmark name, and reports the CPU of the server s (pid) per row,
// rows being what one txn writes.
func txnCPU(b *testing.B, pid int, conn *sql.Conn, name string, rows int, txn func()) {
	exec := func(q string) {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			b.Fatal(err)
		}
	}
	b.Run(name, func(b *testing.B) {
		before := procCPU(b, pid)
		for b.Loop() {
			exec("START TRANSACTION")
			txn()
			exec("COMMIT")
		}
		ticks := procCPU(b, pid) - before // 10 ms each
		b.ReportMetric(float64(ticks*10000)/float64(b.N*rows), "target-µs/row")
	})
}

// procCPU is a process's user+system CPU time in clock ticks (1/100 s).
func procCPU(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}
