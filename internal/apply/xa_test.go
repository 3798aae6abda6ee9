package apply

import (
	"testing"
)

func TestParseXID(t *testing.T) {
	cases := []struct {
		in           string
		gtrid, bqual string
		format       int64
		bad          bool
	}{
		{in: "X'7831',X'',1", gtrid: "x1", format: 1},
		{in: "X'61',X'62',7", gtrid: "a", bqual: "b", format: 7},
		{in: "'abc'", gtrid: "abc", format: 1},
		{in: "'a''b', \"c\"", gtrid: "a'b", bqual: "c", format: 1},
		{in: "x'00ff'", gtrid: "\x00\xff", format: 1},
		{in: "'abc", bad: true},
		{in: "X'7831' junk", bad: true},
		{in: "X'zz'", bad: true},
		{in: "'a','b',1,2", bad: true},
	}
	for _, c := range cases {
		x, err := parseXID(c.in)
		if c.bad {
			if err == nil {
				t.Errorf("%q: accepted as %+v", c.in, x)
			}
			continue
		}
		if err != nil || string(x.gtrid) != c.gtrid || string(x.bqual) != c.bqual || x.format != c.format {
			t.Errorf("%q: %+v %v", c.in, x, err)
		}
	}
}
