package apply

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/binlane/binlane/internal/sqlquote"
)

// BenchmarkWideSplice asks whether an update that changes 10 bytes of a
// 10 KB JSON document costs the target less when only those bytes are
// sent: the whole row in an upsert run of 40 (what rowsql writes for a
// merged row), a guarded UPDATE with the whole value, or UPDATEs that
// splice the 10 bytes into the value the target holds,
// `body`=INSERT(CAST(`body` AS BINARY),p,n,_binary'...'), with the value's
// length and the replaced bytes checked in the WHERE, unchecked, or by
// character positions without the CAST; and an UPDATE of the version
// alone, for the cost of a one-row UPDATE statement. Every form once per
// batch of 40 rows, in one transaction and round trip; target CPU from
// schedstat, per row, median of 5 rounds.
//
//	go test -run '^$' -bench WideSplice -benchtime 1x ./internal/apply
//
// MariaDB 10.11, 2026-11-29, three runs (two in a slow phase, the third
// with the machine faster), target-CPU-µs/row:
//
//	upsert-run (what rowsql sends)   170  161  129
//	update-literal                   209  199  165
//	update-splice (checked)          264  242  177
//	update-splice-unchecked          -    207  176
//	update-splice-chars              -    191  136
//	update-version-only              -     83   63
//
// A splice costs more than the literal it replaces: the target reads the
// stored document, builds the new one and writes it whole (a new
// externally stored value, the old one kept for undo) whatever the
// statement sent, and a one-row UPDATE alone costs half of what the upsert
// run spends per row. Lexing the literal is the smaller part. So rowsql
// sends whole values (a build that spliced merged documents' updates was
// measured in the docs drain too: the target's CPU per transaction
// unchanged, 167.5 against 166.4 µs, 0.35 more statements per
// transaction), and this benchmark records why.
func BenchmarkWideSplice(b *testing.B) {
	s, conn := benchTarget(b, docTable(4000)...)
	ctx := context.Background()
	bodies := map[int][]byte{}
	rows, err := conn.QueryContext(ctx, "SELECT id, body FROM d.doc")
	if err != nil {
		b.Fatal(err)
	}
	for rows.Next() {
		var id int
		var body []byte
		if err := rows.Scan(&id, &body); err != nil {
			b.Fatal(err)
		}
		bodies[id] = body
	}
	rows.Close()
	type form struct {
		name  string
		write func(q []byte, id, version int, old, new []byte) []byte
	}
	const at, n = 5000, 10
	forms := []form{
		{"upsert-run", nil},
		{"update-literal", func(q []byte, id, version int, _, new []byte) []byte {
			q = fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d,`body`=", version)
			q = sqlquote.AppendEscaped(q, "binary", new)
			return fmt.Appendf(q, " WHERE `id`=%d;SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", id)
		}},
		{"update-splice", func(q []byte, id, version int, old, new []byte) []byte {
			q = fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d,`body`=INSERT(CAST(`body` AS BINARY),%d,%d,", version, at+1, n)
			q = append(sqlquote.AppendEscaped(q, "binary", new[at:at+n]), ')')
			q = fmt.Appendf(q, " WHERE `id`=%d AND %d<=@@max_allowed_packet AND LENGTH(`body`)=%d AND SUBSTRING(CAST(`body` AS BINARY),%d,%d)=",
				id, len(new), len(old), at+1, n)
			q = sqlquote.AppendEscaped(q, "binary", old[at:at+n])
			return append(q, ";SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);"...)
		}},
		{"update-splice-unchecked", func(q []byte, id, version int, old, new []byte) []byte {
			q = fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d,`body`=INSERT(CAST(`body` AS BINARY),%d,%d,", version, at+1, n)
			q = append(sqlquote.AppendEscaped(q, "binary", new[at:at+n]), ')')
			return fmt.Appendf(q, " WHERE `id`=%d;SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", id)
		}},
		{"update-splice-chars", func(q []byte, id, version int, old, new []byte) []byte {
			q = fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d,`body`=INSERT(`body`,%d,%d,", version, at+1, n)
			q = append(sqlquote.AppendEscaped(q, "utf8mb4", new[at:at+n]), ')')
			return fmt.Appendf(q, " WHERE `id`=%d;SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", id)
		}},
		{"update-version-only", func(q []byte, id, version int, old, new []byte) []byte {
			return fmt.Appendf(q, "UPDATE `d`.`doc` SET `version`=%d WHERE `id`=%d;SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1);", version, id)
		}},
	}
	const per = 40
	version := 1
	next := 1
	cpu := map[string][]float64{}
	for round := range 5 {
		sums := map[string]int64{}
		for range 25 {
			for _, f := range forms {
				version++
				q := []byte("START TRANSACTION;SET @binlane_bad=0;")
				if f.write == nil {
					q = append(q, "INSERT INTO `d`.`doc` (`id`,`customer_id`,`kind`,`version`,`updated`,`body`) VALUES "...)
				}
				for i := range per {
					id := 1 + (next+i)%4000
					old := bodies[id]
					new := slices.Clone(old)
					copy(new[at:at+n], fmt.Sprintf("%010d", version))
					if f.write != nil {
						q = f.write(q, id, version, old, new)
					} else {
						if i > 0 {
							q = append(q, ',')
						}
						q = fmt.Appendf(q, "(%d,%d,_binary'invoice',%d,'2026-11-28 10:00:00.000000',", id, id%1000, version)
						q = append(sqlquote.AppendEscaped(q, "binary", new), ')')
					}
					bodies[id] = new
				}
				next += per
				if f.write == nil {
					q = append(q, " ON DUPLICATE KEY UPDATE `customer_id`=VALUES(`customer_id`),`kind`=VALUES(`kind`),`version`=VALUES(`version`),`updated`=VALUES(`updated`),`body`=VALUES(`body`);"...)
				}
				q = append(q, "DO IF(@binlane_bad=0,0,(SELECT 1 UNION SELECT 2));COMMIT"...)
				before := threadsNS(b, s.PID())
				if _, err := conn.ExecContext(ctx, string(q)); err != nil {
					b.Fatalf("%s: %v", f.name, err)
				}
				for tid, ns := range threadsNS(b, s.PID()) {
					sums[f.name] += ns - before[tid]
				}
			}
		}
		fmt.Printf("round %d:", round+1)
		for _, f := range forms {
			v := float64(sums[f.name]) / 1e3 / (25 * per)
			cpu[f.name] = append(cpu[f.name], v)
			fmt.Printf(" %s %.1f", f.name, v)
		}
		fmt.Println(" µs/row")
	}
	for name, v := range cpu {
		b.ReportMetric(medianOf(v), name+"-µs/row")
	}
}
