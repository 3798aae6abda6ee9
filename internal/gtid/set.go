package gtid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Set is a replication position. For MariaDB it is the last applied GTID
// of every domain (what @@gtid_slave_pos holds); for MySQL it is a GTID set
// (what @@gtid_executed holds). The zero Set is empty and of no flavor; the
// first Add fixes the flavor.
//
// A Set is not safe for concurrent use; Clone it to hand it to another
// goroutine.
type Set struct {
	flavor  Flavor
	domains []GTID              // MariaDB: sorted by Domain, one per domain
	sids    map[tsid][]Interval // MySQL: per source id and tag, sorted, merged
}

// tsid is what MySQL numbers transactions under: a source id and, from
// MySQL 8.3, an optional tag. Untagged transactions have the tag "".
type tsid struct {
	SID UUID
	Tag string
}

// Interval is a half-open range [Start, End) of MySQL transaction numbers.
type Interval struct{ Start, End uint64 }

// ParseSet reads a position in either flavor: "0-1-10,1-2-5" or
// "uuid:1-10:12,uuid2:1-3". An empty string gives an empty Set.
func ParseSet(s string) (Set, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Set{}, nil
	}
	if strings.Contains(s, ":") {
		return parseMySQLSet(s)
	}
	var set Set
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		g, err := parseMariaGTID(part)
		if err != nil {
			return Set{}, err
		}
		if _, ok := set.Domain(g.Domain); ok {
			return Set{}, fmt.Errorf("gtid position %q: domain %d appears twice", s, g.Domain)
		}
		set.Add(g)
	}
	return set, nil
}

// ErrTagged is the error of a tagged GTID or GTID set (MySQL 8.3+:
// uuid:tag:1-5) where binlane would have to follow it: a Set can hold tags
// (a binlog file's Previous_gtids, for binlog dump), but positions given by
// the user or saved by a replica are untagged, and a replication stream
// refuses tagged transactions.
var ErrTagged = errors.New("tagged GTIDs (MySQL 8.3+) are not supported")

// isTag reports whether a field after a source id is a MySQL tag (a letter
// or _ first, then letters, digits and _) rather than an interval: it gets
// a message about tags instead of "bad interval".
func isTag(field string) bool {
	if field == "" || len(field) > 32 || !(field[0] == '_' || unicode.IsLetter(rune(field[0]))) {
		return false
	}
	for _, c := range field {
		if c != '_' && !(c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c))) {
			return false
		}
	}
	return true
}

func parseMySQLSet(s string) (Set, error) {
	set := Set{flavor: MySQL, sids: map[tsid][]Interval{}}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fields := strings.Split(part, ":")
		sid, err := ParseUUID(fields[0])
		if err != nil {
			return Set{}, fmt.Errorf("gtid set %q: %w", s, err)
		}
		if len(fields) < 2 {
			return Set{}, fmt.Errorf("gtid set %q: %s has no intervals", s, fields[0])
		}
		for _, iv := range fields[1:] {
			if isTag(iv) {
				return Set{}, fmt.Errorf("%w: gtid set %q has the tag %q", ErrTagged, s, iv)
			}
			lo, hi, ok := strings.Cut(iv, "-")
			a, err := parseUint(lo, 63)
			if err != nil || a == 0 {
				return Set{}, fmt.Errorf("gtid set %q: bad interval %q", s, iv)
			}
			b := a
			if ok {
				if b, err = parseUint(hi, 63); err != nil || b < a {
					return Set{}, fmt.Errorf("gtid set %q: bad interval %q", s, iv)
				}
			}
			set.addInterval(tsid{SID: sid}, Interval{a, b + 1})
		}
	}
	return set, nil
}

// Flavor returns the flavor of the set, or 0 when it is empty and unset.
func (s Set) Flavor() Flavor { return s.flavor }

// IsEmpty reports whether the set holds no transaction.
func (s Set) IsEmpty() bool { return len(s.domains) == 0 && len(s.sids) == 0 }

// Clone returns an independent copy.
func (s Set) Clone() Set {
	c := Set{flavor: s.flavor, domains: slices.Clone(s.domains)}
	if s.sids != nil {
		c.sids = make(map[tsid][]Interval, len(s.sids))
		for k, v := range s.sids {
			c.sids[k] = slices.Clone(v)
		}
	}
	return c
}

// Domain returns the last GTID of a MariaDB domain.
func (s Set) Domain(d uint32) (GTID, bool) {
	i, ok := slices.BinarySearchFunc(s.domains, d, func(g GTID, d uint32) int { return cmpU32(g.Domain, d) })
	if !ok {
		return GTID{}, false
	}
	return s.domains[i], true
}

// Domains returns the per-domain GTIDs of a MariaDB position, by domain.
func (s Set) Domains() []GTID { return slices.Clone(s.domains) }

// Add records g as applied. For MariaDB it becomes its domain's position
// (MariaDB positions are the last GTID per domain, whatever came before);
// for MySQL its number joins the set.
func (s *Set) Add(g GTID) {
	if s.flavor == 0 {
		s.flavor = g.Flavor
	}
	switch g.Flavor {
	case MariaDB:
		i, ok := slices.BinarySearchFunc(s.domains, g.Domain, func(x GTID, d uint32) int { return cmpU32(x.Domain, d) })
		if ok {
			s.domains[i] = g
		} else {
			s.domains = slices.Insert(s.domains, i, g)
		}
	case MySQL:
		if s.sids == nil {
			s.sids = map[tsid][]Interval{}
		}
		s.addInterval(tsid{g.SID, g.Tag}, Interval{g.Seq, g.Seq + 1})
	}
}

func (s *Set) addInterval(sid tsid, iv Interval) {
	ivs := s.sids[sid]
	i := sort.Search(len(ivs), func(i int) bool { return ivs[i].End >= iv.Start })
	j := i
	for j < len(ivs) && ivs[j].Start <= iv.End {
		iv.Start = min(iv.Start, ivs[j].Start)
		iv.End = max(iv.End, ivs[j].End)
		j++
	}
	ivs = slices.Replace(ivs, i, j, iv)
	s.sids[sid] = ivs
}

// Contains reports whether g is at or before the position. For MariaDB that
// means g's domain has reached g's sequence number (strict mode keeps each
// domain ordered); for MySQL that g's number is in the set.
func (s Set) Contains(g GTID) bool {
	switch g.Flavor {
	case MariaDB:
		cur, ok := s.Domain(g.Domain)
		return ok && cur.Seq >= g.Seq
	case MySQL:
		for _, iv := range s.sids[tsid{g.SID, g.Tag}] {
			if g.Seq >= iv.Start && g.Seq < iv.End {
				return true
			}
		}
	}
	return false
}

// ContainsSet reports whether every transaction of o is in s.
func (s Set) ContainsSet(o Set) bool {
	for _, g := range o.domains {
		if !s.Contains(g) {
			return false
		}
	}
	for sid, ivs := range o.sids {
		for _, iv := range ivs {
			if !s.containsInterval(sid, iv) {
				return false
			}
		}
	}
	return true
}

func (s Set) containsInterval(sid tsid, iv Interval) bool {
	for _, x := range s.sids[sid] {
		if iv.Start >= x.Start && iv.End <= x.End {
			return true
		}
	}
	return false
}

// Equal reports whether both sets hold the same transactions.
func (s Set) Equal(o Set) bool { return s.ContainsSet(o) && o.ContainsSet(s) }

// String formats the set the way the server does. A source id is written
// once, its untagged intervals first, then each tag with its intervals:
// "uuid:1-5:tag1:1-3" (MySQL 8.3+; ParseSet refuses tags).
func (s Set) String() string {
	var b strings.Builder
	for i, g := range s.domains {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d-%d-%d", g.Domain, g.ServerID, g.Seq)
	}
	var last *tsid
	for _, k := range s.sortedSIDs() {
		if last == nil || last.SID != k.SID {
			if last != nil {
				b.WriteByte(',')
			}
			b.WriteString(k.SID.String())
		}
		last = &k
		if k.Tag != "" {
			b.WriteByte(':')
			b.WriteString(k.Tag)
		}
		for _, iv := range s.sids[k] {
			if iv.End-1 == iv.Start {
				fmt.Fprintf(&b, ":%d", iv.Start)
			} else {
				fmt.Fprintf(&b, ":%d-%d", iv.Start, iv.End-1)
			}
		}
	}
	return b.String()
}

// sortedSIDs orders by source id, then tag (untagged first), as the
// server does.
func (s Set) sortedSIDs() []tsid {
	keys := make([]tsid, 0, len(s.sids))
	for k := range s.sids {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b tsid) int {
		if c := strings.Compare(string(a.SID[:]), string(b.SID[:])); c != 0 {
			return c
		}
		return strings.Compare(a.Tag, b.Tag)
	})
	return keys
}

// Tagged reports whether any transaction of the set has a tag.
func (s Set) Tagged() bool {
	for k := range s.sids {
		if k.Tag != "" {
			return true
		}
	}
	return false
}

// EncodeMySQL returns the binary GTID-set layout of COM_BINLOG_DUMP_GTID and
// PREVIOUS_GTIDS: n_sids, then per sid the uuid, n_intervals and half-open
// intervals, all little-endian. A set with tags takes MySQL 8.3's tagged
// layout: the format byte (1) at both ends of the count, which sits in
// bits 8-55, and each uuid followed by its tag (a variable-length size,
// then the bytes; "" for untagged intervals).
func (s Set) EncodeMySQL() []byte {
	sids := s.sortedSIDs()
	tagged := s.Tagged()
	n := uint64(len(sids))
	if tagged {
		n = formatTagged<<56 | n<<8 | formatTagged
	}
	out := binary.LittleEndian.AppendUint64(nil, n)
	for _, k := range sids {
		out = append(out, k.SID[:]...)
		if tagged {
			out = AppendVarlen(out, uint64(len(k.Tag)))
			out = append(out, k.Tag...)
		}
		ivs := s.sids[k]
		out = binary.LittleEndian.AppendUint64(out, uint64(len(ivs)))
		for _, iv := range ivs {
			out = binary.LittleEndian.AppendUint64(out, iv.Start)
			out = binary.LittleEndian.AppendUint64(out, iv.End)
		}
	}
	return out
}

// formatTagged is the format byte of the tagged binary set layout.
const formatTagged = 1

// DecodeMySQL reads the binary GTID-set layout, untagged or tagged.
func DecodeMySQL(b []byte) (Set, error) {
	set := Set{flavor: MySQL, sids: map[tsid][]Interval{}}
	if len(b) < 8 {
		return Set{}, fmt.Errorf("gtid set: %d bytes, need at least 8", len(b))
	}
	n := binary.LittleEndian.Uint64(b)
	tagged := false
	switch format := n >> 56; format {
	case 0:
	case formatTagged:
		if n&0xff != formatTagged {
			return Set{}, fmt.Errorf("gtid set: tagged format byte 0x%x at one end of the count, 0x%x at the other", format, n&0xff)
		}
		tagged, n = true, n>>8&(1<<48-1)
	default:
		return Set{}, fmt.Errorf("gtid set: unknown format 0x%x", format)
	}
	b = b[8:]
	for i := uint64(0); i < n; i++ {
		if len(b) < 16 {
			return Set{}, fmt.Errorf("gtid set: truncated at source id %d", i)
		}
		var k tsid
		copy(k.SID[:], b[:16])
		b = b[16:]
		if tagged {
			tl, size := Varlen(b)
			if size == 0 || tl > maxTagLen || tl > uint64(len(b)-size) {
				return Set{}, fmt.Errorf("gtid set: bad tag length at source id %d", i)
			}
			k.Tag = string(b[size : size+int(tl)])
			b = b[size+int(tl):]
			if k.Tag != "" && !isTag(k.Tag) {
				return Set{}, fmt.Errorf("gtid set: %q is not a tag", k.Tag)
			}
		}
		if len(b) < 8 {
			return Set{}, fmt.Errorf("gtid set: truncated at source id %d", i)
		}
		m := binary.LittleEndian.Uint64(b)
		b = b[8:]
		if m > uint64(len(b))/16 {
			return Set{}, fmt.Errorf("gtid set: %d intervals do not fit in %d bytes", m, len(b))
		}
		for j := uint64(0); j < m; j++ {
			iv := Interval{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:])}
			b = b[16:]
			if iv.Start == 0 || iv.End <= iv.Start {
				return Set{}, fmt.Errorf("gtid set: bad interval [%d,%d) for %s", iv.Start, iv.End, k.SID)
			}
			set.addInterval(k, iv)
		}
	}
	return set, nil
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
