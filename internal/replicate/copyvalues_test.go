package replicate

import (
	"context"
	"testing"
	"time"
)

// TestCopyValues copies values that a chunk's encoding must carry
// unchanged — separators, escapes and NUL inside strings and BITs, "\N"
// as text, empty against NULL, every charset width, the ENUM error value,
// zero dates, extreme floats, geometry, generated columns, an explicit 0
// in an AUTO_INCREMENT column — once as LOAD DATA LOCAL INFILE (the
// target's default) and once as INSERTs (a target with local_infile
// off), and checks which way each copy went. Each chunk costs the source
// one round trip: the columns the listing read for every type are the
// ones a chunk's batch reads (else the chunk is read again).
func TestCopyValues(t *testing.T) {
	for _, tc := range []struct {
		name        string
		localInfile bool
	}{{"load-data", true}, {"inserts", false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if !tc.localInfile {
				e.dst.ExecT(t, "SET GLOBAL local_infile = 0")
			}
			e.src.ExecT(t, "CREATE DATABASE wl", `CREATE TABLE wl.vals (
				id INT AUTO_INCREMENT PRIMARY KEY, s VARCHAR(100) COLLATE utf8mb4_bin, l CHAR(20) CHARACTER SET latin1,
				u VARCHAR(20) CHARACTER SET utf16, t TEXT, b VARBINARY(300), blb BLOB, b1 BIT(1), b64 BIT(64),
				e ENUM('a', 'b'), st SET('x', 'y'), d DATE, dt DATETIME(6), tm TIME(3), ts TIMESTAMP NULL,
				f FLOAT, db DOUBLE, dc DECIMAL(30,10), j JSON, g GEOMETRY, pt POINT,
				gv INT AS (id * 2) VIRTUAL, gs VARCHAR(120) AS (CONCAT(s, '!')) STORED,
				ip4 INET4, ip6 INET6, uu UUID
			) ENGINE=InnoDB`,
				// Row 0's ENUM error value needs a non-strict mode on the
				// target, which must keep its invalid date.
				`SET SESSION sql_mode = 'NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES'`,
				`INSERT INTO wl.vals (id, s, l, u, t, b, blb, b1, b64, e, st, d, dt, tm, ts, f, db, dc, j, g, pt) VALUES
				(0, 'tab\there', 'é\tè', 'ü\n', 'line1\nline2\r\n', X'00090A5C4E0D', NULL, b'1', X'090A5C000000004E', 'zzz', '',
				 '2023-02-30', '2023-04-31 00:00:00', '-838:59:59.000', NULL, 1.17549435e-38, 1e308, -0.0000000001, '{"a": "t\\tn\\n"}',
				 ST_GeomFromText('POLYGON((0 0, 1 0, 1 1, 0 0))'), POINT(-1.5, 2.25)),
				(2, '\\N', '\\', '\\N', '', '', '', b'0', 0, 'b', 'x,y', '2024-02-29', '2024-02-29 23:59:59.999999', '00:00:00',
				 '2038-01-19 03:14:07', -3.4028234e38, -2.2250738585072014e-308, 12345678901234567890.0123456789, '[]', NULL, NULL),
				(3, '😀 trailing  ', 'a ', '', NULL, NULL, '', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
				(4, '', NULL, NULL, '\\\\\\t', X'', X'FF00FF', b'1', X'FFFFFFFFFFFFFFFF', 'a', 'y', '1000-01-01', '1000-01-01 00:00:00', '838:59:59.999',
				 '1970-01-01 00:00:01', 0, -0, 0, 'null', ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 1))'), POINT(0, 0))`,
				`INSERT INTO wl.vals (s, blb) SELECT CONCAT('row ', seq), (SELECT GROUP_CONCAT(CHAR(s.seq) SEPARATOR '') FROM wl.seq_0_to_255 s)
				 FROM wl.seq_1_to_3000`,
				// Types that read a binary string as their binary form.
				`UPDATE wl.vals SET ip4 = CONCAT('10.0.', id % 256, '.9'), ip6 = CONCAT('2001:db8::', HEX(id)), uu = UUID() WHERE id % 3 = 0`,
				`UPDATE wl.vals SET ip6 = '::ffff:1.2.3.4', uu = '00000000-0000-0000-0000-000000000000' WHERE id = 2`)
			var loads0 int64
			e.dst.OpenT(t, "").QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_LOAD'").Scan(&loads0)
			cfg := e.copyConfig(t)
			cfg.Copy.ExitWhenDone = true
			obs := &Observer{}
			cfg.Observer = obs
			if err := Run(ctx, cfg); err != nil {
				t.Fatal(err)
			}
			if st := obs.copier.Stats(); st.RoundTrips.Load() != st.Chunks.Load() {
				t.Errorf("%d round trips to the source for %d chunks, want one each", st.RoundTrips.Load(), st.Chunks.Load())
			}
			var loads int64
			e.dst.OpenT(t, "").QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'COM_LOAD'").Scan(&loads)
			if got := loads - loads0; (got > 0) != tc.localInfile {
				t.Errorf("%d LOAD DATA statements on the target with local_infile %v", got, tc.localInfile)
			}
			e.verifyEqual(t)
		})
	}
}
