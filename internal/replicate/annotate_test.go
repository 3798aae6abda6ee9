package replicate

import (
	"context"
	"strings"
	"testing"
)

// TestTargetBinlogWithoutAnnotations: with BINLOG ADMIN (an optional
// grant) binlane's row statements leave no Annotate_rows event in the
// target's binlog — each one repeated a statement carrying whole row
// images, doubling what the target wrote; with the documented grants only,
// the stream runs as before and the annotations stay.
func TestTargetBinlogWithoutAnnotations(t *testing.T) {
	for _, c := range []struct {
		name     string
		optional bool
		want     int // Annotate_rows events of binlane's statements: 0, or at least 1 (-1)
	}{
		{"BINLOG ADMIN", true, 0},
		{"documented grants only", false, -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			ctx := context.Background()
			e.src.ExecT(t, "CREATE DATABASE ann", "CREATE TABLE ann.t (id INT PRIMARY KEY, v VARCHAR(20))")
			e.grant(t, "ann")
			if _, err := e.dst.GrantBinlane(ctx, c.optional, "ann"); err != nil {
				t.Fatal(err)
			}
			e.src.ExecT(t, "INSERT INTO ann.t VALUES (1, 'a'), (2, 'b')", "UPDATE ann.t SET v = 'marker-update' WHERE id = 1",
				"DELETE FROM ann.t WHERE id = 2")
			if err, logs := e.runStream(t, "ann", e.start, gtidPos(t, e.src)); err != nil {
				t.Fatalf("%v\n%s", err, logs)
			}
			annotations := 0
			for _, file := range queryLines(t, e.dst.OpenT(t, ""), "SHOW BINARY LOGS") {
				for _, ev := range queryLines(t, e.dst.OpenT(t, ""), "SHOW BINLOG EVENTS IN '"+strings.Fields(file)[0]+"'") {
					if strings.Contains(ev, "Annotate_rows") && strings.Contains(ev, "`ann`.`t`") &&
						!strings.Contains(ev, "`binlane`.`streams`") { // the stream's own row lists its tables
						t.Log(ev)
						annotations++
					}
				}
			}
			if c.want == 0 && annotations != 0 || c.want < 0 && annotations == 0 {
				t.Errorf("%d Annotate_rows events of binlane's statements in the target's binlog, want %d (-1: some)", annotations, c.want)
			}
			verifyServers(t, e.src, e.dst, "ann")
		})
	}
}
