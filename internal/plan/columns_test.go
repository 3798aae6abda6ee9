package plan

import (
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
)

// TestStoresBytes: only a character column of the source bytes' charset,
// one byte at least per character, takes a string's bytes unconverted
// (plan.Col.StoreBytes); ENUM, SET, JSON and other charsets do not.
func TestStoresBytes(t *testing.T) {
	str := binlog.Column{Type: binlog.TypeVarchar}
	cases := []struct {
		name       string
		sc         binlog.Column
		tc         schema.Column
		introducer string
		want       bool
	}{
		{"utf8mb4 into utf8mb4", str, schema.Column{DataType: "varchar", Charset: "utf8mb4"}, "utf8mb4", true},
		{"latin1 into latin1", str, schema.Column{DataType: "text", Charset: "latin1"}, "latin1", true},
		{"MariaDB JSON (longtext)", str, schema.Column{DataType: "longtext", Charset: "utf8mb4"}, "utf8mb4", true},
		{"latin1 into utf8mb4 (converted)", str, schema.Column{DataType: "varchar", Charset: "utf8mb4"}, "latin1", false},
		{"utf16 (padded)", str, schema.Column{DataType: "varchar", Charset: "utf16"}, "utf16", false},
		{"ucs2 (padded)", str, schema.Column{DataType: "varchar", Charset: "ucs2"}, "ucs2", false},
		{"binary source", str, schema.Column{DataType: "varbinary", Charset: ""}, "", false},
		{"ENUM", binlog.Column{Type: binlog.TypeEnum}, schema.Column{DataType: "enum", Charset: "utf8mb4"}, "utf8mb4", false},
		{"into an ENUM", str, schema.Column{DataType: "enum", Charset: "utf8mb4"}, "utf8mb4", false},
		{"MySQL JSON", binlog.Column{Type: binlog.TypeJSON}, schema.Column{DataType: "json"}, "utf8mb4", false},
	}
	for _, c := range cases {
		if got := storesBytes(&c.sc, &c.tc, c.introducer); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
