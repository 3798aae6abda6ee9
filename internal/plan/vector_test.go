package plan

import (
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/schema"
)

// TestVectorColumns: the decoder reads MySQL 9 VECTOR columns (for binlog
// dump); replication, which has no way to write one, refuses them when it
// plans the table, by name.
func TestVectorColumns(t *testing.T) {
	src := &binlog.Column{Type: binlog.TypeVector, Meta: 4, Collation: 63}
	err := compatible(src, &schema.Column{Name: "v", DataType: "vector", ColumnType: "vector(3)"})
	if err == nil || !strings.Contains(err.Error(), "type mismatch: source VECTOR, target vector(3)") {
		t.Fatalf("got %v", err)
	}
}
