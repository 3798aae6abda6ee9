package throttle

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/binlane/binlane/internal/dsn"
)

func TestDecide(t *testing.T) {
	down := errors.New("connection refused")
	cases := []struct {
		name       string
		maxThreads int
		maxLag     time.Duration
		m          measures
		want       string // "" or a piece of the reason
	}{
		{"no limits", 0, 0, measures{threadsErr: down}, ""},
		{"threads under", 10, 0, measures{threads: 10}, ""},
		{"threads over", 10, 0, measures{threads: 11}, "source Threads_running 11 > 10"},
		{"threads unreadable", 10, 0, measures{threadsErr: down}, "source Threads_running unreadable (limit 10): connection refused"},
		{"lag under", 0, 5 * time.Second, measures{replicas: []replicaLag{{name: "r1", lag: 5 * time.Second}}}, ""},
		{"lag over", 0, 5 * time.Second, measures{replicas: []replicaLag{{name: "r1"}, {name: "r2", lag: 6 * time.Second}}},
			"replica r2 is 6s behind (> 5s)"},
		{"lag unknown", 0, 5 * time.Second, measures{replicas: []replicaLag{{name: "r1", err: errLagUnknown}}},
			"replica r1: lag unreadable (limit 5s): lag unknown"},
		{"replica down", 0, time.Second, measures{replicas: []replicaLag{{name: "r1", err: down}}}, "connection refused"},
		{"lag limit without replicas", 0, time.Second, measures{}, "no replica to watch"},
		{"threads first", 1, time.Second, measures{threads: 5, replicas: []replicaLag{{name: "r1", err: down}}}, "Threads_running 5 > 1"},
	}
	for _, c := range cases {
		got := decide(c.maxThreads, c.maxLag, c.m)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestLagOfRows(t *testing.T) {
	s := func(v string) *string { return &v }
	master := []string{"Connection_name", "Seconds_Behind_Master"}
	source := []string{"Replica_IO_State", "Seconds_Behind_Source"}
	cases := []struct {
		name    string
		cols    []string
		rows    [][]*string
		lag     time.Duration
		wantErr string
	}{
		{"MariaDB, two connections", master, [][]*string{{s(""), s("3")}, {s("b"), s("7")}}, 7 * time.Second, ""},
		{"MySQL 8.0.22+", source, [][]*string{{s("Waiting"), s("0")}}, 0, ""},
		{"NULL is unknown", master, [][]*string{{s(""), s("1")}, {s("b"), nil}}, 0, "Seconds_Behind_Master is NULL"},
		{"not a replica", master, nil, 0, "not a replica"},
		{"no lag column", []string{"x"}, nil, 0, "no Seconds_Behind_Master column"},
	}
	for _, c := range cases {
		lag, err := lagOfRows(c.cols, c.rows)
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.wantErr)
		case c.wantErr == "" && (err != nil || lag != c.lag):
			t.Errorf("%s: %s, %v; want %s", c.name, lag, err, c.lag)
		}
		if strings.Contains(c.wantErr, "NULL") && !errors.Is(err, errLagUnknown) {
			t.Errorf("%s: %v is not errLagUnknown", c.name, err)
		}
	}
}

func TestStatusQueries(t *testing.T) {
	if q := statusQueries(dsn.ServerOf("10.11.6-MariaDB-0+deb12u1-log")); q[0] != "SHOW ALL SLAVES STATUS" {
		t.Errorf("MariaDB: %v", q)
	}
	if q := statusQueries(dsn.ServerOf("8.0.36")); q[0] != "SHOW REPLICA STATUS" || q[1] != "SHOW SLAVE STATUS" {
		t.Errorf("MySQL: %v", q)
	}
	if q, err := heartbeatQuery("percona.heartbeat"); err != nil || !strings.Contains(q, "FROM `percona`.`heartbeat`") {
		t.Errorf("heartbeat query %q %v", q, err)
	}
	for _, bad := range []string{"heartbeat", "a.", "a`b.c"} {
		if _, err := heartbeatQuery(bad); err == nil {
			t.Errorf("heartbeat table %q accepted", bad)
		}
	}
}
