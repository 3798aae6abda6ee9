package binlog

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// mariadb-binlog as an independent oracle: `--base64-output=decode-rows -vv`
// prints every row image as "###   @N=value /* TYPE meta=M nullable=X
// is_null=Y */" lines. Its known weaknesses, which the comparison allows
// for: DATE is printed with ':' separators, BINARY(n) without its stripped
// 0x00 padding, FLOAT with 6 significant digits, TIMESTAMP as epoch
// seconds, integers without knowing their signedness (both readings when
// they differ), and string bytes unescaped except control characters
// (\xHH), so quotes and backslashes are ambiguous only in theory.

type oracleValue struct {
	idx              int
	text             []byte // unquoted for quoted values
	quoted           bool
	typ              string
	nullable, isNull bool
}

type oracleRows struct {
	file   string
	endPos uint64
	kind   string
	images [][]oracleValue
}

var (
	oracleHeader = regexp.MustCompile(`end_log_pos (\d+) .*\t(Write|Update|Delete)_(?:compressed_)?rows.*: table id`)
)

func runOracle(t *testing.T, path string) []*oracleRows {
	cmd := exec.Command("mariadb-binlog", "--no-defaults", "--base64-output=decode-rows", "-vv", path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("mariadb-binlog: %v", err)
	}
	events, perr := parseOracle(filepath.Base(path), out)
	io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mariadb-binlog %s: %v: %s", path, err, stderr.String())
	}
	if perr != nil {
		t.Fatal(perr)
	}
	return events
}

func parseOracle(file string, r io.Reader) ([]*oracleRows, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var events []*oracleRows
	var cur *oracleRows
	for {
		line, err := br.ReadBytes('\n')
		line = bytes.TrimRight(line, "\n")
		switch {
		case len(line) == 0:
		case oracleHeader.Match(line):
			m := oracleHeader.FindSubmatch(line)
			end, _ := strconv.ParseUint(string(m[1]), 10, 64)
			cur = &oracleRows{file: file, endPos: end, kind: string(m[2])}
			// Rows are printed after the statement's last event only.
			if bytes.Contains(line, []byte("STMT_END_F")) {
				events = append(events, cur)
			}
		case bytes.Equal(line, []byte("### SET")) || bytes.Equal(line, []byte("### WHERE")):
			if cur == nil {
				return nil, fmt.Errorf("oracle: row image outside a rows event")
			}
			cur.images = append(cur.images, nil)
		case bytes.HasPrefix(line, []byte("###   @")):
			v, perr := parseOracleValue(line)
			if perr != nil {
				return nil, perr
			}
			img := &cur.images[len(cur.images)-1]
			*img = append(*img, v)
		}
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// parseOracleValue reads "###   @N=value /* TYPE meta=M nullable=X
// is_null=Y */" by hand: a regular expression over a 20 MiB value line is
// far too slow under the race detector.
func parseOracleValue(line []byte) (oracleValue, error) {
	bad := func() (oracleValue, error) { return oracleValue{}, fmt.Errorf("oracle: cannot parse %.200q", line) }
	rest, ok := bytes.CutPrefix(line, []byte("###   @"))
	eq := bytes.IndexByte(rest, '=')
	ci := bytes.LastIndex(rest, []byte(" /* "))
	if !ok || eq < 0 || ci < eq || !bytes.HasSuffix(rest, []byte(" */")) {
		return bad()
	}
	var v oracleValue
	v.idx, _ = strconv.Atoi(string(rest[:eq]))
	comment := string(rest[ci+4 : len(rest)-3])
	mi := strings.LastIndex(comment, " meta=")
	ni := strings.LastIndex(comment, " nullable=")
	ii := strings.LastIndex(comment, " is_null=")
	if mi < 0 || ni < mi || ii < ni || ii+10 > len(comment) {
		return bad()
	}
	v.typ = comment[:mi]
	v.nullable = comment[ni+10] == '1'
	v.isNull = comment[ii+9] == '1'
	text := rest[eq+1 : ci]
	if len(text) >= 2 && text[0] == '\'' && text[len(text)-1] == '\'' {
		v.quoted = true
		text = unescapeOracle(text[1 : len(text)-1])
	} else {
		text = bytes.TrimSpace(text)
	}
	v.text = text
	return v, nil
}

// unescapeOracle undoes the \xHH escapes of control characters.
func unescapeOracle(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] == '\\' && i+3 < len(b) && b[i+1] == 'x' {
			if x, err := strconv.ParseUint(string(b[i+2:i+4]), 16, 8); err == nil && x < 0x20 {
				out = append(out, byte(x))
				i += 3
				continue
			}
		}
		out = append(out, b[i])
	}
	return out
}

func (g *golden) checkOracle(t *testing.T) {
	matched := 0
	for _, path := range g.files {
		for _, o := range runOracle(t, path) {
			dr := g.rowsByEnd[fmt.Sprintf("%s:%d", o.file, o.endPos)]
			if dr == nil {
				t.Errorf("oracle rows event %s:%d not decoded", o.file, o.endPos)
				continue
			}
			matched++
			g.compareOracle(t, o, dr)
		}
	}
	if matched != len(g.rowsByEnd) || matched < 20 {
		t.Errorf("oracle printed %d rows events, decoder read %d", matched, len(g.rowsByEnd))
	}
	t.Logf("oracle: %d rows statements compared", matched)
}

func (g *golden) compareOracle(t *testing.T, o *oracleRows, dr *decodedRows) {
	cols := dr.rows.Table.Columns
	n := len(cols)
	if len(o.images)*n != len(dr.values) {
		t.Errorf("%s:%d: oracle has %d images, decoder %d values of %d columns", o.file, o.endPos, len(o.images), len(dr.values), n)
		return
	}
	for i, img := range o.images {
		// The oracle prints present columns only (MINIMAL and NOBLOB images
		// leave some out): every other decoded value must be absent.
		printed := make([]bool, n)
		for _, ov := range img {
			j := ov.idx - 1
			if j < 0 || j >= n {
				t.Errorf("%s:%d image %d: oracle column @%d of %d", o.file, o.endPos, i, ov.idx, n)
				continue
			}
			printed[j] = true
			if err := oracleMatch(&dr.values[i*n+j], &cols[j], ov); err != nil {
				t.Errorf("%s:%d %s image %d column %d (%s %s): %v", o.file, o.endPos, dr.rows.Table.Table, i, j+1, cols[j].Name, ov.typ, err)
			}
		}
		for j, ok := range printed {
			if !ok && dr.values[i*n+j].Kind != KindAbsent {
				t.Errorf("%s:%d image %d column %d: oracle has no value, decoder %s", o.file, o.endPos, i, j+1, dr.values[i*n+j].Kind)
			}
		}
	}
}

// oracleMatch compares a decoded value with mariadb-binlog's text.
func oracleMatch(v *Value, c *Column, o oracleValue) error {
	if o.nullable != c.Nullable {
		return fmt.Errorf("nullable %v, oracle %v", c.Nullable, o.nullable)
	}
	if o.isNull || v.Kind == KindNull {
		if o.isNull != (v.Kind == KindNull) {
			return fmt.Errorf("decoded %s, oracle is_null=%v", v.Kind, o.isNull)
		}
		return nil
	}
	got := v.String()
	want := string(o.text)
	switch v.Kind {
	case KindInt, KindUint:
		n, err := strconv.ParseInt(strings.Fields(want)[0], 10, 64)
		if err != nil {
			return err
		}
		mask := uint64(math.MaxUint64)
		if w := intWidth(c.Type); w < 8 {
			mask = 1<<(8*w) - 1
		}
		if uint64(n)&mask != uint64(v.N)&mask {
			return fmt.Errorf("decoded %s, oracle %s", got, want)
		}
		return nil
	case KindFloat:
		f, err := strconv.ParseFloat(want, 64)
		if err != nil || math.Abs(f-v.Float()) > 1e-5*math.Max(math.Abs(f), math.Abs(v.Float())) {
			return fmt.Errorf("decoded %s, oracle %s", got, want)
		}
		return nil
	case KindDouble:
		f, err := strconv.ParseFloat(want, 64)
		if err != nil || f != v.Float() {
			return fmt.Errorf("decoded %s, oracle %s", got, want)
		}
		return nil
	case KindTimestamp:
		got = strconv.FormatInt(v.N, 10)
		if v.Prec > 0 {
			got += "." + string(appendPadded(nil, int(v.Micro)/int(math.Pow10(6-int(v.Prec))), int(v.Prec)))
		}
	case KindDate:
		want = strings.ReplaceAll(want, ":", "-")
	case KindYear:
		if v.N == 0 && want == "1900" {
			return nil // the oracle adds 1900 to the zero year too
		}
	case KindSet, KindBit:
		bits := strings.TrimSuffix(strings.TrimPrefix(want, "b'"), "'")
		if v.Kind == KindSet {
			bits = reverseBytes(bits) // the oracle prints a SET's bytes as stored, little-endian
		}
		n, err := strconv.ParseUint(bits, 2, 64)
		if err != nil || n != uint64(v.N) {
			return fmt.Errorf("decoded %d, oracle %s", uint64(v.N), want)
		}
		return nil
	case KindString, KindGeometry, KindJSON:
		b := v.B
		if c.Type == TypeString && c.Collation == 63 {
			// The oracle prints BINARY(n) as stored, without the 0x00
			// padding the decoder restores.
			if len(b) != int(c.Meta) {
				return fmt.Errorf("BINARY(%d) decoded as %d bytes", c.Meta, len(b))
			}
			b = bytes.TrimRight(b, "\x00")
		}
		if !bytes.Equal(b, o.text) {
			return fmt.Errorf("decoded %.100q, oracle %.100q", b, o.text)
		}
		return nil
	}
	if got != want {
		return fmt.Errorf("decoded %s, oracle %s", got, want)
	}
	return nil
}

func reverseBytes(bits string) string {
	var out []string
	for len(bits) >= 8 {
		out = append([]string{bits[:8]}, out...)
		bits = bits[8:]
	}
	return strings.Join(out, "")
}

func intWidth(t ColumnType) int {
	switch t {
	case TypeTiny:
		return 1
	case TypeShort:
		return 2
	case TypeInt24:
		return 3
	case TypeLong:
		return 4
	}
	return 8
}

// checkCorruption flips one byte of a rows event in a copy of the first
// file: the decoder must refuse it with a DecodeError naming the file and
// the event's position.
func (g *golden) checkCorruption(t *testing.T) {
	var target *decodedRows
	first := filepath.Base(g.files[0])
	for key, dr := range g.rowsByEnd {
		if strings.HasPrefix(key, first+":") && (target == nil || dr.ev.Pos < target.ev.Pos) {
			target = dr
		}
	}
	if target == nil {
		t.Fatal("no rows event in the first file")
	}
	raw, err := os.ReadFile(g.files[0])
	if err != nil {
		t.Fatal(err)
	}
	raw[target.ev.Pos+HeaderLen+3] ^= 0x40
	path := filepath.Join(t.TempDir(), first)
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	err = readAll(path)
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrChecksum) || de.File != first || de.Pos != target.ev.Pos {
		t.Fatalf("corrupted event at %s:%d: got %v", first, target.ev.Pos, err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%s:%d", first, target.ev.Pos)) {
		t.Errorf("error %q does not name the file and position", err)
	}
	// A corrupt size field, and a file cut in the middle of the event.
	raw[target.ev.Pos+HeaderLen+3] ^= 0x40
	huge := append([]byte(nil), raw...)
	binary.LittleEndian.PutUint32(huge[target.ev.Pos+9:], 0x3fffffff)
	cut := raw[:target.ev.Pos+uint64(target.ev.Header.EventSize)/2]
	for name, file := range map[string][]byte{"size": huge, "cut": cut} {
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		err = readAll(path)
		if !errors.As(err, &de) || de.File != first || de.Pos != target.ev.Pos {
			t.Errorf("%s: got %v, want an error at %s:%d", name, err, first, target.ev.Pos)
		}
	}
}

// readAll decodes every event of a file and every row image.
func readAll(path string) error {
	fr, err := OpenFile(path)
	if err != nil {
		return err
	}
	defer fr.Close()
	for {
		ev, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if rows, ok := ev.Data.(*RowsEvent); ok {
			if _, err := rows.AppendRows(nil); err != nil {
				return err
			}
		}
	}
}
