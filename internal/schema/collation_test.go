package schema_test

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/sandbox"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/writeset"
)

func TestLoadCollations(t *testing.T) {
	db := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target}).OpenT(t, "")
	colls, err := schema.LoadCollations(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]schema.Collation{}
	for id, c := range colls {
		if c.ID != id {
			t.Errorf("collation %s listed under id %d", c.Name, id)
		}
		byName[c.Name] = c
	}
	cases := []struct {
		name                      string
		id                        uint16 // 0: any
		charset                   string
		binary, ci, pad, mergesAS bool
	}{
		{"utf8mb4_general_ci", 45, "utf8mb4", false, true, true, false},
		{"utf8mb4_bin", 46, "utf8mb4", true, false, true, false},
		{"binary", 63, "binary", true, false, false, false},
		{"latin1_swedish_ci", 8, "latin1", false, true, true, false},
		{"utf8mb4_nopad_bin", 0, "utf8mb4", true, false, false, false},
		{"utf8mb4_general_nopad_ci", 0, "utf8mb4", false, true, false, false},
		{"utf8mb4_unicode_ci", 224, "utf8mb4", false, true, true, false},
		{"latin1_general_cs", 49, "latin1", false, false, true, false},
		{"utf8mb4_lithuanian_ci", 0, "utf8mb4", false, true, true, true},
		{"utf8mb4_thai_520_w2", 0, "utf8mb4", false, true, true, false},
		// MariaDB 10.10+: listed without id and charset in COLLATIONS; the
		// binlog carries this id, so it must be known.
		{"utf8mb4_uca1400_ai_ci", 2304, "utf8mb4", false, true, true, false},
		{"utf8mb4_uca1400_roman_nopad_as_cs", 0, "utf8mb4", false, false, false, true},
	}
	for _, c := range cases {
		got, ok := byName[c.name]
		switch {
		case !ok:
			t.Errorf("%s: not loaded", c.name)
		case c.id != 0 && got.ID != c.id, got.Charset != c.charset, got.Binary != c.binary, got.CaseInsensitive != c.ci,
			got.PadSpace != c.pad, got.MergesASCII != c.mergesAS:
			t.Errorf("%s: %+v; want id %d charset %s binary %v ci %v pad %v mergesASCII %v",
				c.name, got, c.id, c.charset, c.binary, c.ci, c.pad, c.mergesAS)
		}
	}
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY
		WHERE ID IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if len(colls) != n {
		t.Errorf("%d collations loaded, the server lists %d", len(colls), n)
	}
}

// TestNormalizeAgreesWithServer compares, for every collation of the
// server, the server's own equality with writeset.Normalize's: values the
// server groups together must normalize to the same bytes whenever
// Normalize accepts them (keys never finer than the target's equality),
// for whole values and for a one-character index prefix. The test strings
// are every printable ASCII character, every pair of ASCII letters (for
// contractions such as Lithuanian 'ch' = 'c'), trailing spaces, control
// characters and, for utf8mb4, accents, expansions and emoji. It also
// checks the case and padding classification against the server.
func TestNormalizeAgreesWithServer(t *testing.T) {
	srv := sandbox.StartT(t, sandbox.Options{Role: sandbox.Target})
	ctx := context.Background()
	db := srv.OpenT(t, "")
	db.SetMaxOpenConns(1)
	colls, err := schema.LoadCollations(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	srv.ExecT(t, "CREATE DATABASE o", "CREATE TABLE o.s (id INT AUTO_INCREMENT PRIMARY KEY, b VARBINARY(20), kind CHAR(1))")
	insert := func(kind string, values []string) {
		var q strings.Builder
		q.WriteString("INSERT INTO o.s (b, kind) VALUES ")
		for i, v := range values {
			if i > 0 {
				q.WriteString(",")
			}
			fmt.Fprintf(&q, "(X'%x', '%s')", v, kind)
		}
		srv.ExecT(t, q.String())
	}
	var single, pairs []string
	for c := 0x20; c < 0x7f; c++ {
		single = append(single, string(rune(c)))
	}
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	for _, a := range letters {
		for _, b := range letters {
			pairs = append(pairs, string(a)+string(b))
		}
	}
	insert("s", single) // s: single characters and short strings
	insert("s", []string{"", "a ", "a  ", " a", "A ", "\t", "a\t", "\x00", "a\x00", "\x7f", "dzs", "DZS", "ccs", "cscs",
		"abc", "ABC", "abc ", "ab c"})
	insert("p", pairs) // p: letter pairs
	insert("u", []string{"é", "É", "e", "E", "è", "ß", "ss", "SS", "å", "aa", "æ", "ae", "ø", "ö", "oe", "😀", "😁",
		"ǆ", "dž", "ĳ", "ij", "\u00a0", "a\u00a0", "\u200b", "a\u200b", "ｅ", "ℯ"}) // u: utf8mb4 only

	names := make([]string, 0, len(colls))
	byName := map[string]schema.Collation{}
	for _, c := range colls {
		names = append(names, c.Name)
		byName[c.Name] = c
	}
	sort.Strings(names)
	checked := 0
	for _, name := range names {
		c := byName[name]
		if c.Charset == "binary" {
			continue
		}
		conv := func(col string) string { return fmt.Sprintf("CONVERT(%s USING %s)", col, c.Charset) }
		var ci, pad int
		if err := db.QueryRow(fmt.Sprintf("SELECT %s = %s COLLATE %s, %s = %s COLLATE %s",
			conv("'a'"), conv("'A'"), name, conv("'a '"), conv("'a'"), name)).Scan(&ci, &pad); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (ci == 1) != c.CaseInsensitive || (pad == 1) != c.PadSpace {
			t.Errorf("%s: the server says case-insensitive %v, pad space %v; classified %+v", name, ci == 1, pad == 1, c)
		}
		if _, ok := writeset.Normalize(nil, []byte("a"), c, 0); !ok {
			continue // Normalize claims nothing under this collation
		}
		checked++
		// utf8mb3 sorts like utf8mb4 (minus the characters it cannot hold):
		// the short strings are enough there.
		kinds := "'s','p'"
		switch c.Charset {
		case "utf8mb4":
			kinds = "'s','p','u'"
		case "utf8mb3":
			kinds = "'s'"
		}
		checkGroups(t, db, c, 0, fmt.Sprintf("SELECT GROUP_CONCAT(HEX(b)) FROM o.s WHERE kind IN (%s) GROUP BY %s COLLATE %s HAVING COUNT(*) > 1",
			kinds, conv("b"), name))
		checkGroups(t, db, c, 1, fmt.Sprintf("SELECT GROUP_CONCAT(HEX(b)) FROM o.s WHERE kind = 's' GROUP BY LEFT(%s, 1) COLLATE %s HAVING COUNT(*) > 1",
			conv("b"), name))
	}
	if checked < 100 {
		t.Fatalf("only %d collations checked", checked)
	}
	t.Logf("%d of %d collations checked against the server", checked, len(colls))
}

// checkGroups runs a query returning groups of values (hex, comma
// separated) the server considers equal and checks that Normalize maps the
// members it accepts to the same bytes.
func checkGroups(t *testing.T, db *sql.DB, c schema.Collation, prefix int, q string) {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var group string
		if err := rows.Scan(&group); err != nil {
			t.Fatal(err)
		}
		var first, firstNorm []byte
		for _, h := range strings.Split(group, ",") {
			v, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			n, ok := writeset.Normalize(nil, v, c, prefix)
			if !ok {
				continue
			}
			if first == nil {
				first, firstNorm = v, n
				continue
			}
			if string(n) != string(firstNorm) {
				t.Errorf("%s prefix %d: the server says %q = %q, Normalize gives %q and %q", c.Name, prefix, first, v, firstNorm, n)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
