// Package binlogtest lets the tests of binlog's consumers check that they
// answer every kind of event the decoder makes (binlog.EventKinds).
//
// It owns that check only. It is for tests: production code must never
// import it (it reads Go source files).
package binlogtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"testing"

	"github.com/binlane/binlane/internal/binlog"
)

// RequireAnswered fails t unless the type switches in function fn of the
// Go file have a case for every event kind (see Unanswered).
func RequireAnswered(t testing.TB, file, fn string) {
	t.Helper()
	missing, err := Unanswered(file, fn)
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%s: %s has no case for %v", file, fn, missing)
	}
}

// Unanswered returns the event kinds that no case of the type switches in
// function (or method) fn of the Go file names: the kinds that would fall
// through to the switch's default, or past it. A case names a kind as
// *binlog.Kind. It fails if fn has no type switch on a binlog type.
func Unanswered(file, fn string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	var body *ast.BlockStmt
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == fn {
			body = fd.Body
		}
	}
	if body == nil {
		return nil, fmt.Errorf("%s: no function %s", file, fn)
	}
	cased := casedKinds(body)
	if len(cased) == 0 {
		return nil, fmt.Errorf("%s: %s has no type switch on binlog's events", file, fn)
	}
	var missing []string
	for _, k := range binlog.EventKinds() {
		if name := reflect.TypeOf(k).Elem().Name(); !cased[name] {
			missing = append(missing, name)
		}
	}
	return missing, nil
}

// casedKinds collects the binlog types the type switches in body name.
func casedKinds(body *ast.BlockStmt) map[string]bool {
	cased := map[string]bool{}
	ast.Inspect(body, func(n ast.Node) bool {
		sw, ok := n.(*ast.TypeSwitchStmt)
		if !ok {
			return true
		}
		for _, c := range sw.Body.List {
			for _, e := range c.(*ast.CaseClause).List {
				star, ok := e.(*ast.StarExpr)
				if !ok {
					continue
				}
				if sel, ok := star.X.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "binlog" {
						cased[sel.Sel.Name] = true
					}
				}
			}
		}
		return true
	})
	return cased
}
