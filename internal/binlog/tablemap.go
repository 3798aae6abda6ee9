package binlog

import (
	"bytes"
	"fmt"
)

// ColumnType is a column's type code as the binlog writes it (for CHAR,
// ENUM and SET the real type from the metadata, not MYSQL_TYPE_STRING).
type ColumnType byte

// Column type codes (MYSQL_TYPE_*).
const (
	TypeDecimal           ColumnType = 0
	TypeTiny              ColumnType = 1
	TypeShort             ColumnType = 2
	TypeLong              ColumnType = 3
	TypeFloat             ColumnType = 4
	TypeDouble            ColumnType = 5
	TypeNull              ColumnType = 6
	TypeTimestamp         ColumnType = 7
	TypeLongLong          ColumnType = 8
	TypeInt24             ColumnType = 9
	TypeDate              ColumnType = 10
	TypeTime              ColumnType = 11
	TypeDateTime          ColumnType = 12
	TypeYear              ColumnType = 13
	TypeNewDate           ColumnType = 14
	TypeVarchar           ColumnType = 15
	TypeBit               ColumnType = 16
	TypeTimestamp2        ColumnType = 17
	TypeDateTime2         ColumnType = 18
	TypeTime2             ColumnType = 19
	TypeBlobCompressed    ColumnType = 140
	TypeVarcharCompressed ColumnType = 141
	TypeVector            ColumnType = 242 // MySQL 9.0+: float32s, stored as a blob
	TypeJSON              ColumnType = 245
	TypeNewDecimal        ColumnType = 246
	TypeEnum              ColumnType = 247
	TypeSet               ColumnType = 248
	TypeTinyBlob          ColumnType = 249
	TypeMediumBlob        ColumnType = 250
	TypeLongBlob          ColumnType = 251
	TypeBlob              ColumnType = 252
	TypeVarString         ColumnType = 253
	TypeString            ColumnType = 254
	TypeGeometry          ColumnType = 255
)

var typeNames = map[ColumnType]string{
	TypeDecimal: "DECIMAL", TypeTiny: "TINYINT", TypeShort: "SMALLINT", TypeLong: "INT", TypeFloat: "FLOAT",
	TypeDouble: "DOUBLE", TypeNull: "NULL", TypeTimestamp: "TIMESTAMP", TypeLongLong: "BIGINT",
	TypeInt24: "MEDIUMINT", TypeDate: "DATE", TypeTime: "TIME", TypeDateTime: "DATETIME", TypeYear: "YEAR",
	TypeNewDate: "NEWDATE", TypeVarchar: "VARCHAR", TypeBit: "BIT", TypeTimestamp2: "TIMESTAMP",
	TypeDateTime2: "DATETIME", TypeTime2: "TIME", TypeBlobCompressed: "BLOB COMPRESSED",
	TypeVarcharCompressed: "VARCHAR COMPRESSED", TypeJSON: "JSON", TypeNewDecimal: "DECIMAL",
	TypeEnum: "ENUM", TypeSet: "SET", TypeTinyBlob: "TINYBLOB", TypeMediumBlob: "MEDIUMBLOB",
	TypeLongBlob: "LONGBLOB", TypeBlob: "BLOB", TypeVarString: "VARCHAR", TypeString: "CHAR",
	TypeGeometry: "GEOMETRY", TypeVector: "VECTOR",
}

func (t ColumnType) String() string {
	if n, ok := typeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("TYPE(%d)", byte(t))
}

// Column describes one column of a table map.
type Column struct {
	Name     string // empty unless binlog_row_metadata=FULL
	Type     ColumnType
	Meta     uint16 // type metadata, decoded: see MaxLength, Fsp, Precision...
	Nullable bool
	Unsigned bool
	// Collation is the column's collation id (63 = binary); 0 when the table
	// map carried no charset metadata for it.
	Collation  uint16
	EnumValues [][]byte
	SetValues  [][]byte
	Geometry   uint32
	// Invisible is set from MySQL's column-visibility metadata.
	Invisible bool
}

// Fsp is the fractional-seconds precision of TIME2/DATETIME2/TIMESTAMP2.
func (c *Column) Fsp() int { return int(c.Meta) }

// Precision and Scale of a NEWDECIMAL column.
func (c *Column) Precision() int { return int(c.Meta >> 8) }
func (c *Column) Scale() int     { return int(c.Meta & 0xff) }

// IsCharacter reports whether the column carries a collation in the
// charset metadata (MariaDB counts GEOMETRY too).
func (c *Column) IsCharacter(flavor Flavor) bool {
	switch c.Type {
	case TypeString, TypeVarchar, TypeVarString, TypeBlob, TypeTinyBlob, TypeMediumBlob, TypeLongBlob,
		TypeBlobCompressed, TypeVarcharCompressed:
		return true
	case TypeGeometry:
		return flavor == FlavorMariaDB
	case TypeVector:
		return true // MySQL gives it the binary collation
	}
	return false
}

// IsNumeric reports whether the column is of a numeric type (integers,
// FLOAT, DOUBLE, DECIMAL; not YEAR, not BIT).
func (c *Column) IsNumeric() bool {
	switch c.Type {
	case TypeTiny, TypeShort, TypeInt24, TypeLong, TypeLongLong, TypeFloat, TypeDouble, TypeDecimal, TypeNewDecimal:
		return true
	}
	return false
}

// HasSignedness reports whether the column owns a bit in the SIGNEDNESS
// metadata. MariaDB counts YEAR too (its Field_year is a numeric field;
// observed on 10.11, see TestGolden*), MySQL counts only IsNumeric types.
func (c *Column) HasSignedness(flavor Flavor) bool {
	return c.IsNumeric() || c.Type == TypeYear && flavor == FlavorMariaDB
}

// TableMap binds a table id to a table's name and column layout.
type TableMap struct {
	TableID uint64
	Flags   uint16
	Schema  string
	Table   string
	Columns []Column
	// PrimaryKey lists column indexes of the primary key and PKPrefix the
	// prefix length of each (0 = whole column); both nil when the table has
	// no primary key or the metadata was not FULL.
	PrimaryKey []int
	PKPrefix   []int
	// HasNames reports whether column names were present (FULL metadata).
	HasNames bool
	body     []byte // the encoded body, to recognize a repeated map cheaply
}

// QualifiedName returns `schema`.`table` for messages.
func (t *TableMap) QualifiedName() string { return "`" + t.Schema + "`.`" + t.Table + "`" }

func (d *Decoder) decodeTableMap(body []byte) (*TableMap, error) {
	idLen := 6
	if d.fde.postHeaderLen(EventTableMap) == 6 {
		idLen = 4
	}
	r := &reader{b: body}
	id := r.uintN(idLen, "table id")
	if r.err != nil {
		return nil, r.err
	}
	// Every transaction repeats the maps of the tables it touches; when the
	// bytes are those of the map we already hold, reuse it (no allocations).
	if prev, ok := d.tables[id]; ok && bytes.Equal(prev.body, body) {
		return prev, nil
	}
	// The map outlives the event (and its buffer, which a stream reader may
	// reuse), so it is parsed from its own copy: ENUM and SET names refer
	// into it.
	own := append([]byte(nil), body...)
	r = &reader{b: own, off: r.off}
	t, err := parseTableMap(r, d.fde.Flavor)
	if err != nil {
		return nil, err
	}
	t.TableID = id
	t.body = own
	d.tables[id] = t
	return t, nil
}

func parseTableMap(r *reader, flavor Flavor) (*TableMap, error) {
	t := &TableMap{Flags: r.u16("flags")}
	n := r.u8("schema length")
	t.Schema = string(r.take(int(n), "schema"))
	r.skip(1, "schema terminator")
	n = r.u8("table length")
	t.Table = string(r.take(int(n), "table"))
	r.skip(1, "table terminator")
	ncols := r.lenenc("column count")
	if r.err != nil {
		return nil, r.err
	}
	if ncols == 0 || ncols > 4096 || ncols > uint64(r.remaining()) {
		return nil, fmt.Errorf("table %s: implausible column count %d", t.QualifiedName(), ncols)
	}
	types := r.take(int(ncols), "column types")
	if r.err == nil && r.remaining() == 0 {
		// Early MySQL 5.1 betas wrote neither (so does a cut event):
		// rows cannot be read without them.
		return nil, fmt.Errorf("table %s: table map without column metadata and nullable bitmap (as MySQL 5.1 betas wrote them) is not supported",
			t.QualifiedName())
	}
	meta := r.lenencBytes("column metadata")
	nullBits := r.take(int(ncols+7)/8, "nullable bitmap")
	if r.err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), r.err)
	}
	t.Columns = make([]Column, ncols)
	if err := parseColumnMeta(t.Columns, types, meta); err != nil {
		return nil, fmt.Errorf("table %s: %w", t.QualifiedName(), err)
	}
	for i := range t.Columns {
		t.Columns[i].Nullable = nullBits[i/8]&(1<<(i%8)) != 0
	}
	if err := parseOptionalMeta(t, r.rest(), flavor); err != nil {
		return nil, fmt.Errorf("table %s: optional metadata: %w", t.QualifiedName(), err)
	}
	return t, nil
}

// parseColumnMeta decodes the per-type metadata block.
func parseColumnMeta(cols []Column, types, meta []byte) error {
	r := &reader{b: meta}
	for i := range cols {
		c := &cols[i]
		c.Type = ColumnType(types[i])
		switch c.Type {
		case TypeFloat, TypeDouble, TypeBlob, TypeTinyBlob, TypeMediumBlob, TypeLongBlob, TypeGeometry, TypeJSON,
			TypeTimestamp2, TypeDateTime2, TypeTime2, TypeBlobCompressed, TypeVector:
			c.Meta = uint16(r.u8("column metadata"))
		case TypeVarchar, TypeVarString, TypeVarcharCompressed:
			c.Meta = r.u16("column metadata")
		case TypeBit:
			bits, bytes := r.u8("bit metadata"), r.u8("bit metadata")
			c.Meta = uint16(bytes)*8 + uint16(bits)
		case TypeNewDecimal:
			p, s := r.u8("decimal metadata"), r.u8("decimal metadata")
			c.Meta = uint16(p)<<8 | uint16(s)
		case TypeString, TypeEnum, TypeSet:
			b0, b1 := r.u8("string metadata"), r.u8("string metadata")
			if b0&0x30 != 0x30 {
				// Lengths over 255 borrow two bits of the type byte.
				c.Type = ColumnType(b0 | 0x30)
				c.Meta = uint16(b1) | uint16((b0&0x30)^0x30)<<4
			} else {
				c.Type = ColumnType(b0)
				c.Meta = uint16(b1)
			}
			if r.err == nil && c.Type != TypeString && c.Type != TypeEnum && c.Type != TypeSet {
				return fmt.Errorf("column %d: string metadata names real type %d", i+1, byte(c.Type))
			}
		case TypeTiny, TypeShort, TypeInt24, TypeLong, TypeLongLong, TypeNull, TypeYear, TypeDate, TypeTime,
			TypeDateTime, TypeTimestamp, TypeNewDate:
		default:
			return fmt.Errorf("column %d: unsupported column type %d", i+1, byte(c.Type))
		}
	}
	return r.err
}

// Optional metadata field types (binlog_row_metadata).
const (
	metaSignedness       = 1
	metaDefaultCharset   = 2
	metaColumnCharset    = 3
	metaColumnName       = 4
	metaSetStrValue      = 5
	metaEnumStrValue     = 6
	metaGeometryType     = 7
	metaSimplePK         = 8
	metaPKWithPrefix     = 9
	metaEnumSetDefCS     = 10
	metaEnumSetColumnCS  = 11
	metaColumnVisibility = 12
)

func parseOptionalMeta(t *TableMap, b []byte, flavor Flavor) error {
	r := &reader{b: b}
	for r.remaining() > 0 && r.err == nil {
		typ := r.u8("field type")
		val := r.lenencBytes("field")
		if r.err != nil {
			break
		}
		var err error
		switch typ {
		case metaSignedness:
			err = parseSignedness(t.Columns, val, flavor)
		case metaDefaultCharset:
			err = parseDefaultCharset(t.Columns, val, func(c *Column) bool { return c.IsCharacter(flavor) })
		case metaColumnCharset:
			err = parseColumnCharset(t.Columns, val, func(c *Column) bool { return c.IsCharacter(flavor) })
		case metaEnumSetDefCS:
			err = parseDefaultCharset(t.Columns, val, isEnumOrSet)
		case metaEnumSetColumnCS:
			err = parseColumnCharset(t.Columns, val, isEnumOrSet)
		case metaColumnName:
			err = parseColumnNames(t, val)
		case metaSetStrValue:
			err = parseStrValues(t.Columns, val, TypeSet)
		case metaEnumStrValue:
			err = parseStrValues(t.Columns, val, TypeEnum)
		case metaGeometryType:
			err = parseGeometryTypes(t.Columns, val)
		case metaSimplePK:
			err = parsePK(t, val, false)
		case metaPKWithPrefix:
			err = parsePK(t, val, true)
		case metaColumnVisibility:
			for i := range t.Columns {
				if i/8 < len(val) {
					t.Columns[i].Invisible = val[i/8]&(0x80>>(i%8)) == 0
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return r.err
}

func isEnumOrSet(c *Column) bool { return c.Type == TypeEnum || c.Type == TypeSet }

func parseSignedness(cols []Column, val []byte, flavor Flavor) error {
	bit := 0
	for i := range cols {
		if !cols[i].HasSignedness(flavor) {
			continue
		}
		if bit/8 >= len(val) {
			return fmt.Errorf("signedness bitmap too short")
		}
		cols[i].Unsigned = val[bit/8]&(0x80>>(bit%8)) != 0
		bit++
	}
	return nil
}

// parseDefaultCharset reads a default collation followed by (index,
// collation) exceptions; indexes count only columns that match.
func parseDefaultCharset(cols []Column, val []byte, match func(*Column) bool) error {
	r := &reader{b: val}
	def := uint16(r.lenenc("default collation"))
	var idx []int
	for i := range cols {
		if match(&cols[i]) {
			cols[i].Collation = def
			idx = append(idx, i)
		}
	}
	for r.remaining() > 0 && r.err == nil {
		pos := r.lenenc("charset column index")
		coll := uint16(r.lenenc("charset collation"))
		if pos >= uint64(len(idx)) {
			return fmt.Errorf("charset index %d out of %d character columns", pos, len(idx))
		}
		cols[idx[pos]].Collation = coll
	}
	return r.err
}

func parseColumnCharset(cols []Column, val []byte, match func(*Column) bool) error {
	r := &reader{b: val}
	for i := range cols {
		if match(&cols[i]) {
			cols[i].Collation = uint16(r.lenenc("column collation"))
		}
	}
	return r.err
}

func parseColumnNames(t *TableMap, val []byte) error {
	r := &reader{b: val}
	for i := range t.Columns {
		t.Columns[i].Name = string(r.lenencBytes("column name"))
	}
	t.HasNames = r.err == nil
	return r.err
}

func parseStrValues(cols []Column, val []byte, typ ColumnType) error {
	r := &reader{b: val}
	for i := range cols {
		if cols[i].Type != typ {
			continue
		}
		n := r.lenenc("value count")
		if n > uint64(r.remaining()) {
			return fmt.Errorf("column %d: %d values do not fit", i+1, n)
		}
		vals := make([][]byte, 0, n)
		for j := uint64(0); j < n && r.err == nil; j++ {
			vals = append(vals, r.lenencBytes("value"))
		}
		if typ == TypeEnum {
			cols[i].EnumValues = vals
		} else {
			cols[i].SetValues = vals
		}
	}
	return r.err
}

func parseGeometryTypes(cols []Column, val []byte) error {
	r := &reader{b: val}
	for i := range cols {
		if cols[i].Type == TypeGeometry {
			cols[i].Geometry = uint32(r.lenenc("geometry type"))
		}
	}
	return r.err
}

func parsePK(t *TableMap, val []byte, withPrefix bool) error {
	r := &reader{b: val}
	for r.remaining() > 0 && r.err == nil {
		col := r.lenenc("primary key column")
		prefix := uint64(0)
		if withPrefix {
			prefix = r.lenenc("primary key prefix")
		}
		if col >= uint64(len(t.Columns)) {
			return fmt.Errorf("primary key column %d out of %d", col, len(t.Columns))
		}
		t.PrimaryKey = append(t.PrimaryKey, int(col))
		t.PKPrefix = append(t.PKPrefix, int(prefix))
	}
	return r.err
}
