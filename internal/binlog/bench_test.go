package binlog

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// sysbenchFixture is a binlog file written by a sandbox source during
// `sysbench oltp_write_only run` (not the prepare), gzipped. Regenerate
// with: BINLANE_CAPTURE_SYSBENCH=1 go test -run TestCaptureSysbench ./internal/binlog
const sysbenchFixture = "testdata/sysbench-oltp-write-only.binlog.gz"

func TestCaptureSysbench(t *testing.T) {
	if os.Getenv("BINLANE_CAPTURE_SYSBENCH") == "" {
		t.Skip("set BINLANE_CAPTURE_SYSBENCH=1 to regenerate " + sysbenchFixture)
	}
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source})
	srv.ExecT(t, "CREATE DATABASE sbtest")
	sysbench := func(cmd string, extra ...string) {
		args := append([]string{"oltp_write_only", "--db-driver=mysql", "--mysql-host=127.0.0.1",
			"--mysql-port=" + strconv.Itoa(srv.Port), "--mysql-user=root", "--mysql-db=sbtest",
			"--tables=4", "--table-size=10000"}, extra...)
		out, err := exec.Command("sysbench", append(args, cmd)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sysbench %s: %v\n%s", cmd, err, out)
		}
	}
	sysbench("prepare")
	// The run goes to a file of its own.
	srv.ExecT(t, "FLUSH BINARY LOGS")
	var file string
	rows, err := srv.OpenT(t, "").Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var size int64
		if err := rows.Scan(&file, &size); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	events := os.Getenv("BINLANE_CAPTURE_EVENTS")
	if events == "" {
		events = "10000"
	}
	sysbench("run", "--threads=8", "--events="+events, "--time=0")
	srv.ExecT(t, "FLUSH BINARY LOGS")
	raw, err := os.ReadFile(filepath.Join(srv.Dir, "data", file))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(raw)
	zw.Close()
	if err := os.WriteFile(sysbenchFixture, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d bytes, %d gzipped", file, len(raw), buf.Len())
}

// loadSysbench returns the fixture's bytes and its events.
func loadSysbench(tb testing.TB) ([]byte, [][]byte) {
	f, err := os.Open(sysbenchFixture)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(zr); err != nil {
		tb.Fatal(err)
	}
	data := buf.Bytes()
	if !bytes.HasPrefix(data, FileMagic) {
		tb.Fatal("fixture is not a binlog file")
	}
	var events [][]byte
	for rest := data[4:]; len(rest) > 0; {
		size := int(binary.LittleEndian.Uint32(rest[9:]))
		events = append(events, rest[:size:size])
		rest = rest[size:]
	}
	return data, events
}

// decodeStream decodes every event and every row image, reusing dst.
func decodeStream(d *Decoder, events [][]byte, dst []Value) ([]Value, int, error) {
	images := 0
	for _, raw := range events {
		ev, err := d.Decode(raw)
		if err != nil {
			return dst, images, err
		}
		if rows, ok := ev.Data.(*RowsEvent); ok {
			if dst, err = rows.AppendRows(dst[:0]); err != nil {
				return dst, images, err
			}
			if rows.Columns > 0 {
				images += len(dst) / rows.Columns
			}
		}
	}
	return dst, images, nil
}

func TestSysbenchFixtureDecodes(t *testing.T) {
	_, events := loadSysbench(t)
	d := NewDecoder()
	d.SetPosition("sysbench.binlog", 4)
	_, images, err := decodeStream(d, events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if images < 10000 {
		t.Fatalf("only %d row images", images)
	}
	t.Logf("%d events, %d row images", len(events), images)
}

// BenchmarkDecodeSysbench decodes every event of the sysbench fixture and
// every row image (AppendRows into a reused slice), with CRC32 checks.
func BenchmarkDecodeSysbench(b *testing.B) {
	data, events := loadSysbench(b)
	var dst []Value
	var images int
	var ms0, ms1 runtime.MemStats
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	runtime.ReadMemStats(&ms0)
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := NewDecoder()
		d.SetPosition("sysbench.binlog", 4)
		var n int
		var err error
		if dst, n, err = decodeStream(d, events, dst); err != nil {
			b.Fatal(err)
		}
		images += n
	}
	b.StopTimer()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&ms1)
	b.ReportMetric(float64(images)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(images), "allocs/row")
}

// BenchmarkFileReaderSysbench is BenchmarkDecodeSysbench through
// OpenFile/Next, file reads included.
func BenchmarkFileReaderSysbench(b *testing.B) {
	data, _ := loadSysbench(b)
	path := filepath.Join(b.TempDir(), "sysbench.binlog")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	var dst []Value
	images := 0
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fr, err := OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		for {
			ev, err := fr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			if rows, ok := ev.Data.(*RowsEvent); ok {
				if dst, err = rows.AppendRows(dst[:0]); err != nil {
					b.Fatal(err)
				}
				images += len(dst) / rows.Columns
			}
		}
		fr.Close()
	}
	b.ReportMetric(float64(images)/time.Since(start).Seconds(), "rows/s")
}

// BenchmarkAppendRowsSysbench times row-image decoding alone: the events
// are decoded once, outside the timer.
func BenchmarkAppendRowsSysbench(b *testing.B) {
	_, events := loadSysbench(b)
	d := NewDecoder()
	var rows []*RowsEvent
	for _, raw := range events {
		ev, err := d.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		if r, ok := ev.Data.(*RowsEvent); ok {
			rows = append(rows, r)
		}
	}
	var dst []Value
	images := 0
	b.ReportAllocs()
	start := time.Now()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, r := range rows {
			var err error
			if dst, err = r.AppendRows(dst[:0]); err != nil {
				b.Fatal(err)
			}
			images += len(dst) / r.Columns
		}
	}
	b.ReportMetric(float64(images)/time.Since(start).Seconds(), "rows/s")
}
