package copier

import (
	"reflect"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/keyrange"
)

func TestRowKey(t *testing.T) {
	cols := []keyrange.Column{{Kind: keyrange.Int}, {Kind: keyrange.Bytes}}
	row := []binlog.Value{{Kind: binlog.KindString, B: []byte("x")}, {Kind: binlog.KindInt, N: -4}}
	k, ok := rowKey(cols, row, []int{1, 0})
	if !ok || !reflect.DeepEqual(k, keyrange.Key{int64(-4), []byte("x")}) {
		t.Fatalf("rowKey: %v %v", k, ok)
	}
	if _, ok := rowKey(cols, []binlog.Value{{Kind: binlog.KindNull}, {Kind: binlog.KindInt}}, []int{1, 0}); ok {
		t.Error("a NULL key value")
	}
}
