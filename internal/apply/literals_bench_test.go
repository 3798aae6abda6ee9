package apply

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkWideLiterals measures what the docs workload's wide string
// values cost the target to read, per statement: a 10 KB JSON document
// updated by primary key (its JSON with nothing to escape, and with many
// quotes and backslashes that the literal must escape again), a 60-column
// profile row updated whole (20 strings of 100-200 bytes), and a 10-row
// INSERT of 4-16 KB documents. Each is written in each literal form:
//   - escaped: _utf8mb4'..' with backslash escapes, character_set_client
//     utf8mb4 (what binlane sent before the apply session's client charset
//     became binary);
//   - escaped-client-binary: the same text with character_set_client
//     binary, connection and results utf8mb4 (what binlane sends): the
//     lexer then reads a literal without asking the charset at each byte
//     whether a multi-byte character starts there (Lex_input_stream's
//     get_text, and its unescape pass, which a literal with any escape or
//     doubled quote takes as a second per-byte loop);
//   - hex: _utf8mb4 X'..' (twice the bytes to scan, then decoded).
//
// The forms take turns batch by batch (20 statements in a transaction and
// a round trip) through 5 rounds on one server, so a slow phase of the
// shared machine hits them alike. The metric is the target's CPU, all its
// threads' and its busiest (the connection's) thread's, from schedstat:
// the time utime+stime in /proc/<pid>/stat count, without their 10 ms
// ticks. Reported: the median over rounds of each form's CPU over the
// escaped form's.
//
//	go test -run '^$' -bench WideLiterals -benchtime 1x ./internal/apply
//
// MariaDB 10.11, 2026-11-28, three runs (all threads; the connection's
// thread alike within 0.05):
//
//	                      client binary       hex
//	doc-update            0.87 0.84 0.97      1.15 1.22 1.25
//	doc-update-escapes    0.76 0.81 0.82      1.00 1.12 0.98
//	profile-update        1.04 0.98 0.87      1.03 1.06 1.03
//	doc-insert-10         0.91 0.82 0.86      1.22 1.12 1.18
//
// The escaped form cost 190-280 µs per document update, 165-300 per
// profile update and 1.3-2.4 ms per 10-document INSERT (the machine's
// phases move them by half). A binary client cuts the per-byte scan: a
// tenth to a fifth of a wide JSON statement; the profile row's short
// strings gain less and vary with the noise. Hex costs more everywhere
// but where the escapes' second pass would run.
func BenchmarkWideLiterals(b *testing.B) {
	s, conn := benchTarget(b, append(docTable(2000),
		"CREATE TABLE d.profile (id INT PRIMARY KEY, "+strings.Join(profileDefs(), ", ")+")",
		"INSERT INTO d.profile SELECT seq, "+strings.Join(profileSeed(), ", ")+" FROM d.seq_1_to_5000")...)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	nextID := 1_000_000
	kinds := []struct {
		name  string
		n     int // statements per form and round
		write func(dst []byte, lit literalForm, i int) []byte
	}{
		{"doc-update", 1500, func(dst []byte, lit literalForm, i int) []byte {
			dst = fmt.Appendf(dst, "UPDATE `d`.`doc` SET `version`=%d,`body`=", i)
			dst = lit.append(dst, wideDoc(i, 10000, false))
			return fmt.Appendf(dst, " WHERE `id`=%d", 1+rng.IntN(2000))
		}},
		{"doc-update-escapes", 1500, func(dst []byte, lit literalForm, i int) []byte {
			dst = fmt.Appendf(dst, "UPDATE `d`.`doc` SET `version`=%d,`body`=", i)
			dst = lit.append(dst, wideDoc(i, 10000, true))
			return fmt.Appendf(dst, " WHERE `id`=%d", 1+rng.IntN(2000))
		}},
		{"profile-update", 2000, func(dst []byte, lit literalForm, i int) []byte {
			return profileUpdate(dst, lit, i, 1+rng.IntN(5000))
		}},
		{"doc-insert-10", 300, func(dst []byte, lit literalForm, i int) []byte {
			dst = append(dst, "INSERT INTO `d`.`doc` (`id`,`customer_id`,`kind`,`version`,`updated`,`body`) VALUES "...)
			for r := range 10 {
				if r > 0 {
					dst = append(dst, ',')
				}
				nextID++
				dst = fmt.Appendf(dst, "(%d,%d,", nextID, nextID%1000)
				dst = lit.append(dst, []byte("invoice"))
				dst = append(dst, ",1,'2026-11-28 10:00:00.000000',"...)
				dst = lit.append(dst, wideDoc(nextID, 4000+nextID%12000, false))
				dst = append(dst, ')')
			}
			return dst
		}},
	}
	forms := []literalForm{{"escaped", "utf8mb4", "utf8mb4", false}, {"escaped-client-binary", "binary", "utf8mb4", false},
		{"hex", "utf8mb4", "utf8mb4", true}, {"binary-introducer", "binary", "binary", false}}
	const rounds = 5
	ratios := map[string][]float64{}
	for round := range rounds {
		for _, k := range kinds {
			all, conn1 := make([]int64, len(forms)), make([]int64, len(forms))
			for i := 0; i < k.n; i += 20 {
				for fi, f := range forms {
					a, c := runBatch(b, ctx, conn, s.PID(), f, i, min(i+20, k.n), k.write)
					all[fi] += a
					conn1[fi] += c
				}
			}
			for fi, f := range forms {
				name := k.name + "/" + f.name
				ra, rc := float64(all[fi])/float64(all[0]), float64(conn1[fi])/float64(conn1[0])
				ratios[name+"-all"] = append(ratios[name+"-all"], ra)
				ratios[name+"-conn"] = append(ratios[name+"-conn"], rc)
				fmt.Printf("round %d %-40s all threads %6.1f µs/stmt (%.2f), connection %6.1f (%.2f)\n", round+1, name,
					float64(all[fi])/1e3/float64(k.n), ra, float64(conn1[fi])/1e3/float64(k.n), rc)
			}
		}
	}
	for name, v := range ratios {
		b.ReportMetric(medianOf(v), name+"-vs-escaped")
	}
}

// docTable is the setup of the docs workload's document table, d.doc, with
// rows documents of about 10 KB, ids 1 to rows.
func docTable(rows int) []string {
	return []string{"CREATE DATABASE d",
		`CREATE TABLE d.doc (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, kind VARCHAR(20) NOT NULL,
			version INT NOT NULL, updated DATETIME(6) NOT NULL, body JSON NOT NULL, KEY customer (customer_id))`,
		fmt.Sprintf("INSERT INTO d.doc SELECT seq, seq %% 1000, 'invoice', 1, NOW(6), JSON_OBJECT('id', seq, 'pad', REPEAT('x', 10000)) "+
			"FROM d.seq_1_to_%d", rows)}
}

// literalForm is a way of writing string values: the session's
// character_set_client and escaped or hex literals.
type literalForm struct {
	name, client, introducer string
	hex                      bool
}

func (f literalForm) append(dst, v []byte) []byte {
	if f.hex {
		return sqlquote.AppendHex(dst, f.introducer, v)
	}
	return sqlquote.AppendEscaped(dst, f.introducer, v)
}

// runBatch sends statements [from, to) of one kind in form f in one
// transaction and round trip, and returns the target's CPU time for it in
// ns: all its threads', and the busiest thread's (the connection's, which
// lexes and parses; without the background threads' purge and flushing,
// which land in whichever batch runs then).
func runBatch(b *testing.B, ctx context.Context, conn *sql.Conn, pid int, f literalForm, from, to int,
	write func([]byte, literalForm, int) []byte) (all, conn1 int64) {
	if _, err := conn.ExecContext(ctx, "SET SESSION character_set_client="+f.client); err != nil {
		b.Fatal(err)
	}
	q := []byte("START TRANSACTION;")
	for j := from; j < to; j++ {
		q = append(write(q, f, j), ';')
	}
	q = append(q, "COMMIT"...)
	before := threadsNS(b, pid)
	if _, err := conn.ExecContext(ctx, string(q)); err != nil {
		b.Fatalf("%s: %v", f.name, err)
	}
	for tid, ns := range threadsNS(b, pid) {
		d := ns - before[tid]
		all += d
		conn1 = max(conn1, d)
	}
	return all, conn1
}

// medianOf is the median of the rounds' figures (v is left as it was).
func medianOf(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// threadsNS is the CPU time in ns of each thread of a process, from
// schedstat: the time utime+stime in /proc/<pid>/stat count, without the
// stat's 10 ms ticks, so that batches of a few ms each can be measured
// and the forms interleaved batch by batch.
func threadsNS(b *testing.B, pid int) map[string]int64 {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	out := make(map[string]int64, len(tasks))
	for _, t := range tasks {
		raw, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		ns, _ := strconv.ParseInt(strings.Fields(string(raw))[0], 10, 64)
		out[t.Name()] = ns
	}
	return out
}

// wideDoc is a JSON document of about size bytes shaped like the docs
// workload's invoices, with non-ASCII text; with escapes its notes hold
// quotes, apostrophes and backslashes (JSON escapes), which the literal
// must escape again.
func wideDoc(seq, size int, escapes bool) []byte {
	b := fmt.Appendf(nil, `{"id": %d, "status": "open", "customer": {"name": "Müller & Söhne – Zürich", "city": "Łódź"}, "lines": [`, seq)
	note := "plain note about the delivery of item number"
	if escapes {
		note = `he said \"leave it at the door\"\nit's at C:\\orders\\%d`
	}
	for n := 0; len(b) < size-200; n++ {
		if n > 0 {
			b = append(b, ", "...)
		}
		b = fmt.Appendf(b, `{"sku": "SKU-%05d", "qty": %d, "price": %d.%02d, "note": "`+note+` %d"}`, n, 1+n%9, n%500, n%100, seq, n)
	}
	b = append(b, `], "memo": "`...)
	for len(b) < size-2 {
		b = append(b, 'm')
	}
	return append(b, `"}`...)
}

// profileDefs are the docs workload's 60 profile columns.
func profileDefs() []string {
	var defs []string
	for i := 1; i <= 20; i++ {
		defs = append(defs, fmt.Sprintf("t%02d VARCHAR(200) NOT NULL", i), fmt.Sprintf("i%02d INT NOT NULL", i))
	}
	for i := 1; i <= 10; i++ {
		defs = append(defs, fmt.Sprintf("d%02d DECIMAL(14,4) NOT NULL", i), fmt.Sprintf("at%02d DATETIME(6) NOT NULL", i))
	}
	return defs
}

func profileSeed() []string {
	var cols []string
	for i := 1; i <= 20; i++ {
		cols = append(cols, fmt.Sprintf("REPEAT(CHAR(65 + (seq + %d) %% 26), 100 + (seq * %d) %% 100)", i, i), "seq")
	}
	for range 10 {
		cols = append(cols, "seq / 7", "NOW(6)")
	}
	return cols
}

// profileUpdate writes an UPDATE of a whole profile row, as rowsql does
// for a row whose every column changed.
func profileUpdate(dst []byte, lit literalForm, i, id int) []byte {
	dst = append(dst, "UPDATE `d`.`profile` SET "...)
	for c := 1; c <= 20; c++ {
		text := fmt.Appendf(nil, "Straße %d, %d Zürich — ", i, c)
		for len(text) < 100+(i*c)%100 {
			text = append(text, byte('a'+(i+c)%26))
		}
		dst = fmt.Appendf(dst, "`t%02d`=", c)
		dst = lit.append(dst, text)
		dst = fmt.Appendf(dst, ",`i%02d`=%d,", c, i*c)
	}
	for c := 1; c <= 10; c++ {
		dst = fmt.Appendf(dst, "`d%02d`=%d.%04d,`at%02d`='2026-11-28 10:%02d:%02d.%06d',", c, i, c, c, c, i%60, i)
	}
	return fmt.Appendf(dst[:len(dst)-1], " WHERE `id`=%d", id)
}
