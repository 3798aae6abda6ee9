package copier

import (
	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/keyrange"
)

// rowKey extracts the chunking key of a row image (pos are the key's
// positions in the row); false when a key column is NULL.
func rowKey(cols []keyrange.Column, row []binlog.Value, pos []int) (keyrange.Key, bool) {
	k := make(keyrange.Key, len(cols))
	for i, c := range cols {
		v := &row[pos[i]]
		switch {
		case v.Kind == binlog.KindNull:
			return nil, false // a key without NULLs never holds one
		case c.Kind == keyrange.Int:
			k[i] = v.N
		case c.Kind == keyrange.Uint:
			k[i] = uint64(v.N)
		case c.Kind == keyrange.Text:
			k[i] = v.AppendText(nil)
		default:
			k[i] = v.B
		}
	}
	return k, true
}
