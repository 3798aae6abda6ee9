package binlog

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestContextEvents(t *testing.T) {
	d, b := mariaDecoder(t, true)
	ev, err := d.Decode(b.event(EventIntvar, 0, binary.LittleEndian.AppendUint64([]byte{IntvarInsertID}, 42)))
	if err != nil {
		t.Fatal(err)
	}
	if iv := ev.Data.(*IntvarEvent); iv.Type != IntvarInsertID || iv.Value != 42 {
		t.Fatalf("intvar %+v", iv)
	}
	if _, err := d.Decode(b.event(EventIntvar, 0, binary.LittleEndian.AppendUint64([]byte{9}, 1))); err == nil {
		t.Fatal("intvar of type 9 accepted")
	}
	rnd := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 7), 8)
	ev, err = d.Decode(b.event(EventRand, 0, rnd))
	if err != nil {
		t.Fatal(err)
	}
	if r := ev.Data.(*RandEvent); r.Seed1 != 7 || r.Seed2 != 8 {
		t.Fatalf("rand %+v", r)
	}

	userVar := func(name string, null bool, typ byte, coll uint32, val []byte, flags ...byte) []byte {
		body := binary.LittleEndian.AppendUint32(nil, uint32(len(name)))
		body = append(body, name...)
		if null {
			return append(body, 1)
		}
		body = append(body, 0, typ)
		body = binary.LittleEndian.AppendUint32(body, coll)
		body = binary.LittleEndian.AppendUint32(body, uint32(len(val)))
		body = append(body, val...)
		return append(body, flags...)
	}
	neg := binary.LittleEndian.AppendUint64(nil, uint64(math.MaxUint64)) // -1, or 2^64-1 unsigned
	dec := []byte{5, 2}
	dec = append(dec, 0x80, 0x7b, 0x2d) // DECIMAL(5,2) 123.45
	cases := []struct {
		body  []byte
		check func(u *UserVarEvent) bool
	}{
		{userVar("n", true, 0, 0, nil), func(u *UserVarEvent) bool { return u.Null && u.Name == "n" }},
		{userVar("i", false, UserVarInt, 63, neg), func(u *UserVarEvent) bool { n, _ := u.Int(); return n == -1 && !u.Unsigned }},
		{userVar("u", false, UserVarInt, 63, neg, 1), func(u *UserVarEvent) bool { _, n := u.Int(); return n == math.MaxUint64 && u.Unsigned }},
		{userVar("r", false, UserVarReal, 63, binary.LittleEndian.AppendUint64(nil, math.Float64bits(1.5))),
			func(u *UserVarEvent) bool { return u.Real() == 1.5 }},
		{userVar("d", false, UserVarDecimal, 63, dec), func(u *UserVarEvent) bool { s, err := u.DecimalText(); return err == nil && s == "123.45" }},
		{userVar("s", false, UserVarString, 8, []byte{0x83, 'x'}), func(u *UserVarEvent) bool { return u.Collation == 8 && string(u.Value) == "\x83x" }},
	}
	for _, c := range cases {
		ev, err := d.Decode(b.event(EventUserVar, 0, c.body))
		if err != nil {
			t.Fatal(err)
		}
		if u := ev.Data.(*UserVarEvent); !c.check(u) {
			t.Errorf("user variable %+v", u)
		}
	}
	for name, body := range map[string][]byte{
		"short int":    userVar("i", false, UserVarInt, 63, []byte{1, 2}),
		"unknown type": userVar("x", false, 9, 63, []byte{1}),
		"bad decimal":  userVar("d", false, UserVarDecimal, 63, []byte{70, 2, 0}),
		"truncated":    userVar("s", false, UserVarString, 8, []byte("abc"))[:12],
	} {
		if _, err := d.Decode(b.event(EventUserVar, 0, body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// A user variable's value outlives the event buffer it was decoded from.
func TestUserVarCopiesValue(t *testing.T) {
	d, b := mariaDecoder(t, false)
	body := binary.LittleEndian.AppendUint32(nil, 1)
	body = append(body, 's', 0, UserVarString)
	body = binary.LittleEndian.AppendUint32(body, 45)
	body = binary.LittleEndian.AppendUint32(body, 3)
	body = append(body, "abc"...)
	raw := b.event(EventUserVar, 0, body)
	ev, err := d.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		raw[i] = 'z'
	}
	if u := ev.Data.(*UserVarEvent); string(u.Value) != "abc" {
		t.Fatalf("value %q after the buffer changed", u.Value)
	}
}

func TestExplicitDefaultsByVersion(t *testing.T) {
	for _, c := range []struct {
		version string
		want    bool
	}{
		{"10.11.19-MariaDB-0+deb12u1-log", true},
		{"11.4.2-MariaDB", true},
		{"10.6.11-MariaDB", true},
		{"10.6.10-MariaDB", false},
		{"10.5.18-MariaDB-log", true},
		{"10.4.26-MariaDB", false},
		{"10.10.1-MariaDB", false},
		{"10.10.2-MariaDB", true},
		{"10.2.44-MariaDB", false},
		{"5.5.5-10.11.6-MariaDB", true},
		{"garbage", false},
	} {
		if got := mariaWritesExplicitDefaults(c.version); got != c.want {
			t.Errorf("%s: %v, want %v", c.version, got, c.want)
		}
	}
	// An old MariaDB leaves the setting unknown whatever flags2 says.
	b := newBuilder(true)
	d := NewDecoder()
	d.SetPosition("binlog.000001", 4)
	if _, err := d.Decode(b.event(EventFormatDescription, 0, fdeBody("10.6.5-MariaDB-log", false, true))); err != nil {
		t.Fatal(err)
	}
	st := binary.LittleEndian.AppendUint32([]byte{0}, Flags2ExplicitDefaultsTS)
	ev, err := d.Decode(b.event(EventQuery, 0, queryWithStatus(st, "db", "CREATE TABLE t (a TIMESTAMP)")))
	if err != nil {
		t.Fatal(err)
	}
	if s := ev.Data.(*QueryEvent).Status; s.HasExplicitDefaultsTS {
		t.Fatalf("10.6.5: explicit defaults taken from flags2: %+v", s)
	}
}

func TestAlterPhase(t *testing.T) {
	for flags, want := range map[byte]AlterPhase{0: AlterNone, mariaFlExtraStartAlt: AlterStart,
		mariaFlExtraCommitAlt: AlterCommit, mariaFlExtraRollbkAlt: AlterRollback} {
		g := MariaGTIDEvent{FlagsExtra: flags}
		if got := g.AlterPhase(); got != want {
			t.Errorf("flags %d: %v, want %v", flags, got, want)
		}
	}
	if !strings.Contains((&XAID{FormatID: 1, GTRID: []byte("x1")}).String(), "X'7831',X'',1") {
		t.Fatal("XA id format")
	}
}
