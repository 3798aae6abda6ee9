package binlog

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestEventKindsComplete: every type of this package named *Event (but
// Event itself) is an event kind the decoder makes, and is listed by
// EventKinds, as is TableMap.
func TestEventKindsComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, k := range EventKinds() {
		listed[reflect.TypeOf(k).Elem().Name()] = true
	}
	if !listed["TableMap"] {
		t.Error("TableMap is not listed")
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for name, obj := range f.Scope.Objects {
			if obj.Kind == ast.Typ && strings.HasSuffix(name, "Event") && name != "Event" && ast.IsExported(name) && !listed[name] {
				t.Errorf("%s (%s) is not in EventKinds", name, e.Name())
			}
		}
	}
}
