package replicate

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestCopyChunkBytesBounded copies one table whose rows are ~100 bytes
// and, in two runs of 30 rows each, 1 MiB: the sizer, having learned the
// narrow rows, asks for thousands of rows when the next ones are wide, and
// the read must end the chunk at the row that reaches MaxChunkBytes (the
// bound the README gives: a chunk holds at most that many bytes of rows,
// plus the row that reached it). Every chunk is measured as it is read
// (AfterRead, the same count the reader keeps: each value's bytes plus 24),
// at least one chunk must have been ended by the bound (else the test did
// not exercise it), and the copy ends equal, row by row.
func TestCopyChunkBytesBounded(t *testing.T) {
	e := newEnv(t)
	e.grant(t, "big")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.src.ExecT(t, "CREATE DATABASE big", "CREATE TABLE big.t (id INT PRIMARY KEY, b LONGBLOB NOT NULL)",
		"INSERT INTO big.t SELECT seq, REPEAT('s', 100) FROM big.seq_1_to_3000",
		"INSERT INTO big.t SELECT seq, REPEAT('W', 1048576) FROM big.seq_3001_to_3030",
		"INSERT INTO big.t SELECT seq, REPEAT('s', 100) FROM big.seq_3031_to_6000",
		"INSERT INTO big.t SELECT seq, REPEAT('W', 1048576) FROM big.seq_6001_to_6030")

	const maxBytes = 4 << 20
	var (
		mu              sync.Mutex
		chunks, reached int
		rows            int
		over            []int // bytes before the last row of chunks that went past the bound
	)
	cfg := e.copyConfig(t)
	cfg.Rules = mustRules(t, "big")
	cfg.Copy.MaxChunkBytes = maxBytes
	cfg.Copy.ExitWhenDone = true
	cfg.Copy.AfterRead = func(ctx context.Context, schema, table string, got [][][]byte) error {
		if len(got) == 0 {
			return nil
		}
		size, last := 0, 0
		for _, row := range got {
			last = 0
			for _, v := range row {
				last += len(v) + 24
			}
			size += last
		}
		mu.Lock()
		defer mu.Unlock()
		chunks++
		rows += len(got)
		if size-last >= maxBytes {
			over = append(over, size-last)
		}
		if size >= maxBytes {
			reached++
		}
		return nil
	}
	if err := Run(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	t.Logf("%d chunks, %d rows, %d ended by the byte bound", chunks, rows, reached)
	if len(over) > 0 {
		t.Errorf("%d chunks held %v bytes before their last row: more than MaxChunkBytes (%d)", len(over), over, maxBytes)
	}
	if reached == 0 {
		t.Errorf("no chunk reached %d bytes: the test did not exercise the bound", maxBytes)
	}
	if rows != 6030 {
		t.Errorf("the chunks read %d rows, want 6030", rows)
	}
	mu.Unlock()
	verifyServers(t, e.src, e.dst, "big")
}
