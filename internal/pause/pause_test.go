package pause

import (
	"errors"
	"testing"

	"github.com/binlane/binlane/internal/gtid"
	"github.com/binlane/binlane/internal/position"
)

func set(t *testing.T, s string) gtid.Set {
	t.Helper()
	g, err := gtid.ParseSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		text string
		kind Kind
		at   string
		bad  bool
	}{
		{text: "", kind: None},
		{text: "hold", kind: Hold},
		{text: "0-1-5", kind: At, at: "0-1-5"},
		{text: "0-1-5,1-2-9", kind: At, at: "0-1-5,1-2-9"},
		{text: "soon", bad: true},
		{text: "0-1", bad: true},
	} {
		r, err := Parse(c.text, "me")
		if c.bad {
			if err == nil {
				t.Errorf("%q: parsed as %v", c.text, r)
			}
			continue
		}
		if err != nil || r.Kind != c.kind || r.Kind == At && r.At.String() != c.at {
			t.Errorf("%q: %+v, %v", c.text, r, err)
		}
		if r.Text() != c.text {
			t.Errorf("%q: text %q", c.text, r.Text())
		}
		if c.kind != None && r.By != "me" {
			t.Errorf("%q: by %q", c.text, r.By)
		}
	}
}

// TestDecide is the stream's side of the state machine.
func TestDecide(t *testing.T) {
	p5 := AtRequest(set(t, "0-1-5"), position.ByCutover)
	two := AtRequest(set(t, "0-1-5,1-1-3"), position.ByVerify)
	for _, c := range []struct {
		name    string
		req     Request
		applied string
		copying bool
		want    Action
		stopAt  string
		ignored bool
	}{
		{name: "no request", req: Request{}, applied: "0-1-1", want: Run},
		{name: "no request while copying", req: Request{}, applied: "0-1-1", copying: true, want: Run},
		{name: "hold", req: HoldRequest(position.ByPause), applied: "0-1-1", want: HoldHere},
		{name: "hold while copying", req: HoldRequest(position.ByPause), applied: "0-1-1", copying: true, want: HoldHere},
		{name: "before the position", req: p5, applied: "0-1-3", want: RunTo, stopAt: "0-1-5"},
		{name: "at the position", req: p5, applied: "0-1-5", want: HoldHere},
		{name: "past the position", req: p5, applied: "0-1-7", want: HoldHere},
		{name: "empty start", req: p5, applied: "", want: RunTo, stopAt: "0-1-5"},
		{name: "one domain short", req: two, applied: "0-1-9,1-1-2", want: RunTo, stopAt: "0-1-5,1-1-3"},
		{name: "every domain there", req: two, applied: "0-1-5,1-1-3", want: HoldHere},
		{name: "position while copying", req: p5, applied: "0-1-3", copying: true, want: Run, ignored: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := Decide(c.req, set(t, c.applied), c.copying)
			if p.Action != c.want || (p.Ignored != "") != c.ignored {
				t.Fatalf("%+v", p)
			}
			if c.want == RunTo && p.StopAt.String() != c.stopAt {
				t.Fatalf("stops at %s, want %s", p.StopAt, c.stopAt)
			}
		})
	}
}

// TestHeld is the requester's side: what the stream's row says about a
// request.
func TestHeld(t *testing.T) {
	p5 := AtRequest(set(t, "0-1-5"), position.ByCutover)
	hold := HoldRequest(position.ByPause)
	row := func(state, pos string, r Request) position.State {
		return position.State{Name: "s", State: state, GTID: pos, PauseAt: r.Text(), PauseBy: r.By}
	}
	var notRunning *NotRunningError
	var withdrawn *WithdrawnError
	var passed *PassedError
	for _, c := range []struct {
		name string
		st   position.State
		req  Request
		held bool
		err  any
	}{
		{name: "still running", st: row(position.StateRunning, "0-1-3", p5), req: p5},
		{name: "held at it", st: row(position.StatePaused, "0-1-5", p5), req: p5, held: true},
		{name: "held past it", st: row(position.StatePaused, "0-1-6", p5), req: p5, err: &passed},
		{name: "held earlier, for a previous request", st: row(position.StatePaused, "0-1-2", p5), req: p5},
		{name: "held where it is", st: row(position.StatePaused, "0-1-9", hold), req: hold, held: true},
		{name: "hold asked, still running", st: row(position.StateRunning, "0-1-9", hold), req: hold},
		{name: "withdrawn", st: row(position.StatePaused, "0-1-5", Request{}), req: p5, err: &withdrawn},
		{name: "another requester", st: row(position.StatePaused, "0-1-5", AtRequest(set(t, "0-1-5"), position.ByVerify)), req: p5,
			err: &withdrawn},
		{name: "stopped", st: row(position.StateStopped, "0-1-3", p5), req: p5, err: &notRunning},
		{name: "failed", st: row(position.StateError, "0-1-3", p5), req: p5, err: &notRunning},
		{name: "cut over", st: row(position.StateCutOver, "0-1-5", p5), req: p5, err: &notRunning},
	} {
		t.Run(c.name, func(t *testing.T) {
			held, err := Held(c.st, c.req)
			if held != c.held {
				t.Fatalf("held %v, %v", held, err)
			}
			switch {
			case c.err == nil && err != nil:
				t.Fatalf("error %v", err)
			case c.err != nil && !errors.As(err, c.err):
				t.Fatalf("error %v, want %T", err, c.err)
			}
		})
	}
}
