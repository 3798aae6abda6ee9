package workload

import (
	"fmt"
	"slices"
)

// Slots is the traffic where an applier that regroups or nets out row
// changes can go wrong (issue 29's trap scenario), on database slots:
//   - unique values that move between rows: a slot's code freed by one
//     transaction and taken by another slot in a later one, and two slots
//     exchanging their codes inside one transaction;
//   - hot counter rows that most transactions update;
//   - parents and children under RESTRICT foreign keys: children inserted
//     after their parent, deleted before it, and moved between parents.
//
// Each session works on slots and families of its own (the codes it moves
// are its own), so the source commits almost everything; the counters are
// shared.
const Slots Mode = "slots"

// slotsPerSession are the slots each session owns (ids s*slotsPerSession+1
// on), half of them holding a code at the start.
const slotsPerSession = 256

// slotsSessions is how many sessions' slots are seeded: sessions beyond
// share the first ones' (and may collide, which the source refuses).
const slotsSessions = 32

func slotsSetup(cfg Config) []string {
	db := cfg.Mode.Schema()
	n := slotsPerSession * slotsSessions
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		`CREATE TABLE IF NOT EXISTS ` + db + `.slot (id INT PRIMARY KEY, code CHAR(10) NULL, holder INT NOT NULL DEFAULT 0,
			v INT NOT NULL DEFAULT 0, UNIQUE KEY code (code)) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.counter (id INT PRIMARY KEY, n BIGINT NOT NULL) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.parent (id BIGINT PRIMARY KEY, name VARCHAR(20) NOT NULL,
			children INT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		`CREATE TABLE IF NOT EXISTS ` + db + `.child (id BIGINT PRIMARY KEY, parent_id BIGINT NOT NULL, qty INT NOT NULL,
			KEY parent (parent_id),
			CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES ` + db + `.parent (id) ON DELETE RESTRICT ON UPDATE RESTRICT
		) ENGINE=InnoDB`,
		fmt.Sprintf("INSERT INTO %[1]s.slot (id, code) SELECT seq, IF(seq %% 2 = 1, %[2]s, NULL) FROM %[1]s.seq_1_to_%[3]d",
			db, slotCodeSQL("seq"), n),
		fmt.Sprintf("INSERT INTO %[1]s.counter SELECT seq, 0 FROM %[1]s.seq_1_to_4", db),
	}
}

// slotCode is code number k; slotCodeSQL is the same in SQL.
func slotCode(k int) string          { return fmt.Sprintf("C%09d", k) }
func slotCodeSQL(expr string) string { return "CONCAT('C', LPAD(" + expr + ", 9, '0'))" }

// slotsState is a session's memory of its slots: which code each holds
// ("" none), and its families (parents with children).
type slotsState struct {
	init     bool
	codes    map[int]string
	free     []string // codes freed and not taken again
	families []family
	next     int64 // families created
}

type family struct {
	id       int64
	children []int64
}

var slotsOps = []op{
	{"free", 15, (*session).slotFree},
	{"take", 15, (*session).slotTake},
	{"swap", 20, (*session).slotSwap},
	{"counter", 25, (*session).slotCounter},
	{"family", 12, (*session).slotFamily},
	{"move-child", 6, (*session).slotMoveChild},
	{"prune", 7, (*session).slotPrune},
}

// slotsOf sets up the session's view of its slots as seeded.
func (s *session) slotsOf() *slotsState {
	st := &s.slots
	if !st.init {
		st.init, st.codes = true, map[int]string{}
		base := (s.id % slotsSessions) * slotsPerSession
		for i := 1; i <= slotsPerSession; i++ {
			if id := base + i; id%2 == 1 {
				st.codes[id] = slotCode(id)
			} else {
				st.codes[id] = ""
			}
		}
	}
	return st
}

// slotWith returns one of the session's slots that holds a code (or none).
func (s *session) slotWith(holding bool) int {
	st := s.slotsOf()
	ids := make([]int, 0, len(st.codes))
	for id, c := range st.codes {
		if (c != "") == holding {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return 0
	}
	slices.Sort(ids)
	return ids[s.rng.IntN(len(ids))]
}

// slotFree frees a slot's code; a later transaction gives it to another.
func (s *session) slotFree() []string {
	st := s.slotsOf()
	id := s.slotWith(true)
	if id == 0 {
		return s.slotCounter()
	}
	st.free = append(st.free, st.codes[id])
	st.codes[id] = ""
	return []string{fmt.Sprintf("UPDATE %s.slot SET code = NULL, v = v + 1 WHERE id = %d", s.schema(), id)}
}

// slotTake gives a freed code to an empty slot.
func (s *session) slotTake() []string {
	st := s.slotsOf()
	id := s.slotWith(false)
	if id == 0 || len(st.free) == 0 {
		return s.slotFree()
	}
	k := s.rng.IntN(len(st.free))
	code := st.free[k]
	st.free = slices.Delete(st.free, k, k+1)
	st.codes[id] = code
	return []string{fmt.Sprintf("UPDATE %s.slot SET code = '%s', holder = %d WHERE id = %d", s.schema(), code, s.id, id)}
}

// slotSwap exchanges the codes of two slots in one transaction, through
// NULL (the unique key holds at every statement).
func (s *session) slotSwap() []string {
	st := s.slotsOf()
	a, b := s.slotWith(true), s.slotWith(true)
	if a == 0 || a == b {
		return s.slotCounter()
	}
	ca, cb := st.codes[a], st.codes[b]
	st.codes[a], st.codes[b] = cb, ca
	db := s.schema()
	return []string{
		fmt.Sprintf("UPDATE %s.slot SET code = NULL WHERE id = %d", db, a),
		fmt.Sprintf("UPDATE %s.slot SET code = '%s' WHERE id = %d", db, ca, b),
		fmt.Sprintf("UPDATE %s.slot SET code = '%s' WHERE id = %d", db, cb, a),
	}
}

// slotCounter bumps a hot counter and one of the session's slots.
func (s *session) slotCounter() []string {
	db := s.schema()
	id := (s.id%slotsSessions)*slotsPerSession + 1 + s.rng.IntN(slotsPerSession)
	return []string{
		fmt.Sprintf("UPDATE %s.counter SET n = n + 1 WHERE id = %d", db, 1+s.rng.IntN(4)),
		fmt.Sprintf("UPDATE %s.slot SET v = v + 1 WHERE id = %d", db, id),
	}
}

// slotFamily inserts a parent and one to three children after it.
func (s *session) slotFamily() []string {
	st := s.slotsOf()
	st.next++
	db := s.schema()
	f := family{id: int64(s.id+1)*1_000_000_000 + st.next}
	out := []string{fmt.Sprintf("INSERT INTO %s.parent (id, name) VALUES (%d, 'family %d')", db, f.id, st.next)}
	for i := range 1 + s.rng.IntN(3) {
		c := f.id*10 + int64(i)
		f.children = append(f.children, c)
		out = append(out, fmt.Sprintf("INSERT INTO %s.child VALUES (%d, %d, %d)", db, c, f.id, 1+s.rng.IntN(9)))
	}
	out = append(out, fmt.Sprintf("UPDATE %s.parent SET children = %d WHERE id = %d", db, len(f.children), f.id))
	st.families = append(st.families, f)
	return out
}

// slotMoveChild moves a child from one of the session's families to
// another.
func (s *session) slotMoveChild() []string {
	st := s.slotsOf()
	if len(st.families) < 2 {
		return s.slotFamily()
	}
	i, j := s.rng.IntN(len(st.families)), s.rng.IntN(len(st.families))
	from, to := &st.families[i], &st.families[j]
	if i == j || len(from.children) == 0 {
		return s.slotCounter()
	}
	c := from.children[len(from.children)-1]
	from.children = from.children[:len(from.children)-1]
	to.children = append(to.children, c)
	db := s.schema()
	return []string{
		fmt.Sprintf("UPDATE %s.child SET parent_id = %d WHERE id = %d", db, to.id, c),
		fmt.Sprintf("UPDATE %s.parent SET children = children - 1 WHERE id = %d", db, from.id),
		fmt.Sprintf("UPDATE %s.parent SET children = children + 1 WHERE id = %d", db, to.id),
	}
}

// slotPrune deletes the session's oldest family: its children first (the
// foreign key restricts), then the parent.
func (s *session) slotPrune() []string {
	st := s.slotsOf()
	if len(st.families) == 0 {
		return s.slotFamily()
	}
	f := st.families[0]
	st.families = st.families[1:]
	db := s.schema()
	var out []string
	for _, c := range f.children {
		out = append(out, fmt.Sprintf("DELETE FROM %s.child WHERE id = %d", db, c))
	}
	return append(out, fmt.Sprintf("DELETE FROM %s.parent WHERE id = %d", db, f.id))
}
