// Package gtid holds global transaction identifiers and positions for both
// server flavors: MariaDB's domain-server-sequence GTIDs with one position
// per replication domain, and MySQL's uuid:interval GTID sets.
//
// The package is pure data: parsing, formatting, containment and adding. It
// must never talk to a server.
package gtid

import (
	"fmt"
	"strings"
)

// Flavor is the server family a GTID comes from.
type Flavor uint8

const (
	MariaDB Flavor = iota + 1
	MySQL
)

func (f Flavor) String() string {
	switch f {
	case MariaDB:
		return "mariadb"
	case MySQL:
		return "mysql"
	}
	return "unknown"
}

// GTID identifies one transaction. For MariaDB, Domain, ServerID and Seq are
// set; for MySQL, SID and Seq (the GNO), and Tag when the source tagged the
// transaction (MySQL 8.3+; replication refuses those, see ErrTagged).
type GTID struct {
	Flavor   Flavor
	Domain   uint32
	ServerID uint32
	Seq      uint64
	SID      UUID
	Tag      string
}

// IsZero reports whether g is unset.
func (g GTID) IsZero() bool { return g.Flavor == 0 }

func (g GTID) String() string {
	switch g.Flavor {
	case MariaDB:
		return fmt.Sprintf("%d-%d-%d", g.Domain, g.ServerID, g.Seq)
	case MySQL:
		if g.Tag != "" {
			return fmt.Sprintf("%s:%s:%d", g.SID, g.Tag, g.Seq)
		}
		return fmt.Sprintf("%s:%d", g.SID, g.Seq)
	}
	return ""
}

// Parse reads one GTID in either flavor: "0-1-42" or "uuid:42".
func Parse(s string) (GTID, error) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, ":") {
		i := strings.LastIndexByte(s, ':')
		if j := strings.IndexByte(s, ':'); j < i && isTag(s[j+1:i]) {
			return GTID{}, fmt.Errorf("%w: gtid %q has the tag %q", ErrTagged, s, s[j+1:i])
		}
		sid, err := ParseUUID(s[:i])
		if err != nil {
			return GTID{}, fmt.Errorf("gtid %q: %w", s, err)
		}
		n, err := parseUint(s[i+1:], 63)
		if err != nil || n == 0 {
			return GTID{}, fmt.Errorf("gtid %q: bad transaction number", s)
		}
		return GTID{Flavor: MySQL, SID: sid, Seq: n}, nil
	}
	g, err := parseMariaGTID(s)
	if err != nil {
		return GTID{}, err
	}
	return g, nil
}

func parseMariaGTID(s string) (GTID, error) {
	parts := strings.Split(s, "-")
	if len(parts) != 3 {
		return GTID{}, fmt.Errorf("gtid %q: want domain-server-sequence", s)
	}
	d, err1 := parseUint(parts[0], 32)
	srv, err2 := parseUint(parts[1], 32)
	seq, err3 := parseUint(parts[2], 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return GTID{}, fmt.Errorf("gtid %q: want three unsigned numbers", s)
	}
	return GTID{Flavor: MariaDB, Domain: uint32(d), ServerID: uint32(srv), Seq: seq}, nil
}

func parseUint(s string, bits int) (uint64, error) {
	if s == "" || len(s) > 20 {
		return 0, fmt.Errorf("bad number %q", s)
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("bad number %q", s)
		}
		d := uint64(c - '0')
		if n > (^uint64(0)-d)/10 {
			return 0, fmt.Errorf("number %q out of range", s)
		}
		n = n*10 + d
	}
	if bits < 64 && n >= 1<<uint(bits) {
		return 0, fmt.Errorf("number %q out of range", s)
	}
	return n, nil
}
