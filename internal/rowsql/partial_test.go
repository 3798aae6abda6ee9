package rowsql

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/plan"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/txn"
)

var absent = binlog.Value{Kind: binlog.KindAbsent}

// partial marks a change as a MINIMAL/NOBLOB image; for an update it
// completes the after image from the before image as txn does.
func partial(c txn.Change) txn.Change {
	c.Partial = true
	c.FillUnwritten()
	return c
}

// TestPartialImages: partial images are written as plain statements of
// the columns they have, never merged into upserts, multi-row inserts or
// collapsed images; deletes by key still share a statement.
func TestPartialImages(t *testing.T) {
	up := keyed(upsertTable("up", false, nil, "id", "a", "b"))
	coll := keyed(table("coll", 1, true, "id", "a", "b"))
	stamp := keyed(table("stamp", 1, false, "id", "a", "ts"))
	stamp.Cols[2].OnUpdate = true
	const upODKU = " ON DUPLICATE KEY UPDATE `a`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`a`),NULL),`b`=VALUES(`b`)"
	const upGuard = "SET @binlane_bad=@binlane_bad+(@binlane_n<>2),@binlane_n=0"
	cases := []struct {
		name     string
		p        *plan.Table
		collapse bool
		runs     bool
		changes  []txn.Change
		want     []string
	}{
		{"a MINIMAL update sets the written columns, found by key", up, false, false,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(absent, i64(5), absent)))},
			[]string{"UPDATE `d`.`up` SET `a`=5 WHERE `id`=1"}},
		{"partial updates never form an upsert run", up, false, false,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(absent, i64(5), absent))),
				partial(upd(row(i64(2), absent, absent), row(absent, absent, str("x"))))},
			[]string{"UPDATE `d`.`up` SET `a`=5 WHERE `id`=1", "UPDATE `d`.`up` SET `b`=_utf8mb4'x' WHERE `id`=2"}},
		{"partial updates take no run either", up, false, true,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(absent, i64(5), absent))),
				partial(upd(row(i64(2), absent, absent), row(absent, i64(6), absent)))},
			[]string{"UPDATE `d`.`up` SET `a`=5 WHERE `id`=1", "UPDATE `d`.`up` SET `a`=6 WHERE `id`=2"}},
		{"full updates around a partial one keep their run", up, false, false,
			[]txn.Change{upd(row(i64(1), i64(0), null), row(i64(1), i64(1), null)), upd(row(i64(2), i64(0), null), row(i64(2), i64(1), null)),
				partial(upd(row(i64(3), absent, absent), row(absent, i64(5), absent)))},
			[]string{"INSERT INTO `d`.`up` (`id`,`a`,`b`) VALUES (1,1,NULL),(2,1,NULL)" + upODKU, upGuard,
				"UPDATE `d`.`up` SET `a`=5 WHERE `id`=3"}},
		{"a key change moves the row by its old key", up, false, false,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(i64(9), absent, absent)))},
			[]string{"UPDATE `d`.`up` SET `id`=9 WHERE `id`=1"}},
		{"a NOBLOB update leaves the unwritten blob alone", up, false, false,
			[]txn.Change{partial(upd(row(i64(1), i64(2), absent), row(i64(1), i64(3), absent)))},
			[]string{"UPDATE `d`.`up` SET `a`=3 WHERE `id`=1"}},
		{"an ON UPDATE column the source did not write keeps its value", stamp, false, false,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(absent, i64(4), absent)))},
			[]string{"UPDATE `d`.`stamp` SET `a`=4,`ts`=`ts` WHERE `id`=1"}},
		{"partial inserts list their columns, one statement each", up, false, false,
			[]txn.Change{partial(ins(row(i64(1), absent, str("b")))), partial(ins(row(i64(2), i64(3), absent))), ins(row(i64(3), i64(3), null))},
			[]string{"INSERT INTO `d`.`up` (`id`,`b`) VALUES (1,_utf8mb4'b')", "INSERT INTO `d`.`up` (`id`,`a`) VALUES (2,3)",
				"INSERT INTO `d`.`up` (`id`,`a`,`b`) VALUES (3,3,NULL)"}},
		{"partial deletes share a DELETE by key", up, false, true,
			[]txn.Change{partial(del(row(i64(1), absent, absent))), partial(del(row(i64(2), absent, absent)))},
			[]string{"DELETE FROM `d`.`up` WHERE `id` IN (1,2)"}},
		{"a partial change of a collapsible table comes after the collapsed ones before it", coll, true, false,
			[]txn.Change{ins(row(i64(1), i64(0), null)), partial(upd(row(i64(1), absent, absent), row(absent, i64(7), absent))),
				upd(row(i64(1), i64(7), null), row(i64(1), i64(8), null))},
			[]string{"INSERT INTO `d`.`coll` (`id`,`a`,`b`) VALUES (1,0,NULL)", "UPDATE `d`.`coll` SET `a`=7 WHERE `id`=1",
				"INSERT INTO `d`.`coll` (`id`,`a`,`b`) VALUES (1,8,NULL) ON DUPLICATE KEY UPDATE `a`=IF((@binlane_n:=@binlane_n+1)>0,VALUES(`a`),NULL),`b`=VALUES(`b`)",
				"SET @binlane_bad=@binlane_bad+(@binlane_n<>1),@binlane_n=0"}},
		{"the same with runs: held partial changes go first", coll, true, true,
			[]txn.Change{partial(upd(row(i64(1), absent, absent), row(absent, i64(6), absent))), ins(row(i64(2), i64(0), null)),
				partial(upd(row(i64(2), absent, absent), row(absent, i64(7), absent)))},
			[]string{"UPDATE `d`.`coll` SET `a`=6 WHERE `id`=1", "INSERT INTO `d`.`coll` (`id`,`a`,`b`) VALUES (2,0,NULL)",
				"UPDATE `d`.`coll` SET `a`=7 WHERE `id`=2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// One rows item per change, as separate events would be.
			var steps []step
			for _, ch := range c.changes {
				steps = append(steps, step{c.p, []txn.Change{ch}})
			}
			got := writeStatements(t, c.runs, c.collapse, steps)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestPartialInsertImplicitDefaults: a partial insert leaving out a NOT
// NULL column runs without strict mode, so the column takes its implicit
// default as on the source; one leaving out only nullable or
// AUTO_INCREMENT columns stays strict.
func TestPartialInsertImplicitDefaults(t *testing.T) {
	p := table("imp", 1, false, "id", "n", "note")
	p.Target = &schema.Table{Columns: []schema.Column{{Name: "id", AutoIncrement: true}, {Name: "n"}, {Name: "note", Nullable: true}}}
	cases := []struct {
		c    txn.Change
		want string
	}{
		{partial(ins(row(i64(1), absent, absent))),
			"SET STATEMENT sql_mode='NO_AUTO_VALUE_ON_ZERO,ALLOW_INVALID_DATES,NO_ENGINE_SUBSTITUTION' FOR INSERT INTO `d`.`imp` (`id`) VALUES (1)"},
		{partial(ins(row(absent, i64(2), absent))), "INSERT INTO `d`.`imp` (`n`) VALUES (2)"},
	}
	for _, c := range cases {
		got := writeStatements(t, false, false, []step{{p, []txn.Change{c.c}}})
		if len(got) != 1 || got[0] != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestNamed: a partial update or delete needs the whole key that names the
// row on the target in its before image.
func TestNamed(t *testing.T) {
	kv := table("kv", 1, false, "k", "v")
	pair := table("pair", 2, false, "a", "b", "c")
	nokey := table("nokey", 0, false, "a", "b")
	cases := []struct {
		name string
		p    *plan.Table
		c    txn.Change
		want string // "" no error
	}{
		{"full images need nothing", nokey, upd(row(i64(1), i64(2)), row(i64(1), i64(3))), ""},
		{"key present", kv, partial(upd(row(i64(1), absent), row(absent, i64(2)))), ""},
		{"a partial insert needs no key", nokey, partial(ins(row(i64(1), absent))), ""},
		{"a key column missing", pair, partial(del(row(i64(1), absent, absent))), "lacks `b` of the key"},
		{"no key on the target", nokey, partial(del(row(i64(1), absent))), "no primary key or NOT NULL unique key"},
	}
	for _, c := range cases {
		err := Named(c.p, &c.c)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.p.Name)):
			t.Errorf("%s: got %v, want %q and the table", c.name, err, c.want)
		}
	}
}
