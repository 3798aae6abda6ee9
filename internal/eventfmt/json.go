package eventfmt

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/binlane/binlane/internal/binlog"
)

// object appends the members of a JSON object in the order given.
type object struct {
	b []byte
	n int
}

func (o *object) key(k string) {
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = strconv.AppendQuote(o.b, k) // keys here are ASCII: Go and JSON quoting agree
	o.b = append(o.b, ':')
}

// add appends a member; values are marshalled with encoding/json.
func (o *object) add(k string, v any) {
	o.key(k)
	out, err := json.Marshal(v)
	if err != nil {
		out, _ = json.Marshal(err.Error())
	}
	o.b = append(o.b, out...)
}

func (o *object) raw(k string, v []byte) {
	o.key(k)
	o.b = append(o.b, v...)
}

func (p *Printer) appendJSON(b []byte, ev *binlog.Event) []byte {
	o := &object{b: append(b, '{')}
	h := &ev.Header
	o.add("file", ev.File)
	o.add("pos", ev.Pos)
	o.add("end_log_pos", h.LogPos)
	o.add("type", h.Type.String())
	o.add("server_id", h.ServerID)
	o.add("timestamp", h.Timestamp)
	if h.Flags != 0 {
		o.add("flags", h.Flags)
	}
	p.addDetails(o, ev.Data)
	return append(o.b, "}\n"...)
}

func (p *Printer) addDetails(o *object, data any) {
	switch d := data.(type) {
	case *binlog.FormatDescriptionEvent:
		o.add("server_version", d.ServerVersion)
		o.add("checksum", checksumName(d.Checksum))
	case *binlog.RotateEvent:
		o.add("next_file", d.NextFile)
		o.add("next_pos", d.Position)
		o.add("artificial", d.Fake)
	case *binlog.GTIDListEvent:
		o.add("gtids", gtidStrings(d))
	case *binlog.MariaGTIDEvent:
		o.add("gtid", d.GTID.String())
		o.add("standalone", d.Standalone())
		o.add("flags2", d.Flags2)
	case *binlog.MySQLGTIDEvent:
		o.add("gtid", d.GTID.String())
		o.add("last_committed", d.LastCommitted)
		o.add("sequence_number", d.SequenceNumber)
	case *binlog.QueryEvent:
		o.add("schema", d.Schema)
		o.add("query", p.statement(d.Query))
		o.add("error_code", d.ErrorCode)
		if d.Load != nil {
			o.add("load_file_id", d.Load.FileID)
		}
	case *binlog.LoadBlockEvent:
		o.add("file_id", d.FileID)
		o.add("block_len", len(d.Data))
	case *binlog.DeleteFileEvent:
		o.add("file_id", d.FileID)
	case *binlog.XIDEvent:
		o.add("xid", d.XID)
	case *binlog.TableMap:
		p.addTableMap(o, d)
	case *binlog.RowsEvent:
		p.addRows(o, d)
	case *binlog.HeartbeatEvent:
		o.add("source_file", d.File)
		o.add("source_pos", d.Pos)
	case *binlog.AnnotateRowsEvent:
		o.add("query", p.statement(d.Query))
	case *binlog.RowsQueryEvent:
		o.add("query", p.statement(d.Query))
	case *binlog.XAPrepareEvent:
		o.add("xid", d.XID.String())
	case *binlog.IntvarEvent:
		o.add("intvar_type", d.Type)
		o.add("value", d.Value)
	case *binlog.RandEvent:
		o.add("seed1", d.Seed1)
		o.add("seed2", d.Seed2)
	case *binlog.UserVarEvent:
		o.add("name", d.Name)
		o.add("value", p.userVar(d))
	case *binlog.PreviousGTIDsEvent:
		o.add("gtids", d.Set.String())
	case *binlog.BinlogCheckpointEvent:
		o.add("checkpoint_file", d.File)
	case *binlog.IncidentEvent:
		o.add("incident", d.Incident)
		o.add("message", p.message(d.Message))
	case *binlog.TransactionPayloadEvent:
		p.addPayload(o, d)
	case *binlog.SkippedEvent:
		o.add("skipped", d.Reason)
	}
}

// addPayload lists the events of a compressed transaction (MySQL's
// Transaction_payload) in "events", each as a top-level event would be
// but without file and position: they have none of their own, and are
// located by the payload event.
func (p *Printer) addPayload(o *object, d *binlog.TransactionPayloadEvent) {
	o.add("compression", payloadCompression(d.Compression))
	o.add("uncompressed_size", d.UncompressedSize)
	events := []byte{'['}
	for i, in := range d.Events {
		if i > 0 {
			events = append(events, ',')
		}
		ev := &object{b: append(events, '{')}
		ev.add("type", in.Header.Type.String())
		ev.add("server_id", in.Header.ServerID)
		ev.add("timestamp", in.Header.Timestamp)
		p.addDetails(ev, in.Data)
		events = append(ev.b, '}')
	}
	o.raw("events", append(events, ']'))
}

func payloadCompression(c uint64) string {
	switch c {
	case 0:
		return "zstd"
	case 255:
		return "none"
	}
	return strconv.FormatUint(c, 10)
}

func gtidStrings(d *binlog.GTIDListEvent) []string {
	out := make([]string, len(d.List))
	for i, g := range d.List {
		out[i] = g.String()
	}
	return out
}

func (p *Printer) addTableMap(o *object, t *binlog.TableMap) {
	o.add("table_id", t.TableID)
	o.add("schema", t.Schema)
	o.add("table", t.Table)
	type column struct {
		Name     string `json:"name,omitempty"`
		Type     string `json:"type"`
		Meta     uint16 `json:"meta"`
		Nullable bool   `json:"nullable"`
	}
	cols := make([]column, len(t.Columns))
	for i := range t.Columns {
		c := &t.Columns[i]
		cols[i] = column{Name: c.Name, Type: typeText(c), Meta: c.Meta, Nullable: c.Nullable}
	}
	o.add("columns", cols)
}

// addRows lists rows as {"after": {...}} (insert), {"before": {...}}
// (delete) or both (update), keyed by column name (or @N without names).
func (p *Printer) addRows(o *object, r *binlog.RowsEvent) {
	o.add("table_id", r.TableID)
	if r.Table == nil {
		return
	}
	o.add("schema", r.Table.Schema)
	o.add("table", r.Table.Table)
	o.add("kind", r.Kind.String())
	vals, err := r.AppendRows(p.vals[:0])
	p.vals = vals
	rows := []byte{'['}
	n := r.Columns * r.ImagesPerRow()
	for i := 0; i+n <= len(vals); i += n {
		if i > 0 {
			rows = append(rows, ',')
		}
		row := &object{b: []byte{'{'}}
		switch r.Kind {
		case binlog.RowsInsert:
			row.raw("after", jsonImage(r.Table, vals[i:i+n]))
		case binlog.RowsDelete:
			row.raw("before", jsonImage(r.Table, vals[i:i+n]))
		default:
			row.raw("before", jsonImage(r.Table, vals[i:i+r.Columns]))
			row.raw("after", jsonImage(r.Table, vals[i+r.Columns:i+n]))
		}
		rows = append(rows, append(row.b, '}')...)
	}
	o.raw("rows", append(rows, ']'))
	if err != nil {
		o.add("error", err.Error())
	}
}

func jsonImage(t *binlog.TableMap, vals []binlog.Value) []byte {
	o := &object{b: []byte{'{'}}
	for i := range vals {
		v := &vals[i]
		if v.Kind == binlog.KindAbsent {
			continue
		}
		c := &t.Columns[i]
		name := c.Name
		if name == "" {
			name = "@" + strconv.Itoa(i+1)
		}
		o.raw(name, jsonValue(v, c))
	}
	return append(o.b, '}')
}

// jsonValue maps a column value to JSON: numbers as numbers, DECIMAL and
// temporals as strings (exact), strings as strings when they are UTF-8 and
// as {"hex": …} otherwise, ENUM and SET by name, MySQL JSON as JSON.
func jsonValue(v *binlog.Value, c *binlog.Column) []byte {
	var x any
	switch v.Kind {
	case binlog.KindNull:
		return []byte("null")
	case binlog.KindInt, binlog.KindYear, binlog.KindUint, binlog.KindBit:
		return v.AppendText(nil)
	case binlog.KindFloat, binlog.KindDouble:
		if f := v.Float(); math.IsInf(f, 0) || math.IsNaN(f) {
			x = string(v.AppendText(nil))
		} else {
			return v.AppendText(nil)
		}
	case binlog.KindEnum, binlog.KindSet:
		x = enumSetText(v, c)
	case binlog.KindString:
		if vec, ok := vectorText(v, c); ok && json.Valid(vec) {
			return vec // an array of numbers
		}
		if utf8.Valid(v.B) && c.Collation != 63 {
			x = string(v.B)
		} else {
			x = map[string]string{"hex": hex.EncodeToString(v.B)}
		}
	case binlog.KindGeometry:
		x = map[string]string{"hex": hex.EncodeToString(v.B)}
	case binlog.KindJSON:
		if text := v.AppendText(nil); json.Valid(text) {
			return text
		}
		x = string(v.AppendText(nil))
	default:
		x = string(v.AppendText(nil))
	}
	out, _ := json.Marshal(x)
	return out
}
