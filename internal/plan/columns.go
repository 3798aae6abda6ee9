package plan

import (
	"fmt"
	"strings"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
	"github.com/binlane/binlane/internal/sqlquote"
)

// mapColumns pairs source columns with target columns by name and checks
// that their types can hold each other's values.
func (b *Builder) mapColumns(p *Table) error {
	tm, t := p.Source, p.Target
	p.Cols = make([]Col, len(tm.Columns))
	for i := range tm.Columns {
		sc := &tm.Columns[i]
		ti, ok := t.Column(sc.Name)
		if !ok && longUniqueHash(sc.Name, t) {
			// Written by the target itself; never in the target's column list.
			p.Cols[i] = Col{Name: sc.Name, Quoted: sqlquote.Name(sc.Name), Target: -1, Generated: true}
			continue
		}
		if !ok {
			return fmt.Errorf("table %s: column %s is missing on the target", p.Name, sqlquote.Name(sc.Name))
		}
		tc := &t.Columns[ti]
		if err := compatible(sc, tc); err != nil {
			return fmt.Errorf("table %s column %s: %w", p.Name, sqlquote.Name(sc.Name), err)
		}
		c := Col{Name: tc.Name, Quoted: sqlquote.Name(tc.Name), Target: ti, Generated: tc.Generated, OnUpdate: tc.OnUpdate}
		if sc.IsCharacter(binlog.FlavorMariaDB) || sc.Type == binlog.TypeEnum || sc.Type == binlog.TypeSet {
			if coll, ok := b.collations.Lookup(sc.Collation); ok && coll.Charset != "binary" {
				c.Introducer = coll.Charset
			} else if !ok && sc.Collation != 0 {
				return fmt.Errorf("table %s column %s: unknown collation id %d", p.Name, sqlquote.Name(sc.Name), sc.Collation)
			}
		}
		c.Coll = sourceBytes(b.targetColl(tc.Collation, tc.Charset), c.Introducer)
		c.StoreBytes = storesBytes(sc, tc, c.Introducer)
		p.Cols[i] = c
		if !c.Generated {
			p.Write = append(p.Write, i)
		}
	}
	return nil
}

// storesBytes reports whether a target column stores a source column's
// string bytes unconverted: both are character columns of one charset
// whose characters take one byte at least (a binary string is padded to
// a whole character of ucs2, utf16 or utf32 on its way in), and neither
// is ENUM or SET (stored by member) or JSON (MySQL refuses binary text).
func storesBytes(sc *binlog.Column, tc *schema.Column, introducer string) bool {
	switch {
	case introducer == "" || sc.Type == binlog.TypeEnum || sc.Type == binlog.TypeSet || sc.Type == binlog.TypeJSON:
		return false
	case tc.DataType == "enum" || tc.DataType == "set" || tc.DataType == "json":
		return false
	}
	switch strings.ToLower(tc.Charset) {
	case "", "binary", "ucs2", "utf16", "utf16le", "utf32":
		return false
	}
	return strings.EqualFold(tc.Charset, introducer)
}

// longUniqueHash reports whether a source column is MariaDB's hidden hash
// of a long unique key (UNIQUE over a BLOB or TEXT, or USING HASH): the
// binlog's table map lists it as DB_ROW_HASH_n, information_schema does
// not, and the server computes it on every write. The target must have a
// long unique key too: it then has the same hidden column.
func longUniqueHash(name string, t *schema.Table) bool {
	n, ok := strings.CutPrefix(name, "DB_ROW_HASH_")
	if !ok || n == "" || strings.Trim(n, "0123456789") != "" {
		return false
	}
	for _, ix := range t.Indexes {
		if ix.Unique && strings.EqualFold(ix.Type, "HASH") {
			return true
		}
	}
	return false
}

// targetColl describes a target column's collation: from the server's
// list, else (a collation listed without an id) classified by its name.
func (b *Builder) targetColl(name, charset string) schema.Collation {
	if name == "" {
		return schema.Collation{}
	}
	if c, ok := b.byName[strings.ToLower(name)]; ok {
		return c
	}
	return schema.ClassifyCollation(name, charset)
}

// sourceBytes adapts a target column's collation to the bytes keys are
// hashed from: the source's, in the source column's charset, which the
// target converts on write. When the charsets differ, the same character
// has other bytes (and, for a prefix, another length) on each side, and
// another column referencing this one may be converted differently or not
// at all: only printable ASCII means the same everywhere, so the
// byte-exact path of _bin collations is off.
func sourceBytes(coll schema.Collation, charset string) schema.Collation {
	if charset == "" || coll.Name == "" || charset == coll.Charset {
		return coll
	}
	coll.Charset, coll.Binary = charset, false
	return coll
}

// families groups target data types by the binlog type that carries them.
var families = map[binlog.ColumnType][]string{
	binlog.TypeTiny:       {"tinyint", "smallint", "mediumint", "int", "bigint", "boolean"},
	binlog.TypeShort:      {"smallint", "mediumint", "int", "bigint"},
	binlog.TypeInt24:      {"mediumint", "int", "bigint"},
	binlog.TypeLong:       {"int", "bigint"},
	binlog.TypeLongLong:   {"bigint"},
	binlog.TypeFloat:      {"float", "double"},
	binlog.TypeDouble:     {"double"},
	binlog.TypeNewDecimal: {"decimal"},
	binlog.TypeYear:       {"year"},
	binlog.TypeDate:       {"date"},
	binlog.TypeNewDate:    {"date"},
	binlog.TypeTime:       {"time"},
	binlog.TypeTime2:      {"time"},
	binlog.TypeDateTime:   {"datetime"},
	binlog.TypeDateTime2:  {"datetime"},
	binlog.TypeTimestamp:  {"timestamp"},
	binlog.TypeTimestamp2: {"timestamp"},
	binlog.TypeBit:        {"bit"},
	binlog.TypeEnum:       {"enum"},
	binlog.TypeSet:        {"set"},
	binlog.TypeGeometry: {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring",
		"multipolygon", "geometrycollection"},
}

var stringTypes = []string{"char", "varchar", "binary", "varbinary", "tinytext", "text", "mediumtext", "longtext",
	"tinyblob", "blob", "mediumblob", "longblob", "json", "inet6", "inet4", "uuid", "enum", "set"}

func compatible(sc *binlog.Column, tc *schema.Column) error {
	switch sc.Type {
	case binlog.TypeTime, binlog.TypeDateTime, binlog.TypeTimestamp:
		if tc.DatetimePrecision > 0 {
			return fmt.Errorf("the source column uses the old (pre-MariaDB 10.0) temporal format, which the binlog "+
				"cannot carry with fractional seconds: run ALTER TABLE ... FORCE on the source with "+
				"mysql56_temporal_format=ON (target type %s)", tc.ColumnType)
		}
	case binlog.TypeBlobCompressed, binlog.TypeVarcharCompressed:
		return fmt.Errorf("compressed columns are not supported")
	}
	allowed, ok := families[sc.Type]
	if !ok {
		allowed = stringTypes
	}
	for _, dt := range allowed {
		if tc.DataType == dt {
			if isInteger(sc.Type) && sc.Unsigned != tc.Unsigned && !(sc.Unsigned && widerThan(tc.DataType, sc.Type)) {
				return fmt.Errorf("signedness differs (source %s %s, target %s)", sc.Type, signWord(sc.Unsigned), tc.ColumnType)
			}
			return nil
		}
	}
	return fmt.Errorf("type mismatch: source %s, target %s", sc.Type, tc.ColumnType)
}

func isInteger(t binlog.ColumnType) bool {
	switch t {
	case binlog.TypeTiny, binlog.TypeShort, binlog.TypeInt24, binlog.TypeLong, binlog.TypeLongLong:
		return true
	}
	return false
}

// widerThan reports whether a signed target type holds every unsigned
// value of the source type.
func widerThan(target string, src binlog.ColumnType) bool {
	rank := map[string]int{"tinyint": 1, "smallint": 2, "mediumint": 3, "int": 4, "bigint": 5}
	srank := map[binlog.ColumnType]int{binlog.TypeTiny: 1, binlog.TypeShort: 2, binlog.TypeInt24: 3, binlog.TypeLong: 4, binlog.TypeLongLong: 5}
	return rank[target] > srank[src]
}

func signWord(unsigned bool) string {
	if unsigned {
		return "unsigned"
	}
	return "signed"
}

// wholeRows reports whether a REPLACE writes p's whole rows
// (Table.WholeRows).
func wholeRows(p *Table) bool {
	if p.Target.Type != "BASE TABLE" {
		return false // a system-versioned table's REPLACE writes history rows of its own
	}
	stored := 0
	for i := range p.Target.Columns {
		if !p.Target.Columns[i].Generated {
			stored++
		}
	}
	return stored == len(p.Write)
}

// loadable reports whether LOAD DATA can write p's whole rows exactly
// (Table.Loadable).
func loadable(p *Table) bool {
	if !p.WholeRows {
		return false
	}
	for _, i := range p.Write {
		if !loadableColumn(&p.Source.Columns[i], &p.Target.Columns[p.Cols[i].Target], &p.Cols[i]) {
			return false
		}
	}
	return true
}

// intKey reports whether p's row key is its target's primary key, one
// column of an integer type there (see Table.IntKey).
func intKey(p *Table) bool {
	pk := p.Target.PrimaryKey
	if pk == nil || len(pk.Columns) != 1 || len(p.RowKey) != 1 || p.Cols[p.RowKey[0]].Target != pk.Columns[0] {
		return false
	}
	switch p.Target.Columns[pk.Columns[0]].DataType {
	case "tinyint", "smallint", "mediumint", "int", "bigint":
		return true
	}
	return false
}

// joinBytes is what a row of p's written columns takes in a MEMORY table
// (fixed-width rows: a VARCHAR takes its maximum), or 0 when p's changed
// rows cannot be joined in from one (see Table.JoinBytes).
func joinBytes(p *Table) int {
	if !p.Collapsible || !p.Loadable || !p.IntKey {
		return 0
	}
	size := 16 // the row's header and null bits, roughly
	for _, col := range p.Write {
		tc := &p.Target.Columns[p.Cols[col].Target]
		switch tc.DataType {
		case "tinyint", "year":
			size++
		case "smallint":
			size += 2
		case "mediumint", "date":
			size += 3
		case "int", "float":
			size += 4
		case "time", "timestamp":
			size += 7
		case "bigint", "double", "datetime":
			size += 8
		case "decimal":
			size += int(tc.Precision)/2 + 2
		case "char", "varchar", "binary", "varbinary":
			size += int(tc.MaxBytes) + 2
		default:
			return 0 // BLOB and TEXT: not in a MEMORY table
		}
	}
	return size
}

// loadableColumn reports whether a source column's values, as rowsql
// writes them into a LOAD DATA file, reach the target column as its SQL
// literals do: a number's or a temporal's text into a column of the same
// kind (text into a string column would keep an exponent a literal's
// double loses, hence the pairs), and string bytes into a column that
// stores them as they are (the file is read as CHARACTER SET binary: no
// conversion). BIT, ENUM, SET, JSON, GEOMETRY and compressed columns are
// not: their literals are not their text.
func loadableColumn(sc *binlog.Column, tc *schema.Column, c *Col) bool {
	kinds := func(types ...string) bool {
		for _, t := range types {
			if tc.DataType == t {
				return true
			}
		}
		return false
	}
	switch sc.Type {
	case binlog.TypeTiny, binlog.TypeShort, binlog.TypeInt24, binlog.TypeLong, binlog.TypeLongLong:
		return kinds("tinyint", "smallint", "mediumint", "int", "bigint")
	case binlog.TypeYear:
		return kinds("year")
	case binlog.TypeNewDecimal:
		return kinds("decimal")
	case binlog.TypeFloat, binlog.TypeDouble:
		return kinds("float", "double")
	case binlog.TypeDate, binlog.TypeNewDate:
		return kinds("date")
	case binlog.TypeTime, binlog.TypeTime2:
		return kinds("time")
	case binlog.TypeDateTime, binlog.TypeDateTime2:
		return kinds("datetime")
	case binlog.TypeTimestamp, binlog.TypeTimestamp2:
		return kinds("timestamp")
	case binlog.TypeString, binlog.TypeVarchar, binlog.TypeVarString,
		binlog.TypeTinyBlob, binlog.TypeBlob, binlog.TypeMediumBlob, binlog.TypeLongBlob:
		if c.StoreBytes {
			return true
		}
		return c.Introducer == "" && (tc.Charset == "" || tc.Charset == "binary") &&
			kinds("binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob")
	}
	return false
}
