package eventfmt

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
	"github.com/binlane/binlane/internal/binlog/binlogtest"
)

func TestValueText(t *testing.T) {
	enum := &binlog.Column{Type: binlog.TypeEnum, EnumValues: [][]byte{[]byte("a"), []byte("b")}}
	set := &binlog.Column{Type: binlog.TypeSet, SetValues: [][]byte{[]byte("x"), []byte("y")}}
	str := &binlog.Column{Type: binlog.TypeVarchar}
	cases := []struct {
		v    binlog.Value
		c    *binlog.Column
		want string
	}{
		{binlog.Value{Kind: binlog.KindString, B: []byte("it's \\ é\n\x00\xff")}, str, `'it\'s \\ é\n\x00\xff'`},
		{binlog.Value{Kind: binlog.KindEnum, N: 2}, enum, "'b'"},
		{binlog.Value{Kind: binlog.KindEnum, N: 0}, enum, "''"},
		{binlog.Value{Kind: binlog.KindEnum, N: 7}, enum, "'7'"},
		{binlog.Value{Kind: binlog.KindSet, N: 0b1011}, set, "'x,y,#4'"},
		{binlog.Value{Kind: binlog.KindBit, N: 5, Prec: 4}, &binlog.Column{Type: binlog.TypeBit}, "b'0101'"},
		{binlog.Value{Kind: binlog.KindNull}, str, "NULL"},
		{binlog.Value{Kind: binlog.KindInt, N: -3}, &binlog.Column{Type: binlog.TypeLong}, "-3"},
		{binlog.Value{Kind: binlog.KindGeometry, B: []byte{1, 2}}, &binlog.Column{Type: binlog.TypeGeometry}, "X'0102'"},
	}
	for _, c := range cases {
		if got := string(appendValue(nil, &c.v, c.c)); got != c.want {
			t.Errorf("%v: got %s, want %s", c.v.Kind, got, c.want)
		}
	}
	bin := &binlog.Column{Type: binlog.TypeVarchar, Collation: 63}
	if got := string(jsonValue(&binlog.Value{Kind: binlog.KindString, B: []byte("ab")}, bin)); got != `{"hex":"6162"}` {
		t.Errorf("binary string as JSON: %s", got)
	}
}

func TestRestartAndHeartbeat(t *testing.T) {
	msgs := []binlog.Message{
		{Restart: &binlog.Restart{Reason: "connection lost: EOF"}},
		{Event: &binlog.Event{File: "binlog.000002", Pos: 0, Header: binlog.Header{Type: binlog.EventHeartbeat, LogPos: 900},
			Data: &binlog.HeartbeatEvent{File: "binlog.000002", Pos: 900}}},
	}
	var text, js bytes.Buffer
	tp, jp := NewText(&text), NewJSON(&js)
	for _, m := range msgs {
		if err := tp.PrintMessage(m); err != nil {
			t.Fatal(err)
		}
		if err := jp.PrintMessage(m); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(text.String(), "# reconnected (connection lost: EOF)") || !strings.Contains(text.String(), "source at binlog.000002:900") {
		t.Errorf("text:\n%s", text.String())
	}
	lines := strings.Split(strings.TrimSpace(js.String()), "\n")
	var first, second map[string]any
	if len(lines) != 2 || json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[1]), &second) != nil {
		t.Fatalf("json:\n%s", js.String())
	}
	if first["type"] != "Restart" || second["source_pos"] != 900.0 {
		t.Errorf("json: %v %v", first, second)
	}
}

// TestStatementsRedacted: passwords in the statements an event carries are
// hidden in both forms unless RawStatements is given.
func TestStatementsRedacted(t *testing.T) {
	const canary = "Canary-Pw-7731"
	create := []byte("CREATE USER 'app'@'%' IDENTIFIED BY '" + canary + "'")
	evs := []*binlog.Event{
		{Header: binlog.Header{Type: binlog.EventQuery}, Data: &binlog.QueryEvent{Schema: "d", Query: create}},
		{Header: binlog.Header{Type: binlog.EventAnnotateRows}, Data: &binlog.AnnotateRowsEvent{Query: []byte("SET PASSWORD FOR app = PASSWORD('" + canary + "')")}},
		{Header: binlog.Header{Type: binlog.EventRowsQuery}, Data: &binlog.RowsQueryEvent{Query: []byte("CHANGE MASTER TO MASTER_PASSWORD='" + canary + "'")}},
		{Header: binlog.Header{Type: binlog.EventIncident}, Data: &binlog.IncidentEvent{Message: "failed: GRANT ALL ON *.* TO x IDENTIFIED BY '" + canary + "'"}},
	}
	cases := []struct {
		name     string
		printer  func(*bytes.Buffer) *Printer
		wantRaw  bool
		wantText string
	}{
		{"text", func(b *bytes.Buffer) *Printer { return NewText(b) }, false, "IDENTIFIED BY '<redacted>'"},
		{"json", func(b *bytes.Buffer) *Printer { return NewJSON(b) }, false, `IDENTIFIED BY '\u003credacted\u003e'`},
		{"text raw", func(b *bytes.Buffer) *Printer { return NewText(b, RawStatements()) }, true, "IDENTIFIED BY '" + canary + "'"},
		{"json raw", func(b *bytes.Buffer) *Printer { return NewJSON(b, RawStatements()) }, true, "IDENTIFIED BY '" + canary + "'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			p := c.printer(&out)
			for _, ev := range evs {
				if err := p.Print(ev); err != nil {
					t.Fatal(err)
				}
			}
			got := out.String()
			if strings.Contains(got, canary) != c.wantRaw || !strings.Contains(got, c.wantText) {
				t.Errorf("canary printed: %v, want %v; %q present: %v\n%s", strings.Contains(got, canary), c.wantRaw,
					c.wantText, strings.Contains(got, c.wantText), got)
			}
		})
	}
}

// TestEveryEventKindAnswered: the text and JSON printers have a case for
// every kind of event the decoder makes.
func TestEveryEventKindAnswered(t *testing.T) {
	binlogtest.RequireAnswered(t, "text.go", "appendDetails")
	binlogtest.RequireAnswered(t, "json.go", "addDetails")
}
