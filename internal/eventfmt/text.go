package eventfmt

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/redact"
)

// Printer writes events to w, one Write per event. It is not safe for
// concurrent use.
type Printer struct {
	w    io.Writer
	json bool
	raw  bool // print statements as the source logged them, secrets included
	buf  []byte
	vals []binlog.Value
}

// Option changes how a Printer prints.
type Option func(*Printer)

// RawStatements prints statements exactly as the source logged them. By
// default, passwords in them (CREATE USER … IDENTIFIED BY 'x', SET
// PASSWORD, CHANGE MASTER TO MASTER_PASSWORD, …) are hidden: a binlog
// dump is often pasted into tickets and chats.
func RawStatements() Option { return func(p *Printer) { p.raw = true } }

// NewText prints in the text form.
func NewText(w io.Writer, opts ...Option) *Printer { return newPrinter(&Printer{w: w}, opts) }

// NewJSON prints one JSON object per line.
func NewJSON(w io.Writer, opts ...Option) *Printer {
	return newPrinter(&Printer{w: w, json: true}, opts)
}

func newPrinter(p *Printer, opts []Option) *Printer {
	for _, o := range opts {
		o(p)
	}
	return p
}

// statement is the text of a statement the source logged, as printed.
func (p *Printer) statement(q []byte) string {
	if p.raw {
		return string(q)
	}
	return redact.Statement(string(q))
}

// Print writes one event.
func (p *Printer) Print(ev *binlog.Event) error {
	p.buf = p.buf[:0]
	if p.json {
		p.buf = p.appendJSON(p.buf, ev)
	} else {
		p.buf = p.appendText(p.buf, ev)
	}
	_, err := p.w.Write(p.buf)
	return err
}

// PrintMessage writes what a replication stream returned: an event, or
// the notice that the stream reconnected.
func (p *Printer) PrintMessage(m binlog.Message) error {
	if m.Restart == nil {
		return p.Print(m.Event)
	}
	p.buf = p.buf[:0]
	if p.json {
		o := &object{b: append(p.buf, '{')}
		o.add("type", "Restart")
		o.add("reason", m.Restart.Reason)
		p.buf = append(o.b, "}\n"...)
	} else {
		p.buf = fmt.Appendf(p.buf, "# reconnected (%s): a partial transaction above is sent again below\n", m.Restart.Reason)
	}
	_, err := p.w.Write(p.buf)
	return err
}

func (p *Printer) appendText(b []byte, ev *binlog.Event) []byte {
	h := &ev.Header
	b = fmt.Appendf(b, "# at %d in %s\n", ev.Pos, ev.File)
	ts := "0"
	if h.Timestamp != 0 {
		ts = time.Unix(int64(h.Timestamp), 0).UTC().Format("060102 15:04:05")
	}
	b = fmt.Appendf(b, "#%s server id %d  end_log_pos %d  %s", ts, h.ServerID, h.LogPos, h.Type)
	return p.appendDetails(b, ev)
}

// appendDetails ends the header line with what the event says.
func (p *Printer) appendDetails(b []byte, ev *binlog.Event) []byte {
	switch d := ev.Data.(type) {
	case *binlog.FormatDescriptionEvent:
		return fmt.Appendf(b, ": binlog v%d, server v%s, checksum %s\n", d.BinlogVersion, d.ServerVersion, checksumName(d.Checksum))
	case *binlog.RotateEvent:
		return fmt.Appendf(b, ": to %s pos %d%s\n", d.NextFile, d.Position, fakeNote(d.Fake))
	case *binlog.GTIDListEvent:
		return fmt.Appendf(b, ": %v\n", d.List)
	case *binlog.BinlogCheckpointEvent:
		return fmt.Appendf(b, ": %s\n", d.File)
	case *binlog.MariaGTIDEvent:
		return fmt.Appendf(b, ": GTID %s%s\n", d.GTID, mariaGTIDNote(d))
	case *binlog.MySQLGTIDEvent:
		if d.Anonymous {
			return fmt.Appendf(b, ": anonymous last_committed=%d sequence_number=%d\n", d.LastCommitted, d.SequenceNumber)
		}
		return fmt.Appendf(b, ": GTID %s last_committed=%d sequence_number=%d\n", d.GTID, d.LastCommitted, d.SequenceNumber)
	case *binlog.QueryEvent:
		b = fmt.Appendf(b, ": thread_id=%d exec_time=%d error_code=%d db=`%s`\n%s\n", d.ThreadID, d.ExecTime, d.ErrorCode, d.Schema, p.statement(d.Query))
		if d.Load != nil {
			// The file is in the Begin_load_query/Append_block events
			// with this id, not where the statement says.
			b = fmt.Appendf(b, "# file_id: %d\n", d.Load.FileID)
		}
		return b
	case *binlog.LoadBlockEvent:
		return fmt.Appendf(b, ": file_id: %d  block_len: %d\n", d.FileID, len(d.Data))
	case *binlog.DeleteFileEvent:
		return fmt.Appendf(b, ": file_id: %d\n", d.FileID)
	case *binlog.XIDEvent:
		return fmt.Appendf(b, ": Xid = %d\nCOMMIT\n", d.XID)
	case *binlog.TableMap:
		return fmt.Appendf(b, ": %s mapped to number %d\n", d.QualifiedName(), d.TableID)
	case *binlog.RowsEvent:
		return p.appendRows(b, d)
	case *binlog.AnnotateRowsEvent:
		return fmt.Appendf(b, "\n# %s\n", strings.ReplaceAll(p.statement(d.Query), "\n", "\n# "))
	case *binlog.RowsQueryEvent:
		return fmt.Appendf(b, "\n# %s\n", strings.ReplaceAll(p.statement(d.Query), "\n", "\n# "))
	case *binlog.HeartbeatEvent:
		return fmt.Appendf(b, ": source at %s:%d\n", d.File, d.Pos)
	case *binlog.XAPrepareEvent:
		return fmt.Appendf(b, ": XA PREPARE %s\n", d.XID.String())
	case *binlog.PreviousGTIDsEvent:
		return fmt.Appendf(b, ": %s\n", d.Set)
	case *binlog.IncidentEvent:
		return fmt.Appendf(b, ": incident %d: %s\n", d.Incident, p.message(d.Message))
	case *binlog.TransactionPayloadEvent:
		b = fmt.Appendf(b, ": %d events\n", len(d.Events))
		for _, inner := range d.Events {
			b = append(b, "#   "...)
			b = p.appendDetails(append(b, inner.Header.Type.String()...), inner)
		}
		return b
	case *binlog.IntvarEvent:
		name := "LAST_INSERT_ID"
		if d.Type == binlog.IntvarInsertID {
			name = "INSERT_ID"
		}
		return fmt.Appendf(b, ": %s=%d\n", name, d.Value)
	case *binlog.RandEvent:
		return fmt.Appendf(b, ": rand_seed1=%d, rand_seed2=%d\n", d.Seed1, d.Seed2)
	case *binlog.UserVarEvent:
		return fmt.Appendf(b, ": @%s=%s\n", d.Name, p.userVar(d))
	case *binlog.SkippedEvent:
		return fmt.Appendf(b, " (skipped: %s)\n", d.Reason)
	}
	// No kind of event the decoder makes gets here (TestEveryEventKindAnswered).
	return append(b, '\n')
}

// userVar shows a user variable's value; a string's bytes only with raw
// statements (it may be a secret a statement reads).
func (p *Printer) userVar(u *binlog.UserVarEvent) string {
	switch {
	case u.Null:
		return "NULL"
	case u.Type == binlog.UserVarInt:
		n, un := u.Int()
		if u.Unsigned {
			return fmt.Sprint(un)
		}
		return fmt.Sprint(n)
	case u.Type == binlog.UserVarReal:
		return fmt.Sprint(u.Real())
	case u.Type == binlog.UserVarDecimal:
		s, _ := u.DecimalText()
		return s
	case p.raw:
		return fmt.Sprintf("X'%x' (collation %d)", u.Value, u.Collation)
	}
	return fmt.Sprintf("'<%d bytes>' (collation %d)", len(u.Value), u.Collation)
}

// message is a free text the source logged (an incident's message), as
// printed: it may quote a statement.
func (p *Printer) message(m string) string {
	if p.raw {
		return m
	}
	return redact.Text(m)
}

func checksumName(alg byte) string {
	if alg == binlog.ChecksumCRC32 {
		return "CRC32"
	}
	return "NONE"
}

func fakeNote(fake bool) string {
	if fake {
		return " (artificial)"
	}
	return ""
}

func mariaGTIDNote(g *binlog.MariaGTIDEvent) string {
	var notes []string
	if g.Standalone() {
		notes = append(notes, "standalone")
	} else {
		notes = append(notes, "trans")
	}
	if g.Flags2&binlog.MariaFlDDL != 0 {
		notes = append(notes, "ddl")
	}
	if g.CommitID != 0 {
		notes = append(notes, "cid="+strconv.FormatUint(g.CommitID, 10))
	}
	if g.XID != nil {
		notes = append(notes, "xid="+g.XID.String())
	}
	return " " + strings.Join(notes, " ")
}

// appendRows prints each row image like mariadb-binlog -vv.
func (p *Printer) appendRows(b []byte, r *binlog.RowsEvent) []byte {
	b = fmt.Appendf(b, ": table id %d%s\n", r.TableID, rowsFlags(r.Flags))
	if r.Table == nil {
		return b // the dummy event that ends a statement
	}
	vals, err := r.AppendRows(p.vals[:0])
	p.vals = vals
	n := r.Columns * r.ImagesPerRow()
	for i := 0; i+n <= len(vals); i += n {
		switch r.Kind {
		case binlog.RowsInsert:
			b = fmt.Appendf(b, "### INSERT INTO %s\n### SET\n", r.Table.QualifiedName())
			b = appendImage(b, r.Table, vals[i:i+n])
		case binlog.RowsDelete:
			b = fmt.Appendf(b, "### DELETE FROM %s\n### WHERE\n", r.Table.QualifiedName())
			b = appendImage(b, r.Table, vals[i:i+n])
		default:
			b = fmt.Appendf(b, "### UPDATE %s\n### WHERE\n", r.Table.QualifiedName())
			b = appendImage(b, r.Table, vals[i:i+r.Columns])
			b = append(b, "### SET\n"...)
			b = appendImage(b, r.Table, vals[i+r.Columns:i+n])
		}
	}
	if err != nil {
		b = fmt.Appendf(b, "### error decoding rows: %v\n", err)
	}
	return b
}

func rowsFlags(f uint16) string {
	if f&binlog.RowsFlagStmtEnd != 0 {
		return " flags: STMT_END_F"
	}
	return ""
}

// appendImage prints the present columns of one row image.
func appendImage(b []byte, t *binlog.TableMap, vals []binlog.Value) []byte {
	for i := range vals {
		v := &vals[i]
		if v.Kind == binlog.KindAbsent {
			continue
		}
		c := &t.Columns[i]
		b = fmt.Appendf(b, "###   @%d", i+1)
		if c.Name != "" {
			b = append(append(b, ' '), c.Name...)
		}
		b = append(b, '=')
		b = appendValue(b, v, c)
		b = fmt.Appendf(b, " /* %s meta=%d nullable=%d is_null=%d */\n", typeText(c), c.Meta, b2i(c.Nullable), b2i(v.IsNull()))
	}
	return b
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}
