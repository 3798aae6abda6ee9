package filter

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		name            string
		dbs, tbls, excl []string
		schema, table   string
		want            bool
	}{
		{"everything", nil, nil, nil, "app", "t", true},
		{"system schema", nil, nil, nil, "mysql", "user", false},
		{"own state", nil, nil, nil, "binlane", "streams", false},
		{"database listed", []string{"app,shop"}, nil, nil, "shop", "orders", true},
		{"database not listed", []string{"app"}, nil, nil, "shop", "orders", false},
		{"table listed", nil, []string{"shop.orders"}, nil, "shop", "orders", true},
		{"other table", nil, []string{"shop.orders"}, nil, "shop", "items", false},
		{"wildcard", nil, []string{"shop.order_*"}, nil, "shop", "order_2024", true},
		{"exclude table", []string{"shop"}, nil, []string{"shop.tmp_*"}, "shop", "tmp_x", false},
		{"exclude schema", nil, nil, []string{"scratch"}, "scratch", "t", false},
		{"case sensitive", []string{"App"}, nil, nil, "app", "t", false},
	}
	for _, c := range cases {
		r, err := New(c.dbs, c.tbls, c.excl)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := r.Match(c.schema, c.table); got != c.want {
			t.Errorf("%s: Match(%s.%s) = %v, want %v", c.name, c.schema, c.table, got, c.want)
		}
	}
}

func TestMatchSchema(t *testing.T) {
	r, _ := New(nil, []string{"shop.orders"}, nil)
	if !r.MatchSchema("shop") || r.MatchSchema("app") {
		t.Fatal("MatchSchema wrong for a table rule")
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(nil, []string{"orders"}, nil); err == nil {
		t.Fatal("table without schema accepted")
	}
	if _, err := New([]string{"[a"}, nil, nil); err == nil {
		t.Fatal("bad pattern accepted")
	}
}
