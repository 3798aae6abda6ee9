package wire

import (
	"context"
	"errors"
	"fmt"
)

const (
	comQuery          = 0x03
	comBinlogDump     = 0x12
	comRegisterSlave  = 0x15
	comBinlogDumpGTID = 0x1e
)

// maxColumns bounds the column count of a result set before allocating.
const maxColumns = 4096

// Result is the first result set of a query (or its OK packet's counters
// when it returned no rows).
type Result struct {
	Columns      []string
	Rows         [][]*string // nil for SQL NULL
	AffectedRows uint64
	LastInsertID uint64
	Warnings     uint16
}

// Column returns the index of the named column, or -1.
func (r *Result) Column(name string) int {
	for i, c := range r.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Query runs a statement with COM_QUERY and returns its first result set;
// later result sets are read and dropped. It is meant for the few
// statements a replication connection needs (SET, SELECT @@..., SHOW ...).
func (c *Conn) Query(ctx context.Context, query string) (*Result, error) {
	var res *Result
	err := c.withContext(ctx, func() error {
		if err := c.writeCommand(append([]byte{comQuery}, query...)); err != nil {
			return err
		}
		var err error
		res, err = c.readResults()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", abbreviate(query, 120), err)
	}
	return res, nil
}

// Exec runs a statement and discards any rows.
func (c *Conn) Exec(ctx context.Context, query string) error {
	_, err := c.Query(ctx, query)
	return err
}

// readResults reads every result set of a command and keeps the first.
func (c *Conn) readResults() (*Result, error) {
	var first *Result
	for {
		res, more, err := c.readResult()
		if err != nil {
			return nil, err
		}
		if first == nil {
			first = res
		}
		if !more {
			return first, nil
		}
	}
}

// readResult reads one OK packet or one text result set.
func (c *Conn) readResult() (*Result, bool, error) {
	pkt, err := c.readPacket()
	if err != nil {
		return nil, false, err
	}
	if len(pkt) == 0 {
		return nil, false, errors.New("empty response packet")
	}
	switch pkt[0] {
	case 0x00:
		ok, err := parseOK(pkt)
		if err != nil {
			return nil, false, err
		}
		res := &Result{AffectedRows: ok.affectedRows, LastInsertID: ok.lastInsertID, Warnings: ok.warnings}
		return res, ok.status&serverMoreResultsExists != 0, nil
	case 0xff:
		return nil, false, parseError(pkt)
	case 0xfb:
		// LOCAL INFILE request: decline with an empty packet, then read
		// the server's verdict so the connection stays in sync.
		if err := c.writePacket(nil); err != nil {
			return nil, false, err
		}
		if _, _, err := c.readResult(); err != nil {
			return nil, false, err
		}
		return nil, false, errors.New("server asked for LOAD DATA LOCAL INFILE, which binlane refuses")
	}
	cols, rows, more, err := c.readResultSet(pkt)
	if err != nil {
		return nil, false, err
	}
	return &Result{Columns: cols, Rows: stringRows(rows)}, more, nil
}

// readResultSet reads column definitions, EOF, rows and the closing EOF.
// Row values are nil for SQL NULL.
func (c *Conn) readResultSet(pkt []byte) (cols []string, rows [][][]byte, more bool, err error) {
	cur := &cursor{b: pkt}
	n, _ := cur.lenenc("column count")
	if cur.err != nil || cur.remaining() != 0 {
		return nil, nil, false, unexpectedPacket("result set header", pkt)
	}
	if n == 0 || n > maxColumns {
		return nil, nil, false, fmt.Errorf("result set with %d columns", n)
	}
	cols = make([]string, n)
	for i := range cols {
		def, err := c.readPacket()
		if err != nil {
			return nil, nil, false, err
		}
		if cols[i], err = columnName(def); err != nil {
			return nil, nil, false, err
		}
	}
	if pkt, err := c.readPacket(); err != nil {
		return nil, nil, false, err
	} else if !isEOF(pkt) {
		return nil, nil, false, unexpectedPacket("end of column definitions", pkt)
	}
	for {
		pkt, err := c.readPacket()
		if err != nil {
			return nil, nil, false, err
		}
		if isEOF(pkt) {
			return cols, rows, eofStatus(pkt)&serverMoreResultsExists != 0, nil
		}
		if len(pkt) > 0 && pkt[0] == 0xff {
			return nil, nil, false, parseError(pkt)
		}
		row, err := parseTextRow(pkt, len(cols))
		if err != nil {
			return nil, nil, false, err
		}
		rows = append(rows, row)
	}
}

// columnName reads the name from a ColumnDefinition41 packet.
func columnName(pkt []byte) (string, error) {
	cur := &cursor{b: pkt}
	for _, f := range []string{"catalog", "schema", "table", "org_table"} {
		cur.lenencBytes(f)
	}
	name, _ := cur.lenencBytes("name")
	if cur.err != nil {
		return "", fmt.Errorf("column definition: %w", cur.err)
	}
	return string(name), nil
}

// parseTextRow splits a text row into its values, which share pkt (a
// packet the reader allocated for the caller); nil is SQL NULL.
func parseTextRow(pkt []byte, n int) ([][]byte, error) {
	cur := &cursor{b: pkt}
	row := make([][]byte, n)
	for i := range row {
		v, null := cur.lenencBytes("row value")
		if !null && cur.err == nil {
			row[i] = v[:len(v):len(v)]
			if row[i] == nil {
				row[i] = []byte{}
			}
		}
	}
	if cur.err != nil {
		return nil, fmt.Errorf("text row: %w", cur.err)
	}
	if cur.remaining() != 0 {
		return nil, fmt.Errorf("text row: %d bytes after %d values", cur.remaining(), n)
	}
	return row, nil
}

// stringRows turns text rows into the Result's form.
func stringRows(rows [][][]byte) [][]*string {
	out := make([][]*string, len(rows))
	for i, row := range rows {
		out[i] = make([]*string, len(row))
		for j, v := range row {
			if v != nil {
				s := string(v)
				out[i][j] = &s
			}
		}
	}
	return out
}

func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
