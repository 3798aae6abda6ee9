package binlog

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/sandbox"
)

// Golden tests: a real MariaDB source runs the golden workload, then every
// row image the decoder reads from the server's binlog files is compared
// with what SELECT returned right before and after the statement that wrote
// it, and with mariadb-binlog's own decoding (oracle_test.go).

func TestGoldenCRC32(t *testing.T) {
	g := runGolden(t, nil)
	g.checkOracle(t)
	g.checkCorruption(t)
	g.captureSeeds(t, "golden-crc32.binlog")
}

func TestGoldenChecksumNone(t *testing.T) {
	g := runGolden(t, []string{"binlog-checksum=NONE"})
	g.checkOracle(t)
	g.captureSeeds(t, "golden-checksum-none.binlog")
	if g.fde.Checksum != ChecksumOff {
		t.Fatalf("format description says checksum %d, want off", g.fde.Checksum)
	}
}

func TestGoldenCompressed(t *testing.T) {
	g := runGolden(t, []string{"log-bin-compress=ON", "log-bin-compress-min-len=10"})
	g.checkOracle(t)
	g.captureSeeds(t, "golden-compressed.binlog")
	for _, typ := range []EventType{EventQueryCompressed, EventWriteRowsCompressedV1, EventUpdateRowsCompressedV1, EventDeleteRowsCompressedV1} {
		if g.typeCount[typ] == 0 {
			t.Errorf("no %s events: compression was not exercised", typ)
		}
	}
}

// colInfo is one column as information_schema describes it.
type colInfo struct {
	name, dataType, columnType string
	collation                  int // 0 when information_schema has none
}

// tableSnap is a table's content normalized to text, keyed by primary key
// (or by the whole row, counted, for a table without one).
type tableSnap struct {
	cols []colInfo
	pk   []int
	rows map[string][]string // key -> row values
	bag  map[string]int      // row text -> count, tables without a PK
}

// stepCheck records what a step must have written.
type stepCheck struct {
	name          string
	fromSeq, seq  uint64 // GTID seq_no range (fromSeq, seq]
	before, after map[string]*tableSnap
	affected      int64
	rolledBack    int // rows affected by statements rolled back to a savepoint
}

type golden struct {
	srv       *sandbox.Server
	dir       string
	files     []string
	checks    []stepCheck
	groups    map[uint64]*decodedGroup
	typeCount map[EventType]int
	fde       *FormatDescriptionEvent
	allRows   []*decodedRows
	rowsByEnd map[string]*decodedRows // statements by "file:end_log_pos" of their last event
	stmt      *decodedRows            // the statement being collected
	absent    int                     // values missing from MINIMAL/NOBLOB images
}

func runGolden(t *testing.T, extra []string) *golden {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Source, Extra: extra})
	g := &golden{srv: srv, dir: filepath.Join(srv.Dir, "data")}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	conn, err := srv.OpenT(t, "").Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(q string) sql.Result {
		res, err := conn.ExecContext(ctx, q)
		if err != nil {
			t.Fatalf("%.200s: %v", q, err)
		}
		return res
	}
	g.checks = runWorkload(ctx, t, conn, exec)
	// Close the current file so every event is on disk with its final flags.
	exec("FLUSH BINARY LOGS")
	g.decodeFiles(t)
	g.checkSteps(t)
	g.checkGroups(t)
	if g.absent == 0 {
		t.Error("no absent column: the MINIMAL and NOBLOB steps did not take effect")
	}
	return g
}

// runWorkload runs the golden steps, each between two snapshots of the
// tables it touches.
func runWorkload(ctx context.Context, t *testing.T, conn *sql.Conn, exec func(string) sql.Result) []stepCheck {
	setup := []string{"SET SESSION sql_mode = ''", "SET SESSION time_zone = '+00:00'", "CREATE DATABASE g", "USE g"}
	for _, q := range append(setup, goldenTables...) {
		exec(q)
	}
	var checks []stepCheck
	snaps := map[string]*tableSnap{}
	for _, st := range goldenSteps() {
		c := stepCheck{name: st.sql[0], rolledBack: st.rolledBack, fromSeq: gtidSeq(ctx, t, conn),
			before: map[string]*tableSnap{}, after: map[string]*tableSnap{}}
		for _, tbl := range st.tables {
			if snaps[tbl] == nil {
				snaps[tbl] = snapshot(ctx, t, conn, tbl)
			}
			c.before[tbl] = snaps[tbl]
		}
		for _, q := range st.sql {
			if n, err := exec(q).RowsAffected(); err == nil {
				c.affected += n
			}
		}
		c.seq = gtidSeq(ctx, t, conn)
		for _, tbl := range st.tables {
			snaps[tbl] = snapshot(ctx, t, conn, tbl)
			c.after[tbl] = snaps[tbl]
		}
		checks = append(checks, c)
	}
	return checks
}

func gtidSeq(ctx context.Context, t *testing.T, conn *sql.Conn) uint64 {
	var pos string
	if err := conn.QueryRowContext(ctx, "SELECT @@gtid_binlog_pos").Scan(&pos); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(pos, "-")
	seq, err := strconv.ParseUint(parts[len(parts)-1], 10, 64)
	if err != nil {
		t.Fatalf("gtid_binlog_pos %q: %v", pos, err)
	}
	return seq
}

// selectExpr is the SELECT expression whose text normalizeValue reproduces.
func selectExpr(c colInfo) string {
	q := "`" + c.name + "`"
	switch c.dataType {
	case "float":
		return "CAST(" + q + " AS DOUBLE)"
	case "date", "datetime", "timestamp", "time", "year":
		return "CAST(" + q + " AS CHAR)"
	case "enum", "set":
		return "CONCAT(" + q + "+0, ':', " + q + ")"
	case "bit":
		return q + "+0"
	case "longblob":
		return "SHA2(" + q + ", 256)"
	case "char", "varchar", "binary", "varbinary", "tinyblob", "blob", "mediumblob", "tinytext", "text", "mediumtext",
		"longtext", "geometry", "point", "inet6", "uuid":
		return "HEX(" + q + ")"
	}
	return q
}

func snapshot(ctx context.Context, t *testing.T, conn *sql.Conn, table string) *tableSnap {
	s := &tableSnap{rows: map[string][]string{}, bag: map[string]int{}}
	rows, err := conn.QueryContext(ctx, `SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLUMN_KEY, COALESCE(l.ID, 0)
		FROM information_schema.COLUMNS c LEFT JOIN information_schema.COLLATIONS l ON l.COLLATION_NAME = c.COLLATION_NAME
		WHERE TABLE_SCHEMA = 'g' AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, table)
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for rows.Next() {
		var c colInfo
		var key string
		if err := rows.Scan(&c.name, &c.dataType, &c.columnType, &key, &c.collation); err != nil {
			t.Fatal(err)
		}
		if key == "PRI" {
			s.pk = append(s.pk, len(s.cols))
		}
		s.cols = append(s.cols, c)
		exprs = append(exprs, selectExpr(c))
	}
	rows.Close()
	rows, err = conn.QueryContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM g."+table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	raw := make([]sql.RawBytes, len(exprs))
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		vals := make([]string, len(raw))
		for i, b := range raw {
			vals[i] = normalizeSelected(s.cols[i], b)
		}
		s.add(vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}

func normalizeSelected(c colInfo, b sql.RawBytes) string {
	if b == nil {
		return "NULL"
	}
	if c.dataType == "float" || c.dataType == "double" {
		f, err := strconv.ParseFloat(string(b), 64)
		if err != nil {
			return "bad float " + string(b)
		}
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if c.dataType == "set" {
		// MariaDB shows SET+0 as a signed BIGINT.
		num, names, _ := strings.Cut(string(b), ":")
		n, _ := strconv.ParseInt(num, 10, 64)
		return fmt.Sprintf("%d:%s", uint64(n), names)
	}
	return string(b)
}

// absent marks a column missing from a MINIMAL or NOBLOB image.
const absent = "\x00absent"

func (s *tableSnap) key(vals []string) string {
	if len(s.pk) == 0 {
		return strings.Join(vals, "|")
	}
	var parts []string
	for _, i := range s.pk {
		parts = append(parts, vals[i])
	}
	return strings.Join(parts, "|")
}

func (s *tableSnap) add(vals []string) {
	if len(s.pk) == 0 {
		s.bag[strings.Join(vals, "|")]++
		return
	}
	s.rows[s.key(vals)] = vals
}

// has reports whether the snapshot holds this row under key; absent
// columns match anything. Tables without a primary key need full images.
func (s *tableSnap) has(key string, vals []string) bool {
	if len(s.pk) == 0 {
		return s.bag[strings.Join(vals, "|")] > 0
	}
	row, ok := s.rows[key]
	if !ok {
		return false
	}
	for i, v := range vals {
		if v != absent && v != row[i] {
			return false
		}
	}
	return true
}

// normalizeValue renders a decoded value like selectExpr's column.
func normalizeValue(c colInfo, col *Column, v *Value) string {
	switch v.Kind {
	case KindNull:
		return "NULL"
	case KindAbsent:
		return absent
	}
	switch c.dataType {
	case "float", "double":
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case "enum":
		name := ""
		if v.N > 0 && int(v.N) <= len(col.EnumValues) {
			name = string(col.EnumValues[v.N-1])
		}
		return fmt.Sprintf("%d:%s", v.N, name)
	case "set":
		var names []string
		for i, n := range col.SetValues {
			if uint64(v.N)&(1<<i) != 0 {
				names = append(names, string(n))
			}
		}
		return fmt.Sprintf("%d:%s", uint64(v.N), strings.Join(names, ","))
	case "longblob":
		sum := sha256.Sum256(v.B)
		return hex.EncodeToString(sum[:])
	case "char", "varchar", "binary", "varbinary", "tinyblob", "blob", "mediumblob", "tinytext", "text", "mediumtext",
		"longtext", "geometry", "point", "inet6", "uuid":
		return strings.ToUpper(hex.EncodeToString(v.B))
	}
	return v.String()
}

// decodedRows is one rows event's decoded images.
type decodedRows struct {
	ev     *Event
	rows   *RowsEvent
	values []Value
}

// decodedGroup is everything between one GTID event and the next.
type decodedGroup struct {
	gtid    *MariaGTIDEvent
	rows    []*decodedRows
	queries []*QueryEvent
	xaPrep  *XAPrepareEvent
	xid     bool
}

func (g *golden) decodeFiles(t *testing.T) {
	g.groups = map[uint64]*decodedGroup{}
	g.typeCount = map[EventType]int{}
	g.rowsByEnd = map[string]*decodedRows{}
	matches, _ := filepath.Glob(filepath.Join(g.dir, "binlog.0*"))
	g.files = matches
	var cur *decodedGroup
	for _, path := range matches {
		fr, err := OpenFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for {
			ev, err := fr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			g.typeCount[ev.Header.Type]++
			cur = g.collect(t, path, ev, cur)
		}
		fr.Close()
	}
}

func (g *golden) collect(t *testing.T, path string, ev *Event, cur *decodedGroup) *decodedGroup {
	switch d := ev.Data.(type) {
	case *FormatDescriptionEvent:
		g.fde = d
	case *MariaGTIDEvent:
		cur = &decodedGroup{gtid: d}
		g.groups[d.GTID.Seq] = cur
	case *RowsEvent:
		vals, err := d.AppendRows(nil)
		if err != nil {
			t.Fatalf("%s at %d: %v", path, ev.Pos, err)
		}
		dr := &decodedRows{ev: ev, rows: d, values: vals}
		for i := range vals {
			if vals[i].Kind == KindAbsent {
				g.absent++
			}
		}
		g.allRows = append(g.allRows, dr)
		if cur != nil {
			cur.rows = append(cur.rows, dr)
		}
		// mariadb-binlog prints a statement's rows after its last event.
		if g.stmt == nil {
			g.stmt = &decodedRows{ev: ev, rows: d}
		}
		g.stmt.values = append(g.stmt.values, vals...)
		if d.Flags&RowsFlagStmtEnd != 0 {
			g.rowsByEnd[fmt.Sprintf("%s:%d", filepath.Base(path), ev.Header.LogPos)] = g.stmt
			g.stmt = nil
		}
	case *QueryEvent:
		if cur != nil {
			cur.queries = append(cur.queries, d)
		}
	case *XAPrepareEvent:
		cur.xaPrep = d
	case *XIDEvent:
		cur.xid = true
	}
	return cur
}

// checkSteps compares every row image of every step with the snapshots.
func (g *golden) checkSteps(t *testing.T) {
	for _, c := range g.checks {
		images := 0
		for seq := c.fromSeq + 1; seq <= c.seq; seq++ {
			grp := g.groups[seq]
			if grp == nil {
				t.Errorf("step %.60q: no GTID group %d in the binlog", c.name, seq)
				continue
			}
			for _, dr := range grp.rows {
				images += g.checkRows(t, c, dr)
			}
		}
		if images != int(c.affected)-c.rolledBack {
			t.Errorf("step %.60q: %d row images, statement affected %d rows", c.name, images, c.affected)
		}
	}
}

// checkRows checks one rows event and returns its row count.
func (g *golden) checkRows(t *testing.T, c stepCheck, dr *decodedRows) int {
	tm := dr.rows.Table
	before, after := c.before[tm.Table], c.after[tm.Table]
	if before == nil {
		t.Errorf("step %.60q: rows for unexpected table %s", c.name, tm.Table)
		return 0
	}
	if len(after.cols) != len(tm.Columns) {
		t.Errorf("table %s: map has %d columns, information_schema %d", tm.Table, len(tm.Columns), len(after.cols))
		return 0
	}
	checkColumns(t, tm, after.cols, after.pk)
	n := len(tm.Columns)
	per := dr.rows.ImagesPerRow()
	for r := 0; r+n*per <= len(dr.values); r += n * per {
		img := func(k int) []string {
			vals := make([]string, n)
			for i := range vals {
				vals[i] = normalizeValue(after.cols[i], &tm.Columns[i], &dr.values[r+k*n+i])
			}
			return vals
		}
		check := func(s *tableSnap, key string, vals []string, which string) {
			if !s.has(key, vals) {
				t.Errorf("step %.60q %s %s image not in the %s snapshot:\n got  %.600q\n want %.600q",
					c.name, tm.Table, dr.rows.Kind, which, vals, s.rows[key])
			}
		}
		bi := img(0)
		switch dr.rows.Kind {
		case RowsInsert:
			check(after, after.key(bi), bi, "after")
		case RowsDelete:
			check(before, before.key(bi), bi, "before")
		case RowsUpdate:
			check(before, before.key(bi), bi, "before")
			ai, key := img(1), after.key(img(1))
			if strings.Contains(key, absent) {
				key = before.key(bi) // MINIMAL: the key is in the before image only
			}
			check(after, key, ai, "after")
		}
	}
	return len(dr.values) / (n * per)
}

// checkColumns compares the table map's optional metadata (names,
// signedness, collations) with information_schema.
func checkColumns(t *testing.T, tm *TableMap, cols []colInfo, pk []int) {
	if fmt.Sprint(tm.PrimaryKey) != fmt.Sprint(pk) && !(len(pk) == 0 && tm.PrimaryKey == nil) {
		t.Errorf("table %s: primary key %v, want %v", tm.Table, tm.PrimaryKey, pk)
	}
	for i, ci := range cols {
		c := &tm.Columns[i]
		if !tm.HasNames || c.Name != ci.name {
			t.Errorf("table %s column %d: name %q, want %q", tm.Table, i, c.Name, ci.name)
		}
		if c.IsNumeric() {
			if unsigned := strings.Contains(ci.columnType, "unsigned"); unsigned != c.Unsigned {
				t.Errorf("table %s column %s: unsigned=%v, want %v", tm.Table, ci.name, c.Unsigned, unsigned)
			}
		}
		want := ci.collation
		if want == 0 && (c.IsCharacter(FlavorMariaDB) || c.Type == TypeEnum || c.Type == TypeSet) {
			want = collationBinary
		}
		if int(c.Collation) != want {
			t.Errorf("table %s column %s (%s): collation %d, want %d", tm.Table, ci.name, ci.dataType, c.Collation, want)
		}
	}
}

// checkGroups checks GTID flags of the XA and DDL groups.
func (g *golden) checkGroups(t *testing.T) {
	var prepared, completed, ddl int
	for _, grp := range g.groups {
		f := grp.gtid.Flags2
		switch {
		case f&MariaFlPreparedXA != 0:
			prepared++
			if grp.gtid.XID == nil || grp.xaPrep == nil || string(grp.gtid.XID.GTRID) != string(grp.xaPrep.XID.GTRID) {
				t.Errorf("XA PREPARE group %v: xid %v, prepare event %+v", grp.gtid.GTID, grp.gtid.XID, grp.xaPrep)
			}
		case f&MariaFlCompletedXA != 0:
			completed++
			if grp.gtid.XID == nil || len(grp.queries) != 1 || grp.queries[0].Kind() != QueryXA {
				t.Errorf("XA COMMIT group %v: xid %v, %d queries", grp.gtid.GTID, grp.gtid.XID, len(grp.queries))
			}
		case f&MariaFlDDL != 0:
			ddl++
			if !grp.gtid.Standalone() || len(grp.queries) != 1 || grp.queries[0].Kind() != QueryOther {
				t.Errorf("DDL group %v: standalone=%v, %d queries", grp.gtid.GTID, grp.gtid.Standalone(), len(grp.queries))
			}
		}
		for _, q := range grp.queries {
			if want := expectedKind(string(q.Query)); q.Kind() != want {
				t.Errorf("query %.60q: kind %d, want %d", q.Query, q.Kind(), want)
			}
		}
	}
	// The DDL is logged verbatim: compressed query events must inflate to
	// exactly the statement text.
	seen := map[string]bool{}
	for _, grp := range g.groups {
		for _, q := range grp.queries {
			seen[string(q.Query)] = true
		}
	}
	for _, ddl := range goldenTables {
		if !seen[ddl] {
			t.Errorf("DDL not found verbatim among decoded queries: %.80q", ddl)
		}
	}
	if prepared != 2 || completed != 2 || ddl < len(goldenTables) {
		t.Errorf("groups: %d XA PREPARE, %d XA COMMIT, %d DDL", prepared, completed, ddl)
	}
	xa := g.findXA("\x01\x02")
	if xa == nil || string(xa.BQUAL) != "\xff" || xa.FormatID != 77 {
		t.Errorf("XA id with binary gtrid/bqual: got %v", xa)
	}
}

func (g *golden) findXA(gtrid string) *XAID {
	for _, grp := range g.groups {
		if grp.xaPrep != nil && string(grp.xaPrep.XID.GTRID) == gtrid {
			return &grp.xaPrep.XID
		}
	}
	return nil
}

func expectedKind(q string) QueryKind {
	switch {
	case strings.HasPrefix(q, "XA "):
		return QueryXA
	case strings.HasPrefix(q, "SAVEPOINT"):
		return QuerySavepoint
	case q == "COMMIT":
		return QueryCommit
	case q == "BEGIN" || q == "START TRANSACTION":
		return QueryBegin
	}
	return QueryOther
}

// captureSeeds writes the first binlog file, less its events over 16 KiB,
// to testdata/NAME when BINLANE_CAPTURE_SEEDS is set: small real files for
// the fuzz targets' seeds and for TestCommittedBinlogs.
func (g *golden) captureSeeds(t *testing.T, name string) {
	if os.Getenv("BINLANE_CAPTURE_SEEDS") == "" {
		return
	}
	raw, err := os.ReadFile(g.files[0])
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte(nil), FileMagic...)
	for rest := raw[4:]; len(rest) >= HeaderLen; {
		size := int(binary.LittleEndian.Uint32(rest[9:]))
		if size <= 16<<10 {
			out = append(out, rest[:size]...)
		}
		rest = rest[size:]
	}
	if err := os.WriteFile(filepath.Join("testdata", name), out, 0o644); err != nil {
		t.Fatal(err)
	}
}
