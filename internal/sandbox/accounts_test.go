package sandbox

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeGrants: the README's privileges are exactly the ones tests run
// binlane with.
func TestReadmeGrants(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	acct := "'binlane'@'%'"
	var want []string
	want = append(want, SourceGrants(acct, "shop")...)
	want = append(want, TargetGrants(acct, "shop")...)
	want = append(want, TargetOptionalGrants(acct)...)
	want = append(want, CutoverGrants(acct, "shop")...)
	want = append(want, VerifyGrants(acct, "shop")...)
	for _, g := range want {
		if !strings.Contains(readme, g+";") {
			t.Errorf("README.md lacks %q", g+";")
		}
	}
}
