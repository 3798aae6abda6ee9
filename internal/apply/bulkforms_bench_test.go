package apply

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bulkBlock is the number of rows one bulk statement of the source
// changes (the bench's bulk scenario: BulkRows); the table holds
// bulkBlocks blocks and the forms change the second, bulkFirst to
// bulkLast. The table must be larger than the block: a multi-table UPDATE
// of a whole table scans it and updates in place, but of a block it
// looks the rows up and updates them from a list of row ids afterwards.
const (
	bulkBlock  = 100000
	bulkBlocks = 4
	bulkFirst  = bulkBlock + 1
	bulkLast   = 2 * bulkBlock
)

// bulkForm renders one target transaction applying a block of 100,000
// key-keeping updates (or deletes) of a bulk.history-shaped table: its
// round trips and the LOAD DATA file each one needs (nil: none).
type bulkForm struct {
	name   string
	render func(r int) []bulkTrip
}

type bulkTrip struct {
	sql  string
	file []byte
}

// BenchmarkBulkForms measures the target's CPU per row of the ways a
// 100,000-row UPDATE (amount and note of every row of a block) or DELETE
// of a bulk.history-shaped table (400,000 rows) can be sent, on a target
// with its binlog on: one transaction per block, every form once per
// round, each round starting with another form. Each form's CPU includes
// the purge of what it changed (runBulk waits for the server to be idle
// before and after): without that, the purge of one form's 100,000 rows
// was billed to the next, which once made the temporary-table forms look
// 58% cheaper than the upsert. Run it once (-benchtime 1x); it logs each
// round; $BULKFORMS picks forms (a regular expression), $BULKROUNDS the
// rounds (3).
//
//	go test -run '^$' -bench BulkForms -benchtime 1x -timeout 30m ./internal/apply
//
// MariaDB 10.11, 2026-11-28 (target-CPU-µs per row, by round; the
// machine's phases move every form by up to half between runs):
//
//	update/upsert-1MiB (what rowsql sends)        8.3 8.4 6.2
//	update/UPDATE-guarded-blocks (changed cols)   20.6 19.8 15.7
//	update/join-run-as-rowsql-writes-it           7.8 8.0 6.0
//	update/join-run-memory                        8.6 6.8 4.9
//	update/tmp-load-join-memory                   6.7 3.9 4.2
//	delete/IN-500-guarded-blocks (what is sent)   3.8 5.1 6.3
//	delete/IN-999-client-checked                  3.8 7.1 6.7
//	delete/tmp-load-join-memory                   4.2 10.6 7.3
//
// 2026-11-29 (a slow phase), 4 rounds: update/upsert-1MiB 17.2 18.1 14.4
// 14.8, update/load-replace-1MiB 12.8 10.6 11.4 11.1 (what rowsql sends
// since: load.go), update/load-replace-4MiB 11.8 11.0 12.1 11.7.
//
// 2026-11-29 later (slower still), the join with the target table first:
//
//	update/load-replace-1MiB                  11.3 10.7 10.8 | 7.4 8.7 9.7 11.4
//	update/tmp-load-straight-join-memory      5.5  3.1  5.7  | 4.5 3.9 4.9 4.4
//	update/tmp-load-straight-join-innodb      9.5  9.9  6.7  |
//	update/tmp-load-join-memory               10.2 9.0  5.8  |
//	delete/IN-500-guarded-blocks                             | 6.4 5.8 6.9 11.9
//	delete/tmp-load-straight-join-memory                     | 12.0 11.9 6.2 11.4
//
// 2026-11-29 (stop 46, a fast phase), deletes by their key range, 100,000
// rows in statements of 500, 10,000 and 100,000 (three runs of 4-8 rounds):
//
//	delete/IN-500-guarded-blocks   2.7 3.1 4.7 5.1 | 5.0 5.0 4.7 4.7 4.8 2.9 4.8 2.8 | 5.1 3.0 2.6 4.7 2.9 4.8
//	delete/range-500                               |                                 | 1.7 1.7 3.7 3.8 3.7 3.8
//	delete/range-10000             1.7 3.8 3.6 1.6 | 1.6 3.7 3.9 2.0 3.7 1.6 4.0 1.6 | 3.8 3.9 3.8 3.6 4.0 1.6
//	delete/range-100000            1.7 3.8 3.9 3.6 | 3.8 4.1 3.7 3.7 3.7 3.8 3.8 4.1 | 3.7 3.8 1.6 3.6 3.7 3.6
//
// Every form has two levels about 2 µs apart (rounds whose purge ran
// after the settle, or not); within each, a range costs 1.0-1.2 µs a row
// less than the IN lists, at every length: rowsql deletes runs of 100
// consecutive keys or more by their range since (keyrun.go).
//
// With the target table first over the key range of the rows
// (STRAIGHT_JOIN ... WHERE id BETWEEN), MariaDB updates each row as the
// range scan reads it (safe_update_on_fly) instead of keeping row ids for
// a second pass, and there is no failed insert attempt per row as in the
// REPLACE: half the target's CPU. rowsql sends it since (join.go). A
// DELETE joined the same way gains nothing over DELETE ... IN.
//
// The join run (the changed columns into a temporary table made like the
// target's, then one UPDATE ... JOIN) is not cheaper once the block is a
// part of the table: MariaDB then looks each row up by key, keeps its row
// id and new values in a temporary table, and updates from there at the
// end (mysql_multi_update with do_updates and ha_rnd_pos: about 3/4 of
// the worker thread's samples in a bulk drain). When the block was the
// whole table (a scan updated in place) it measured 5.3-8.5 against the
// upsert's 8.6-9.6. A 4,000-transaction bulk drain (a 100,000-row UPDATE
// or DELETE every 500) with join runs against without: target CPU 10.2
// and 10.3 s against 9.1 and 10.1. The UPDATE of changed columns one row
// per statement costs 2-3x the upsert; deletes cost the same in every
// form. Only LOAD DATA into a MEMORY table beat the upsert clearly, and
// LOAD DATA turns conversion errors into warnings (an exactness question
// of its own) and a MEMORY table is bounded (max_heap_table_size, no
// BLOBs): not pursued.
func BenchmarkBulkForms(b *testing.B) {
	s, conn := benchTarget(b, "CREATE DATABASE d", `CREATE TABLE d.history (
		id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(12,2) NOT NULL,
		at DATETIME(6) NOT NULL, note VARCHAR(40) NOT NULL, KEY customer (customer_id)) ENGINE=InnoDB`,
		fmt.Sprintf("INSERT INTO d.history SELECT seq, 1 + seq %% 100000, seq %% 1000, "+
			"TIMESTAMP'2026-01-01 00:00:00' - INTERVAL seq MINUTE, 'payment' FROM d.seq_1_to_%d", bulkBlocks*bulkBlock))
	ctx := context.Background()
	exec := func(q string) {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			b.Fatalf("%.200s: %v", q, err)
		}
	}
	execFile := func(q string, file []byte) {
		if err := runWithFiles(ctx, conn, q, map[string][]byte{"Reader::bulkforms": file}); err != nil {
			b.Fatalf("%.200s: %v", q, err)
		}
	}
	updates, deletes := bulkFormsMatching(bulkUpdateForms()), bulkFormsMatching(bulkDeleteForms())
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("BULKROUNDS")); err == nil {
		rounds = n
	}
	cpu := map[string][]float64{}
	for range b.N {
		for r := 1; r <= rounds; r++ {
			// Each round starts with another form: no form always follows
			// the same one.
			for i := range updates {
				f := updates[(i+r)%len(updates)]
				ticks := runBulk(b, s.PID(), exec, execFile, f.render(r))
				cpu[f.name] = append(cpu[f.name], float64(ticks)*1e4/bulkBlock)
				exec(fmt.Sprintf("UPDATE d.history SET amount = id %% 1000, note = 'payment' WHERE id BETWEEN %d AND %d", bulkFirst, bulkLast)) // back to round 0's images
			}
			for i := range deletes {
				f := deletes[(i+r)%len(deletes)]
				ticks := runBulk(b, s.PID(), exec, execFile, f.render(r))
				cpu[f.name] = append(cpu[f.name], float64(ticks)*1e4/bulkBlock)
				// Put the block back (not measured), as it was.
				exec(fmt.Sprintf("INSERT INTO d.history SELECT seq, 1 + seq %% 100000, seq %% 1000, "+
					"TIMESTAMP'2026-01-01 00:00:00' - INTERVAL seq MINUTE, 'payment' FROM d.seq_%d_to_%d", bulkFirst, bulkLast))
			}
		}
	}
	for _, f := range append(updates, deletes...) {
		v := cpu[f.name]
		b.Logf("%-34s target-CPU-µs/row by round: %.1f", f.name, v)
		b.ReportMetric(medianOf(v), f.name+"-µs/row")
	}
}

// bulkFormsMatching keeps the forms whose names match $BULKFORMS (all
// when unset).
func bulkFormsMatching(forms []bulkForm) []bulkForm {
	re := regexp.MustCompile(os.Getenv("BULKFORMS"))
	return slices.DeleteFunc(forms, func(f bulkForm) bool { return !re.MatchString(f.name) })
}

// runBulk runs one transaction's round trips and returns the target's
// CPU ticks (10 ms) they took, the purge of what it changed included: it
// starts and ends with the server idle, so that no form pays for the
// purge of the one before it (100,000 rows' undo: a second of CPU).
func runBulk(b *testing.B, pid int, exec func(string), execFile func(string, []byte), trips []bulkTrip) int64 {
	settle(b, pid)
	before := procCPU(b, pid)
	exec("START TRANSACTION;SET @binlane_bad=0,@binlane_n=0")
	for _, t := range trips {
		if t.file != nil {
			execFile(t.sql, t.file)
			continue
		}
		exec(t.sql)
	}
	exec("DO IF(@binlane_bad=0,0,(SELECT 1 UNION SELECT 2));COMMIT")
	return settle(b, pid) - before
}

// settle waits until the server is idle (at most 2 ticks in 500 ms, for
// at most a minute) and returns its CPU ticks then.
func settle(b *testing.B, pid int) int64 {
	last := procCPU(b, pid)
	for range 120 {
		time.Sleep(500 * time.Millisecond)
		now := procCPU(b, pid)
		if now-last <= 2 {
			return now
		}
		last = now
	}
	return last
}

// bulkRow is row id of the block as round r's update leaves it.
type bulkRow struct {
	id, customer int
	amount, at   string
	note         string
}

func bulkRowAt(id, r int) bulkRow {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-time.Duration(id) * time.Minute)
	note := "payment"
	if r%2 == 1 {
		note = "rerated"
	}
	return bulkRow{id: id, customer: 1 + id%100000, amount: fmt.Sprintf("%d.00", id%1000+r),
		at: at.Format("2006-01-02 15:04:05.000000"), note: note}
}

// splitTrips packs statements into round trips of up to 4 MiB
// (rowsql.DefaultMaxRoundTrip).
func splitTrips(stmts []string) []bulkTrip {
	var out []bulkTrip
	var q strings.Builder
	for _, st := range stmts {
		if q.Len() > 0 && q.Len()+len(st) > 4<<20 {
			out = append(out, bulkTrip{sql: q.String()})
			q.Reset()
		}
		if q.Len() > 0 {
			q.WriteString(";\n")
		}
		q.WriteString(st)
	}
	if q.Len() > 0 {
		out = append(out, bulkTrip{sql: q.String()})
	}
	return out
}

// blocks wraps statement-and-guard pairs in compound statements of 64
// (rowsql's Writer.Blocks on MariaDB).
func blocks(stmts []string) []string {
	var out []string
	for i := 0; i < len(stmts); i += 64 {
		out = append(out, "BEGIN NOT ATOMIC\n"+strings.Join(stmts[i:min(i+64, len(stmts))], ";\n")+";\nEND")
	}
	return out
}

func bulkUpdateForms() []bulkForm {
	return []bulkForm{
		{"update/upsert-1MiB", func(r int) []bulkTrip { return splitTrips(upsertStmts(r, 1<<20)) }},
		{"update/UPDATE-guarded-blocks", func(r int) []bulkTrip {
			var st []string
			for id := bulkFirst; id <= bulkLast; id++ {
				w := bulkRowAt(id, r)
				st = append(st, fmt.Sprintf("UPDATE `d`.`history` SET `amount`=%s,`note`=_utf8mb4'%s' WHERE `id`=%d;"+
					"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>1)", w.amount, w.note, id))
			}
			return splitTrips(blocks(st))
		}},
		{"update/UPDATE-client-checked", func(r int) []bulkTrip {
			var st []string
			for id := bulkFirst; id <= bulkLast; id++ {
				w := bulkRowAt(id, r)
				st = append(st, fmt.Sprintf("UPDATE `d`.`history` SET `amount`=%s,`note`=_utf8mb4'%s' WHERE `id`=%d", w.amount, w.note, id))
			}
			return splitTrips(st)
		}},
		{"update/tmp-insert-join-innodb", func(r int) []bulkTrip { return tmpJoinUpdate(r, "InnoDB", false, false) }},
		{"update/tmp-insert-join-memory", func(r int) []bulkTrip { return tmpJoinUpdate(r, "MEMORY", false, false) }},
		{"update/tmp-load-join-memory", func(r int) []bulkTrip { return tmpJoinUpdate(r, "MEMORY", true, false) }},
		{"update/join-run-as-rowsql-writes-it", func(r int) []bulkTrip { return joinRunUpdate(r, "") }},
		{"update/join-run-memory", func(r int) []bulkTrip { return joinRunUpdate(r, " ENGINE=MEMORY") }},
		{"update/load-replace-1MiB", func(r int) []bulkTrip { return loadReplace(r, 1<<20) }},
		{"update/load-replace-4MiB", func(r int) []bulkTrip { return loadReplace(r, 4<<20) }},
		{"update/tmp-full-1MiB-default", func(r int) []bulkTrip { return tmpFullUpdate(r, "") }},
		{"update/tmp-full-1MiB-memory", func(r int) []bulkTrip { return tmpFullUpdate(r, "MEMORY") }},
		{"update/tmp-full-1MiB-aria", func(r int) []bulkTrip { return tmpFullUpdate(r, "Aria") }},
		{"update/tmp-load-straight-join-memory", func(r int) []bulkTrip { return tmpJoinUpdate(r, "MEMORY", true, true) }},
		{"update/tmp-load-straight-join-innodb", func(r int) []bulkTrip { return tmpJoinUpdate(r, "InnoDB", true, true) }},
	}
}

// upsertStmts is today's form: runs of full after images as INSERT ... ON
// DUPLICATE KEY UPDATE with the found-rows guard (rowsql/upsert.go).
func upsertStmts(r, maxStmt int) []string {
	const head = "INSERT INTO `d`.`history` (`id`,`customer_id`,`amount`,`at`,`note`) VALUES "
	tail := func(n int) string {
		return " ON DUPLICATE KEY UPDATE `customer_id`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`customer_id`),NULL)," +
			"`amount`=VALUES(`amount`),`at`=VALUES(`at`),`note`=VALUES(`note`);\n" +
			fmt.Sprintf("SET @binlane_bad=@binlane_bad+(@binlane_n<>%d),@binlane_n=0", n)
	}
	var out []string
	var q strings.Builder
	n := 0
	for id := bulkFirst; id <= bulkLast; id++ {
		if n == 0 {
			q.WriteString(head)
		} else {
			q.WriteByte(',')
		}
		w := bulkRowAt(id, r)
		fmt.Fprintf(&q, "(%d,%d,%s,'%s',_utf8mb4'%s')", id, w.customer, w.amount, w.at, w.note)
		n++
		if q.Len() > maxStmt || id == bulkLast {
			q.WriteString(tail(n))
			out = append(out, q.String())
			q.Reset()
			n = 0
		}
	}
	return out
}

// tmpJoinUpdate loads the changed columns of the after images into a
// temporary table, 10,000 rows at a time, and updates the table from it
// with one multi-table UPDATE per chunk, checked by its found-rows count.
// With straight the target table comes first in the join (STRAIGHT_JOIN)
// over the key range of the chunk, so that MariaDB may update its rows as
// it reads them (safe_update_on_fly) instead of keeping their row ids for
// a second pass (what rowsql's join.go sends).
func tmpJoinUpdate(r int, engine string, load, straight bool) []bulkTrip {
	const chunk = 10000
	create := "CREATE TEMPORARY TABLE `d`.`_binlane_rows` (`id` BIGINT NOT NULL PRIMARY KEY, `amount` DECIMAL(12,2) NOT NULL, " +
		"`note` VARCHAR(40) NOT NULL) ENGINE=" + engine
	var out []bulkTrip
	for from := bulkFirst; from <= bulkLast; from += chunk {
		to := min(from+chunk-1, bulkLast)
		var q strings.Builder
		q.WriteString(create + ";\n")
		var file []byte
		if load {
			var f bytes.Buffer
			for id := from; id <= to; id++ {
				w := bulkRowAt(id, r)
				fmt.Fprintf(&f, "%d\t%s\t%s\n", id, w.amount, w.note)
			}
			file = f.Bytes()
			q.WriteString("LOAD DATA LOCAL INFILE 'Reader::bulkforms' INTO TABLE `d`.`_binlane_rows` CHARACTER SET binary (`id`,`amount`,`note`)")
		} else {
			q.WriteString("INSERT INTO `d`.`_binlane_rows` (`id`,`amount`,`note`) VALUES ")
			for id := from; id <= to; id++ {
				if id > from {
					q.WriteByte(',')
				}
				w := bulkRowAt(id, r)
				fmt.Fprintf(&q, "(%d,%s,_utf8mb4'%s')", id, w.amount, w.note)
			}
		}
		if straight {
			fmt.Fprintf(&q, ";\nUPDATE `d`.`history` `t` STRAIGHT_JOIN `d`.`_binlane_rows` `v` ON `t`.`id`=`v`.`id` "+
				"SET `t`.`amount`=`v`.`amount`,`t`.`note`=`v`.`note` WHERE `t`.`id` BETWEEN %d AND %d", from, to)
		} else {
			q.WriteString(";\nUPDATE `d`.`history` `t` JOIN `d`.`_binlane_rows` `v` USING (`id`) SET `t`.`amount`=`v`.`amount`,`t`.`note`=`v`.`note`")
		}
		fmt.Fprintf(&q, ";\nSET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d);\nDROP TEMPORARY TABLE `d`.`_binlane_rows`", to-from+1)
		out = append(out, bulkTrip{sql: q.String(), file: file})
	}
	return out
}

// tmpJoinDelete loads the block's keys into a temporary MEMORY table in
// chunks of 10,000 and deletes the rows joined to it with del(from, to).
func tmpJoinDelete(del func(from, to int) string) []bulkTrip {
	const chunk = 10000
	var out []bulkTrip
	for from := bulkFirst; from <= bulkLast; from += chunk {
		to := min(from+chunk-1, bulkLast)
		var f bytes.Buffer
		for id := from; id <= to; id++ {
			fmt.Fprintf(&f, "%d\n", id)
		}
		out = append(out, bulkTrip{file: f.Bytes(), sql: "CREATE TEMPORARY TABLE `d`.`_binlane_rows` (`id` BIGINT NOT NULL PRIMARY KEY) ENGINE=MEMORY;\n" +
			"LOAD DATA LOCAL INFILE 'Reader::bulkforms' INTO TABLE `d`.`_binlane_rows` CHARACTER SET binary (`id`);\n" + del(from, to) + ";\n" +
			fmt.Sprintf("SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d);\nDROP TEMPORARY TABLE `d`.`_binlane_rows`", to-from+1)})
	}
	return out
}

// loadReplace sends the full after images as LOAD DATA ... REPLACE into
// the table itself, files of up to size bytes; ROW_COUNT is 2 for each row
// replaced by a different image.
func loadReplace(r, size int) []bulkTrip {
	var out []bulkTrip
	var f bytes.Buffer
	n := 0
	flush := func() {
		out = append(out, bulkTrip{sql: fmt.Sprintf("LOAD DATA LOCAL INFILE 'Reader::bulkforms' REPLACE INTO TABLE `d`.`history` CHARACTER SET binary "+
			"(`id`,`customer_id`,`amount`,`at`,`note`);\nSET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d)", 2*n), file: bytes.Clone(f.Bytes())})
		f.Reset()
		n = 0
	}
	for id := bulkFirst; id <= bulkLast; id++ {
		w := bulkRowAt(id, r)
		fmt.Fprintf(&f, "%d\t%d\t%s\t%s\t%s\n", id, w.customer, w.amount, w.at, w.note)
		n++
		if f.Len() >= size {
			flush()
		}
	}
	if n > 0 {
		flush()
	}
	return out
}

// tmpFullUpdate is the form rowsql would write for an upsert run: the
// full after images (every column) in a temporary table made like the
// target's (CREATE ... SELECT ... LIMIT 0), statements of up to 1 MiB,
// one multi-table UPDATE of every non-key column per statement.
func tmpFullUpdate(r int, engine string) []bulkTrip {
	create := "CREATE OR REPLACE TEMPORARY TABLE `d`.`_binlane_rows` (PRIMARY KEY (`id`))"
	if engine != "" {
		create += " ENGINE=" + engine
	}
	create += " SELECT `id`,`customer_id`,`amount`,`at`,`note` FROM `d`.`history` LIMIT 0"
	var st []string
	for _, u := range upsertStmts(r, 1<<20) {
		head, rest, _ := strings.Cut(u, " VALUES ")
		values, _, _ := strings.Cut(rest, " ON DUPLICATE KEY UPDATE ")
		n := strings.Count(values, "),(") + 1
		st = append(st, create, strings.Replace(head, "`history`", "`_binlane_rows`", 1)+" VALUES "+values,
			"UPDATE `d`.`history` `t` JOIN `d`.`_binlane_rows` `v` USING (`id`) SET `t`.`customer_id`=`v`.`customer_id`,"+
				"`t`.`amount`=`v`.`amount`,`t`.`at`=`v`.`at`,`t`.`note`=`v`.`note`",
			fmt.Sprintf("SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d)", n))
	}
	st = append(st, "DROP TEMPORARY TABLE `d`.`_binlane_rows`")
	return splitTrips(st)
}

// joinRunUpdate is a join run as rowsql writes it (rowsql/join.go): the
// changed columns in a temporary table made like the target's, filled by
// INSERTs of up to 1 MiB, each followed by the UPDATE from it and its
// guard, in a compound statement, and the table's DROP.
func joinRunUpdate(r int, engine string) []bulkTrip {
	create := "CREATE OR REPLACE TEMPORARY TABLE `d`.`_binlane_rows` (PRIMARY KEY (`id`))" + engine + " SELECT `id`,`amount`,`note` FROM `d`.`history` LIMIT 0"
	var st []string
	var q strings.Builder
	n := 0
	flush := func() {
		st = append(st, create, q.String(), "BEGIN NOT ATOMIC\nUPDATE `d`.`history` `binlane_t` JOIN `d`.`_binlane_rows` `binlane_v` USING (`id`) "+
			"SET `binlane_t`.`amount`=`binlane_v`.`amount`,`binlane_t`.`note`=`binlane_v`.`note`;\n"+
			fmt.Sprintf("SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d);\nEND", n), "DROP TEMPORARY TABLE `d`.`_binlane_rows`")
		q.Reset()
		n = 0
	}
	for id := bulkFirst; id <= bulkLast; id++ {
		if n == 0 {
			q.WriteString("INSERT INTO `d`.`_binlane_rows` (`id`,`amount`,`note`) VALUES ")
		} else {
			q.WriteByte(',')
		}
		w := bulkRowAt(id, r)
		fmt.Fprintf(&q, "(%d,%s,_utf8mb4'%s')", id, w.amount, w.note)
		n++
		if q.Len() > 1<<20 {
			flush()
		}
	}
	if n > 0 {
		flush()
	}
	return splitTrips(st)
}

func bulkDeleteForms() []bulkForm {
	in := func(per int, guarded, block bool) func(int) []bulkTrip {
		return func(int) []bulkTrip {
			var st []string
			for from := bulkFirst; from <= bulkLast; from += per {
				to := min(from+per-1, bulkLast)
				var q strings.Builder
				q.WriteString("DELETE FROM `d`.`history` WHERE `id` IN (")
				for id := from; id <= to; id++ {
					if id > from {
						q.WriteByte(',')
					}
					fmt.Fprintf(&q, "%d", id)
				}
				q.WriteByte(')')
				if guarded {
					fmt.Fprintf(&q, ";\nSET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d)", to-from+1)
				}
				st = append(st, q.String())
			}
			if block {
				st = blocks(st)
			}
			return splitTrips(st)
		}
	}
	// between deletes a run of consecutive keys by its range, per statements
	// of per rows, guarded by the row count.
	between := func(per int) func(int) []bulkTrip {
		return func(int) []bulkTrip {
			var st []string
			for from := bulkFirst; from <= bulkLast; from += per {
				to := min(from+per-1, bulkLast)
				st = append(st, fmt.Sprintf("DELETE FROM `d`.`history` WHERE `id` BETWEEN %d AND %d;\n"+
					"SET @binlane_bad=@binlane_bad+(ROW_COUNT()<>%d)", from, to, to-from+1))
			}
			return splitTrips(st)
		}
	}
	return []bulkForm{
		{"delete/IN-500-guarded-blocks", in(500, true, true)},
		{"delete/IN-500-client-checked", in(500, false, false)},
		{"delete/IN-999-client-checked", in(999, false, false)},
		{"delete/range-500", between(500)},
		{"delete/range-10000", between(10000)},
		{"delete/range-100000", between(100000)},
		{"delete/tmp-load-straight-join-memory", func(int) []bulkTrip {
			return tmpJoinDelete(func(from, to int) string {
				return fmt.Sprintf("DELETE `d`.`history` FROM `d`.`history` STRAIGHT_JOIN `d`.`_binlane_rows` "+
					"ON `d`.`history`.`id`=`d`.`_binlane_rows`.`id` WHERE `d`.`history`.`id` BETWEEN %d AND %d", from, to)
			})
		}},
		{"delete/tmp-load-join-memory", func(int) []bulkTrip {
			return tmpJoinDelete(func(int, int) string {
				return "DELETE `d`.`history` FROM `d`.`history` JOIN `d`.`_binlane_rows` USING (`id`)"
			})
		}},
	}
}
