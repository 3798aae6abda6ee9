package schema

import (
	"github.com/binlane/binlane/internal/sqlerr"

	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Collation describes one collation id as the server knows it.
type Collation struct {
	ID      uint16
	Name    string
	Charset string
	// PadSpace collations ignore trailing spaces when comparing (all of
	// MariaDB's except the _nopad_ ones, and binary).
	PadSpace bool
	// CaseInsensitive collations (_ci) compare letters without case (and,
	// for most, without accents).
	CaseInsensitive bool
	// Binary compares bytes (the binary charset, and _bin collations except
	// for their trailing-space padding).
	Binary bool
	// MergesASCII collations make distinct printable-ASCII strings equal
	// beyond letter case and trailing spaces: language tailorings (Lithuanian
	// y = i and ch = c, Roman i = j and u = v) and a few 8-bit sort tables
	// (macce M = N, koi8u and cp1251_ukrainian ` = space, geostd8 @ = `).
	// Found by comparing every collation of the server with its own
	// equality (see TestNormalizeAgreesWithServer).
	MergesASCII bool
}

// Collations maps collation ids to their definitions.
type Collations map[uint16]Collation

// LoadCollations reads every collation the server knows.
//
// MariaDB 10.10 and later list their UCA 14 collations in COLLATIONS
// without a charset and without an id ("uca1400_ai_ci"); the ids a binlog
// table map carries (utf8mb4_uca1400_ai_ci = 2304) and the names
// information_schema.COLUMNS shows are only in
// COLLATION_CHARACTER_SET_APPLICABILITY, as FULL_COLLATION_NAME. Older
// servers and MySQL lack that column: they list everything in COLLATIONS.
func LoadCollations(ctx context.Context, db *sql.DB) (Collations, error) {
	rows, err := db.QueryContext(ctx, `SELECT ID, FULL_COLLATION_NAME, CHARACTER_SET_NAME
		FROM information_schema.COLLATION_CHARACTER_SET_APPLICABILITY WHERE ID IS NOT NULL`)
	if sqlerr.Is(err, sqlerr.UnknownColumn) {
		rows, err = db.QueryContext(ctx, `SELECT ID, COLLATION_NAME, CHARACTER_SET_NAME FROM information_schema.COLLATIONS WHERE ID IS NOT NULL`)
	}
	if err != nil {
		return nil, fmt.Errorf("read collations: %w", err)
	}
	defer rows.Close()
	out := Collations{}
	for rows.Next() {
		var c Collation
		var cs sql.NullString
		if err := rows.Scan(&c.ID, &c.Name, &cs); err != nil {
			return nil, fmt.Errorf("read collations: %w", err)
		}
		c.Charset = cs.String
		classify(&c)
		out[c.ID] = c
	}
	return out, rows.Err()
}

// ClassifyCollation describes a collation known only by name (one the
// server did not list with an id).
func ClassifyCollation(name, charset string) Collation {
	c := Collation{Name: name, Charset: charset}
	classify(&c)
	return c
}

func classify(c *Collation) {
	name := strings.ToLower(c.Name)
	c.Binary = c.Charset == "binary" || strings.HasSuffix(name, "_bin") || strings.HasSuffix(name, "_nopad_bin")
	// _w2 (thai_520_w2) compares on two weight levels: accents, not case.
	c.CaseInsensitive = strings.Contains(name, "_ci") || strings.HasSuffix(name, "_w2")
	c.PadSpace = c.Charset != "binary" && !strings.Contains(name, "_nopad_")
	for _, part := range mergesASCII {
		if strings.Contains(name, part) {
			c.MergesASCII = true
		}
	}
}

// mergesASCII names the collations (or parts of their names) of
// Collation.MergesASCII; _lt_0900_ and _la_0900_ are MySQL 8's Lithuanian
// and Latin (Roman) tailorings.
var mergesASCII = []string{"_lithuanian_", "_roman_", "_lt_0900_", "_la_0900_",
	"macce_general_", "koi8u_general_", "cp1251_ukrainian_", "geostd8_general_"}

// Lookup returns a collation by id.
func (cs Collations) Lookup(id uint16) (Collation, bool) {
	c, ok := cs[id]
	return c, ok
}

// Charset names the character set of a collation id.
func (cs Collations) Charset(id uint16) (string, bool) {
	c, ok := cs[id]
	return c.Charset, ok
}
