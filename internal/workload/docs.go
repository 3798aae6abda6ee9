package workload

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/sqlquote"
)

// Documents and wide rows: docs.doc holds JSON documents of 2-20 KB
// (every update of one logs both whole images), docs.profile rows of 60
// columns (2-4 KB) of which an update changes a few.
const (
	docsSeeded   = 2000 // documents
	docsProfiles = 5000
	profileTexts = 20 // VARCHAR(200) columns t01..t20
	profileInts  = 20 // i01..i20
	profileDecs  = 10 // d01..d10
	profileTimes = 10 // at01..at10
)

func profileColumns() (names, defs []string) {
	add := func(prefix string, n int, def string) {
		for i := 1; i <= n; i++ {
			name := fmt.Sprintf("%s%02d", prefix, i)
			names, defs = append(names, name), append(defs, name+" "+def)
		}
	}
	add("t", profileTexts, "VARCHAR(200) NOT NULL")
	add("i", profileInts, "INT NOT NULL")
	add("d", profileDecs, "DECIMAL(14,4) NOT NULL")
	add("at", profileTimes, "DATETIME(6) NOT NULL")
	return names, defs
}

func docsSetup(cfg Config) []string {
	db := cfg.Mode.Schema()
	_, defs := profileColumns()
	var seedCols []string // the seeded values, in profileColumns' order
	for i := 1; i <= profileTexts; i++ {
		seedCols = append(seedCols, fmt.Sprintf("REPEAT(CHAR(65 + (seq + %d) %% 26), 100 + (seq * %d) %% 100)", i, i))
	}
	for i := 1; i <= profileInts; i++ {
		seedCols = append(seedCols, fmt.Sprintf("seq * %d", i))
	}
	for i := 1; i <= profileDecs; i++ {
		seedCols = append(seedCols, fmt.Sprintf("seq / %d", i))
	}
	for range profileTimes {
		seedCols = append(seedCols, "NOW(6) - INTERVAL seq MINUTE")
	}
	// A seeded document: an object with a padded field, 2-20 KB.
	return []string{
		"CREATE DATABASE IF NOT EXISTS " + db,
		`CREATE TABLE IF NOT EXISTS ` + db + `.doc (
			id BIGINT PRIMARY KEY,
			customer_id INT NOT NULL,
			kind VARCHAR(20) NOT NULL,
			version INT NOT NULL,
			updated DATETIME(6) NOT NULL,
			body JSON NOT NULL,
			KEY customer (customer_id)
		) ENGINE=InnoDB`,
		"CREATE TABLE IF NOT EXISTS " + db + ".profile (id INT PRIMARY KEY, " + strings.Join(defs, ", ") + ") ENGINE=InnoDB",
		fmt.Sprintf("INSERT INTO %[1]s.doc SELECT seq, 1 + seq %% 1000, 'invoice', 1, NOW(6), "+
			"JSON_OBJECT('id', seq, 'status', 'open', 'pad', REPEAT('x', 2000 + seq * 7919 %% 18000)) FROM %[1]s.seq_1_to_%[2]d",
			db, docsSeeded),
		fmt.Sprintf("INSERT INTO %[1]s.profile SELECT seq, %[2]s FROM %[1]s.seq_1_to_%[3]d", db, strings.Join(seedCols, ", "), docsProfiles),
	}
}

var docsOps = []op{
	{"insert-doc", 25, (*session).docInsert},
	{"patch-doc", 35, (*session).docPatch},
	{"replace-doc", 10, (*session).docReplace},
	{"delete-doc", 5, (*session).docDelete},
	{"profile", 25, (*session).profileUpdate},
}

// docID is a document to change: a seeded one or one the session wrote.
func (s *session) docID() int64 {
	if s.docs > 0 && s.rng.IntN(2) == 0 {
		return int64(s.id+1)*1_000_000_000 + int64(1+s.rng.IntN(s.docs))
	}
	return int64(1 + s.rng.IntN(docsSeeded))
}

// document returns a JSON document of 2-20 KB: an invoice with lines,
// and a memo that brings it to its size.
func (s *session) document(id int64) string {
	size := 2048 + s.rng.IntN(18*1024+1)
	var b strings.Builder
	fmt.Fprintf(&b, `{"id": %d, "status": "open", "customer": {"id": %d, "name": "Customer %d", "address": {"street": "%d Main St", "city": "Springfield"}}, "lines": [`,
		id, 1+s.rng.IntN(1000), s.rng.IntN(1000), s.rng.IntN(999))
	const tail = `], "memo": ""}`
	for n := 0; b.Len() < size-len(tail)-300; n++ {
		if n > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"sku": "%s", "qty": %d, "price": %s, "note": "%s"}`, sku(1+s.rng.IntN(docItems)), 1+s.rng.IntN(9),
			money(itemCents(s.rng.IntN(docItems))), strings.Repeat(string(rune('a'+s.rng.IntN(26))), 20+s.rng.IntN(100)))
	}
	b.WriteString(`], "memo": "`)
	b.WriteString(strings.Repeat("m", max(0, size-b.Len()-len(`"}`))))
	b.WriteString(`"}`)
	return b.String()
}

func (s *session) docInsert() []string {
	s.docs++
	id := int64(s.id+1)*1_000_000_000 + int64(s.docs)
	return []string{fmt.Sprintf("INSERT INTO %s.doc VALUES (%d, %d, 'invoice', 1, NOW(6), %s)", s.schema(), id, 1+s.rng.IntN(1000),
		sqlquote.String(s.document(id)))}
}

// docPatch changes a field of a document in place (JSON_SET): the binlog
// still carries both whole images.
func (s *session) docPatch() []string {
	status := []string{"open", "paid", "sent", "void"}[s.rng.IntN(4)]
	return []string{fmt.Sprintf("UPDATE %s.doc SET body = JSON_SET(body, '$.status', '%s', '$.seen', %d), version = version + 1, "+
		"updated = NOW(6) WHERE id = %d", s.schema(), status, s.rng.IntN(1000), s.docID())}
}

func (s *session) docReplace() []string {
	id := s.docID()
	return []string{fmt.Sprintf("UPDATE %s.doc SET body = %s, version = version + 1, updated = NOW(6) WHERE id = %d",
		s.schema(), sqlquote.String(s.document(id)), id)}
}

func (s *session) docDelete() []string {
	return []string{fmt.Sprintf("DELETE FROM %s.doc WHERE id = %d", s.schema(), s.docID())}
}

// profileUpdate changes three columns of a wide row.
func (s *session) profileUpdate() []string {
	names, _ := profileColumns()
	var set []string
	for range 3 {
		n := names[s.rng.IntN(len(names))]
		switch {
		case strings.HasPrefix(n, "at"):
			set = append(set, n+" = NOW(6)")
		case n[0] == 't':
			set = append(set, fmt.Sprintf("%s = %s", n, sqlquote.String(strings.Repeat(string(rune('A'+s.rng.IntN(26))), 50+s.rng.IntN(150)))))
		case n[0] == 'i':
			set = append(set, fmt.Sprintf("%s = %s + 1", n, n))
		default:
			set = append(set, fmt.Sprintf("%s = %s * 1.01", n, n))
		}
	}
	return []string{fmt.Sprintf("UPDATE %s.profile SET %s WHERE id = %d", s.schema(), strings.Join(set, ", "), 1+s.rng.IntN(docsProfiles))}
}
