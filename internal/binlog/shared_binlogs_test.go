package binlog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestSharedBinlogs reads every binlog and relay log under ../shared/binlogs
// (files written by real servers, MySQL 3.23 to 9.6 and MariaDB 5.5 to 11.8;
// never copied into the project) and holds each to mariadb-binlog's reading
// of it: the same events at the same offsets with the same end_log_pos, the
// same statements, the same row values (oracle_test.go's comparison). A file
// the decoder refuses must be listed in sharedRefusals with the reason; a
// file mariadb-binlog stops reading early, in sharedOracleStops (the
// decoder must read what it read the same way, and the rest without error).

// sharedRefusals: the files binlane refuses, by path under shared/binlogs,
// with a part of the error it must give.
var sharedRefusals = map[string]struct{ err, why string }{
	"mysql/mariadb-mysql-test/master-bin.000001":                {"Start_v3 event: binlog format before v4", "MySQL 4.0: binlog format v3"},
	"mysql/mariadb-mysql-test/trunc_binlog.000001":              {"Start_v3 event: binlog format before v4", "MySQL 4.0: binlog format v3"},
	"mysql/mariadb-mysql-test/bug47142_master-bin.000001":       {"Start_v3 event: binlog format before v4", "MySQL 4.1: binlog format v3"},
	"mysql/mariadb-mysql-test/binlog_old_version_4_1.000001.gz": {"Start_v3 event: binlog format before v4", "MySQL 4.1: binlog format v3"},
	"mysql/mariadb-mysql-test/bug32407.001": {"Table_map event: table `test`.`t1`: table map without column metadata",
		"MySQL 5.1.15 beta: table maps without metadata"},
	"mysql/mariadb-mysql-test/ver_5_1-telco.001.gz": {"Table_map event: table `test`.`t1`: table map without column metadata",
		"MySQL 5.1.15 beta: table maps without metadata"},
	"mysql/mariadb-mysql-test/ver_5_1_17.001.gz": {"Table_map event: table `test`.`t1`: table map without column metadata",
		"MySQL 5.1.17 beta: table maps without metadata"},
	"mysql/rust_mysql_common/ver_5_1-wl2325_s.001.gz": {"Write_rows_old event: pre-GA rows events",
		"5.2.2 telco build: pre-GA rows events (mariadb-binlog refuses them too)"},
	"mysql/rust_mysql_common/ver_5_1-wl2325_r.001": {"Execute_load_query event: post-header of 13 bytes, need 26",
		"5.2.2 telco build: its format description gives Execute_load_query a 13-byte post-header (mariadb-binlog refuses it too)"},
	"mariadb/mariadb-mysql-test/binlog_before_20574.bin": {"Start_encryption event: the file is encrypted",
		"encrypted binlog: the key is the server's"},
	"mariadb/mariadb-mysql-test/invalid_row_v2_tag.001": {"Write_rows event: implausible column count 0",
		"malformed rows events (MDEV-39485 test data; mariadb-binlog refuses them too)"},
	"mariadb/mariadb-mysql-test/mdev-39404-binlog.000001": {"Gtid event: checksum mismatch",
		"a GTID event with a zeroed checksum (MDEV-39404 test data; mariadb-binlog refuses it too)"},
	"mysql/mariadb-mysql-test/bug11747416_32228_binlog.000001": {"runs past the end of the file",
		"cut in the middle of an event (mariadb-binlog stops there too)"},
	"mysql/rust_mysql_common/binlog_truncated_event.000001": {"truncated event header", "14 bytes: cut in the first event header"},
	"mysql/rust_mysql_common/binlog_truncated_prev_gtid_event.000001": {"truncated event header",
		"cut in the middle of an event header (mariadb-binlog stops there too)"},
	"mysql/rust_mysql_common/corrupt-relay-bin.000624.gz": {"corrupt-relay-bin.000624:91204: Query event: status variables",
		"a corrupt relay log (mariadb-binlog stops at it too)"},
	"mysql/rust_mysql_common/json.binlog.000001": {"Update_rows_partial event: table `mysql`.`t`: row image: partial JSON updates are not supported",
		"MySQL 8.0 partial JSON updates (binlog_row_value_options=PARTIAL_JSON; mariadb-binlog cannot read them either)"},
	"mysql/mariadb-mysql-test/mdev35643_mysql_80_binlog.000001": {"Update_rows_partial event: table `test`.`t2`: row image: partial JSON updates are not supported",
		"MySQL 8.0 partial JSON updates (binlog_row_value_options=PARTIAL_JSON; mariadb-binlog stops earlier, at a Transaction_payload)"},
}

// sharedOracleStops: files mariadb-binlog cannot read to the end, though
// binlane can; compared as far as mariadb-binlog read them.
var sharedOracleStops = map[string]string{
	"mysql/rust_mysql_common/binlog_transaction_with_GTID_TAG.000001": "MySQL 9.6 tagged GTID event",
	"mysql/rust_mysql_common/transaction_compression.000001":          "MySQL 8.0 Transaction_payload",
	"mysql/rust_mysql_common/bug40482-bin.000001": "an Incident event of unknown number 66 (MySQL bug 40482 test data), " +
		"which mariadb-binlog calls invalid and binlane prints",
	"mysql/rust_mysql_common/json-opaque.binlog": "MySQL JSON holding an opaque DATE",
	"mysql/rust_mysql_common/vector.binlog":      "MySQL 9.0 VECTOR columns",
}

// sharedBinlogsDir finds ../shared/binlogs next to the module root.
func sharedBinlogsDir(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no module root")
		}
		dir = parent
	}
	shared := filepath.Join(filepath.Dir(dir), "shared", "binlogs")
	if _, err := os.Stat(shared); err != nil {
		t.Skipf("no shared binlogs at %s", shared)
	}
	return shared
}

func TestSharedBinlogs(t *testing.T) {
	shared := sharedBinlogsDir(t)
	if _, err := exec.LookPath("mariadb-binlog"); err != nil {
		t.Skip("mariadb-binlog is not installed")
	}
	var files []string
	err := filepath.WalkDir(shared, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(filepath.ToSlash(path), "/binlogs/m") {
			rel, _ := filepath.Rel(shared, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("%d files: %v", len(files), err)
	}
	exact, refused, partial := 0, 0, 0
	var stats sharedStats
	for _, rel := range files {
		t.Run(rel, func(t *testing.T) {
			path := plainCopy(t, filepath.Join(shared, rel))
			got, err := readShared(path)
			if r, ok := sharedRefusals[rel]; ok {
				if err == nil || !strings.Contains(err.Error(), r.err) {
					t.Fatalf("want a refusal saying %q (%s), got %v", r.err, r.why, err)
				}
				refused++
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			want, oerr := runSharedOracle(path)
			stop, partialOK := sharedOracleStops[rel]
			switch {
			case oerr != nil && !partialOK:
				t.Fatalf("mariadb-binlog: %v", oerr)
			case oerr == nil && partialOK:
				t.Errorf("mariadb-binlog reads it all now (listed as stopping at a %s)", stop)
			}
			if !compareShared(t, got, want, oerr != nil, &stats) {
				return
			}
			if oerr != nil {
				partial++
			} else {
				exact++
			}
		})
	}
	t.Logf("%d files: %d read as mariadb-binlog reads them, %d read where mariadb-binlog stops early, %d refused; "+
		"compared %d events, %d statements, %d row images",
		len(files), exact, partial, refused, stats.events, stats.statements, stats.images)
	// Guards against a parser that compares nothing: the files hold more.
	if !t.Failed() && (exact < 70 || stats.statements < 20000 || stats.images < 5000) {
		t.Errorf("too little compared")
	}
	for rel := range sharedRefusals {
		if !containsString(files, rel) {
			t.Errorf("listed refusal %s: no such file", rel)
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// plainCopy returns the file's path, or that of its gunzipped copy in a
// temporary directory.
func plainCopy(t *testing.T, path string) string {
	if !strings.HasSuffix(path, ".gz") {
		return path
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(path), ".gz"))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(w, zr); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sharedEvent is one event as either reader saw it: its offset in the
// file, end_log_pos, the statement of a query event, and the row images
// printed with the event that ends a statement.
type sharedEvent struct {
	offset, endPos uint64
	typ            string
	query          *string
	images         []sharedImage
}

type sharedImage struct {
	cols []Column
	vals []Value
	ora  []oracleValue
}

// readShared decodes every event of a file and every row value.
func readShared(path string) ([]*sharedEvent, error) {
	fr, err := OpenFile(path)
	if err != nil {
		return nil, err
	}
	defer fr.Close()
	var out []*sharedEvent
	var pending []sharedImage // the images of the statement being read
	offset := uint64(4)
	for {
		ev, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		// Events are located in the file read (binlog dump prints that),
		// relay logs included, as mariadb-binlog does.
		if ev.File != filepath.Base(path) || ev.Pos != offset {
			return out, fmt.Errorf("event at offset %d of %s located at %s:%d", offset, filepath.Base(path), ev.File, ev.Pos)
		}
		se := &sharedEvent{offset: ev.Pos, endPos: uint64(ev.Header.LogPos), typ: ev.Header.Type.String()}
		offset += uint64(ev.Header.EventSize)
		switch d := ev.Data.(type) {
		case *QueryEvent:
			q := string(d.Query)
			if l := d.Load; l != nil {
				// mariadb-binlog rewrites the clause: " INFILE 'name'
				// [IGNORE|REPLACE] INTO".
				q = q[:l.FileStart] + " INFILE <file>" + [...]string{"", " IGNORE", " REPLACE"}[l.DupHandling%3] + " INTO" + q[l.FileEnd:]
			}
			se.query = &q
		case *RowsEvent:
			vals, err := d.AppendRows(nil)
			if err != nil {
				// binlog dump prints the error in place of the rows
				// and goes on; here it is what the file is refused for.
				return out, &DecodeError{File: ev.File, Pos: ev.Pos, Type: ev.Header.Type, Err: err}
			}
			if d.Table != nil {
				for i := 0; i+d.Columns <= len(vals); i += d.Columns {
					pending = append(pending, sharedImage{cols: d.Table.Columns, vals: vals[i : i+d.Columns]})
				}
			}
			if d.Flags&RowsFlagStmtEnd != 0 {
				se.images, pending = pending, nil
			}
		}
		out = append(out, se)
	}
}

var (
	sharedHeader = regexp.MustCompile(`^#\d{6} [ \d]\d:\d\d:\d\d server id \d+  end_log_pos (\d+) (?:CRC32 0x[0-9a-f]+ )?\t?(.*)$`)
	// mariadb-binlog writes a LOAD DATA's file to a file of its own and
	// prints that one's name.
	sharedLoadFile = regexp.MustCompile(`LOCAL INFILE '[^']*'`)
)

// runSharedOracle parses mariadb-binlog's reading of a file; the error
// says where it stopped, when it did.
func runSharedOracle(path string) ([]*sharedEvent, error) {
	cmd := exec.Command("mariadb-binlog", "--no-defaults", "--base64-output=decode-rows", "-vv", path)
	cmd.Dir = os.TempDir() // where it writes LOAD DATA files
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	events, err := parseSharedOracle(&stdout)
	if err != nil {
		return nil, err
	}
	if runErr != nil || strings.Contains(stderr.String(), "ERROR:") {
		return events, fmt.Errorf("%v: %s", runErr, strings.TrimSpace(stderr.String()))
	}
	return events, nil
}

func parseSharedOracle(r io.Reader) ([]*sharedEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	var events []*sharedEvent
	// With decode-rows, mariadb-binlog holds table maps and rows events
	// back until a statement's last one: their "# at" lines come first,
	// then their headers, in order. cur is the event whose header came
	// last: a statement or row images that follow are its.
	var cur *sharedEvent
	headed := 0       // events that got their header
	var stmt []string // lines of the statement being printed
	inQuery := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# at "):
			off, err := strconv.ParseUint(line[5:], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("oracle: %q", line)
			}
			events = append(events, &sharedEvent{offset: off})
			inQuery = false
		case headed < len(events) && sharedHeader.MatchString(line):
			m := sharedHeader.FindStringSubmatch(line)
			cur = events[headed]
			headed++
			cur.endPos, _ = strconv.ParseUint(m[1], 10, 64)
			cur.typ = m[2]
			if cur.typ == "" {
				cur.typ = "?"
			}
			inQuery = strings.HasPrefix(cur.typ, "Query") || strings.HasPrefix(cur.typ, "Execute_load_query")
			stmt = stmt[:0]
		case inQuery && line == "/*!*/;":
			q := strings.Join(stmt, "\n")
			if strings.HasPrefix(cur.typ, "Execute_load_query") {
				q = sharedLoadFile.ReplaceAllString(q, "INFILE <file>")
			}
			cur.query, inQuery = &q, false
		case inQuery && strings.HasSuffix(line, "/*!*/;"):
			stmt = stmt[:0] // a SET or use line before the statement
		case inQuery:
			stmt = append(stmt, line)
		case cur != nil && (line == "### SET" || line == "### WHERE"):
			// A statement's rows follow the header of its last event.
			cur.images = append(cur.images, sharedImage{})
		case strings.HasPrefix(line, "###   @"):
			v, err := parseOracleValue([]byte(line))
			if err != nil || cur == nil || len(cur.images) == 0 {
				return nil, fmt.Errorf("oracle: value outside an image: %v", err)
			}
			img := &cur.images[len(cur.images)-1]
			img.ora = append(img.ora, v)
		}
	}
	return events, sc.Err()
}

// compareShared holds the decoder's reading to mariadb-binlog's, as far as
// mariadb-binlog read.
type sharedStats struct{ events, statements, images int }

func compareShared(t *testing.T, got, want []*sharedEvent, stopped bool, stats *sharedStats) bool {
	// The event mariadb-binlog stopped at has its "# at" line, not its
	// header.
	for stopped && len(want) > 0 && want[len(want)-1].typ == "" {
		want = want[:len(want)-1]
	}
	if len(got) <= len(want) && stopped || len(got) != len(want) && !stopped {
		t.Errorf("%d events, mariadb-binlog reads %d", len(got), len(want))
	}
	for i := 0; i < len(want) && i < len(got) && !t.Failed(); i++ {
		g, w := got[i], want[i]
		where := fmt.Sprintf("event %d (%s at %d)", i, g.typ, g.offset)
		switch {
		case g.offset != w.offset || g.endPos != w.endPos:
			t.Errorf("%s: offset %d end_log_pos %d, mariadb-binlog %d and %d (%s)", where, g.offset, g.endPos, w.offset, w.endPos, w.typ)
		case (g.query == nil) != (w.query == nil):
			t.Errorf("%s: statement %v, mariadb-binlog's %q has one: %v", where, g.query != nil, w.typ, w.query != nil)
		case g.query != nil && *g.query != *w.query:
			t.Errorf("%s: statement\n%.500q\nmariadb-binlog\n%.500q", where, *g.query, *w.query)
		case len(g.images) != len(w.images):
			t.Errorf("%s: %d row images, mariadb-binlog %d", where, len(g.images), len(w.images))
		default:
			stats.events++
			if g.query != nil {
				stats.statements++
			}
			stats.images += len(g.images)
			for j := range g.images {
				compareImage(t, fmt.Sprintf("%s image %d", where, j), g.images[j], w.images[j].ora)
			}
		}
	}
	return !t.Failed()
}

func compareImage(t *testing.T, where string, g sharedImage, ora []oracleValue) {
	printed := make([]bool, len(g.cols))
	for _, ov := range ora {
		j := ov.idx - 1
		if j < 0 || j >= len(g.cols) {
			t.Errorf("%s: mariadb-binlog column @%d of %d", where, ov.idx, len(g.cols))
			continue
		}
		printed[j] = true
		if err := oracleMatch(&g.vals[j], &g.cols[j], ov); err != nil {
			t.Errorf("%s column %d (%s): %v", where, j+1, ov.typ, err)
		}
	}
	for j, ok := range printed {
		if !ok && g.vals[j].Kind != KindAbsent {
			t.Errorf("%s column %d: mariadb-binlog prints no value, decoder %s", where, j+1, g.vals[j].Kind)
		}
	}
}
