package main

import "testing"

// TestParseNative: the replica configurations --native names, with +live
// for a replica that fetches as it applies.
func TestParseNative(t *testing.T) {
	for _, tc := range []struct {
		in      string
		mode    string
		threads int
		live    bool
	}{
		{"serial", "none", 0, false},
		{"serial+live", "none", 0, true},
		{"optimistic:4", "optimistic", 4, false},
		{"optimistic:8+live", "optimistic", 8, true},
		{"conservative:16", "conservative", 16, false},
	} {
		mode, threads, live := parseNative(tc.in)
		if mode != tc.mode || threads != tc.threads || live != tc.live {
			t.Errorf("parseNative(%q) = %q, %d, %v; want %q, %d, %v", tc.in, mode, threads, live, tc.mode, tc.threads, tc.live)
		}
	}
}
