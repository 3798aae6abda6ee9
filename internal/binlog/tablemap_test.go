package binlog

import (
	"encoding/hex"
	"fmt"
	"testing"
)

func tlv(typ byte, val ...byte) []byte {
	return append(append([]byte{typ}, lenenc(uint64(len(val)))...), val...)
}

func lenencStr(s string) []byte { return append(lenenc(uint64(len(s))), s...) }

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// mixedTable: YEAR, INT UNSIGNED, GEOMETRY, VARCHAR, CHAR(255) utf8mb4
// (1020 bytes), ENUM of 2 bytes, BIT(12), DECIMAL(10,2).
var mixedTypes = []ColumnType{TypeYear, TypeLong, TypeGeometry, TypeVarchar, TypeString, TypeString, TypeBit, TypeNewDecimal}

var mixedMeta = cat(
	[]byte{4},          // GEOMETRY: 4-byte length
	[]byte{40, 0},      // VARCHAR(10) utf8mb4: 40 bytes
	[]byte{0xce, 0xfc}, // CHAR: 1020 = 0x3fc borrows 0x300 from the type byte
	[]byte{byte(TypeEnum), 2},
	[]byte{4, 1},  // BIT(12): 4 bits + 1 byte
	[]byte{10, 2}, // DECIMAL(10,2)
)

func TestTableMapColumnMeta(t *testing.T) {
	d, b := mariaDecoder(t, true)
	ev, err := d.Decode(b.event(EventTableMap, 0, tableMapBody(1, 6, "s", "t", mixedTypes, mixedMeta, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cols := ev.Data.(*TableMap).Columns
	want := []struct {
		typ  ColumnType
		meta uint16
	}{{TypeYear, 0}, {TypeLong, 0}, {TypeGeometry, 4}, {TypeVarchar, 40}, {TypeString, 1020}, {TypeEnum, 2}, {TypeBit, 12}, {TypeNewDecimal, 10<<8 | 2}}
	for i, w := range want {
		if cols[i].Type != w.typ || cols[i].Meta != w.meta || !cols[i].Nullable {
			t.Errorf("column %d: %s meta %d, want %s meta %d", i, cols[i].Type, cols[i].Meta, w.typ, w.meta)
		}
	}
	if cols[7].Precision() != 10 || cols[7].Scale() != 2 {
		t.Errorf("decimal (%d,%d)", cols[7].Precision(), cols[7].Scale())
	}
}

func TestTableMapOptionalMeta(t *testing.T) {
	names := cat(lenencStr("y"), lenencStr("u"), lenencStr("g"), lenencStr("v"), lenencStr("c"), lenencStr("e"), lenencStr("b"), lenencStr("d"))
	tests := []struct {
		name   string
		flavor string
		tlvs   []byte
		check  func(tm *TableMap) error
	}{
		{"mariadb signedness counts YEAR", "10.11.19-MariaDB-log", tlv(metaSignedness, 0b11100000), func(tm *TableMap) error {
			// bits: YEAR, INT, DECIMAL
			return expect(tm.Columns[1].Unsigned && tm.Columns[7].Unsigned, "INT and DECIMAL unsigned")
		}},
		{"mysql signedness skips YEAR", "8.0.36", tlv(metaSignedness, 0b10000000), func(tm *TableMap) error {
			// bits: INT, DECIMAL
			return expect(tm.Columns[1].Unsigned && !tm.Columns[7].Unsigned, "INT unsigned, DECIMAL signed")
		}},
		{"mariadb default charset counts GEOMETRY", "10.11.19-MariaDB-log", tlv(metaDefaultCharset, 45, 1, 8), func(tm *TableMap) error {
			// character columns: GEOMETRY, VARCHAR, CHAR; exception: #1 (VARCHAR) latin1
			c := tm.Columns
			return expect(c[2].Collation == 45 && c[3].Collation == 8 && c[4].Collation == 45 && c[5].Collation == 0, "collations 45/8/45")
		}},
		{"mysql default charset skips GEOMETRY", "8.0.36", tlv(metaDefaultCharset, 45, 1, 8), func(tm *TableMap) error {
			c := tm.Columns
			return expect(c[2].Collation == 0 && c[3].Collation == 45 && c[4].Collation == 8, "collations -/45/8")
		}},
		{"column charset and enum charset", "10.11.19-MariaDB-log", cat(tlv(metaColumnCharset, 63, 33, 224), tlv(metaEnumSetColumnCS, 8)), func(tm *TableMap) error {
			c := tm.Columns
			return expect(c[2].Collation == 63 && c[3].Collation == 33 && c[4].Collation == 224 && c[5].Collation == 8, "collations 63/33/224/8")
		}},
		{"names, enum values, geometry, primary key", "10.11.19-MariaDB-log",
			cat(tlv(metaColumnName, names...), tlv(metaEnumStrValue, cat(lenenc(2), lenencStr("a"), lenencStr("bb"))...),
				tlv(metaGeometryType, 1), tlv(metaSimplePK, 1, 3)),
			func(tm *TableMap) error {
				c := tm.Columns
				return expect(tm.HasNames && c[7].Name == "d" && len(c[5].EnumValues) == 2 && string(c[5].EnumValues[1]) == "bb" &&
					c[2].Geometry == 1 && fmt.Sprint(tm.PrimaryKey) == "[1 3]" && fmt.Sprint(tm.PKPrefix) == "[0 0]", "metadata")
			}},
		{"primary key with prefix, visibility", "8.0.36", cat(tlv(metaPKWithPrefix, 3, 10), tlv(metaColumnVisibility, 0b10111111)), func(tm *TableMap) error {
			return expect(fmt.Sprint(tm.PrimaryKey) == "[3]" && fmt.Sprint(tm.PKPrefix) == "[10]" && tm.Columns[1].Invisible && !tm.Columns[0].Invisible, "pk and visibility")
		}},
		{"unknown field skipped", "8.0.36", cat(tlv(99, 1, 2, 3), tlv(metaSignedness, 0b10000000)), func(tm *TableMap) error {
			return expect(tm.Columns[1].Unsigned, "INT unsigned")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBuilder(true)
			d := NewDecoder()
			if _, err := d.Decode(b.event(EventFormatDescription, 0, fdeBody(tt.flavor, false, true))); err != nil {
				t.Fatal(err)
			}
			ev, err := d.Decode(b.event(EventTableMap, 0, tableMapBody(1, 6, "s", "t", mixedTypes, mixedMeta, tt.tlvs)))
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.check(ev.Data.(*TableMap)); err != nil {
				t.Fatalf("%v: %+v", err, ev.Data.(*TableMap).Columns)
			}
		})
	}
}

func expect(ok bool, what string) error {
	if !ok {
		return fmt.Errorf("want %s", what)
	}
	return nil
}

func TestTableMapRejects(t *testing.T) {
	tests := []struct {
		name string
		body []byte
	}{
		{"no columns", tableMapBody(1, 6, "s", "t", nil, nil, nil)},
		{"unsupported type", tableMapBody(1, 6, "s", "t", []ColumnType{TypeDecimal}, nil, nil)},
		{"string meta naming another type", tableMapBody(1, 6, "s", "t", []ColumnType{TypeString}, []byte{byte(TypeLong) | 0x30, 4}, nil)},
		{"short metadata", tableMapBody(1, 6, "s", "t", []ColumnType{TypeVarchar}, []byte{4}, nil)},
		{"signedness too short", tableMapBody(1, 6, "s", "t", []ColumnType{TypeLong}, nil, tlv(metaSignedness))},
		{"charset index out of range", tableMapBody(1, 6, "s", "t", []ColumnType{TypeBlob}, []byte{2}, tlv(metaDefaultCharset, 45, 5, 8))},
		{"primary key out of range", tableMapBody(1, 6, "s", "t", []ColumnType{TypeLong}, nil, tlv(metaSimplePK, 1))},
		{"truncated", tableMapBody(1, 6, "s", "t", []ColumnType{TypeLong}, nil, nil)[:12]},
	}
	for _, tt := range tests {
		d, b := mariaDecoder(t, true)
		if ev, err := d.Decode(b.event(EventTableMap, 0, tt.body)); err == nil {
			t.Errorf("%s: accepted: %+v", tt.name, ev.Data)
		}
	}
}

// TestVectorColumn: MySQL 9's VECTOR (type 242, a blob of float32s with
// a 4-byte length, the binary collation), from the shared binlog
// vector.binlog (its table map at 1004, its insert at 1085).
func TestVectorColumn(t *testing.T) {
	tm, _ := hex.DecodeString("5500000000000100036474620003666f6f000208f201040001018002013f0d010304110269640d766563746f725f636f6c756d6e" +
		"0801000c01c0")
	rows, _ := hex.DecodeString("5500000000000100020002ff0001000000000000000c000000cdcc8c3fcdcc0c4033335340" +
		"0002000000000000000c0000000000803f000080bf00000000")
	d, b := mysqlDecoder(t, false)
	if _, err := d.Decode(b.event(EventTableMap, 0, tm)); err != nil {
		t.Fatal(err)
	}
	ev, err := d.Decode(b.event(EventWriteRowsV2, 0, rows))
	if err != nil {
		t.Fatal(err)
	}
	re := ev.Data.(*RowsEvent)
	c := re.Table.Columns[1]
	if c.Type != TypeVector || c.Meta != 4 || c.Collation != 63 || c.Name != "vector_column" || c.Type.String() != "VECTOR" {
		t.Fatalf("column %+v", c)
	}
	vals, err := re.AppendRows(nil)
	if err != nil || len(vals) != 4 {
		t.Fatalf("%d values: %v", len(vals), err)
	}
	if got := hex.EncodeToString(vals[1].B); vals[1].Kind != KindString || got != "cdcc8c3fcdcc0c4033335340" {
		t.Errorf("first vector: %s %s", vals[1].Kind, got)
	}
}
